"""Entrypoint of virt-exportproxy: parse flags, wire ``kubevirt.virt_exportproxy``'s application, run."""

import sys
from pathlib import Path

import click

from kubevirt.service import binary
from kubevirt.service.durations import POSITIVE_DURATION
from kubevirt.virt_exportproxy import app

CERT_DIR = app.CERT_DIR


@click.option("--kubeconfig", default=None, help="Kubeconfig file; in a pod the service account is used.")
@click.option("--listen", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", default=8443, show_default=True, type=click.IntRange(0, 65535), help="HTTPS port.")
@click.option(
    "--tls-cert-file",
    default=str(CERT_DIR / "tls.crt"),
    show_default=True,
    type=click.Path(path_type=Path),
    help="File containing the default x509 Certificate for HTTPS.",
)
@click.option(
    "--tls-key-file",
    default=str(CERT_DIR / "tls.key"),
    show_default=True,
    type=click.Path(path_type=Path),
    help="File containing the default x509 private key matching --tls-cert-file.",
)
@click.option(
    "--cert-reload-interval",
    default=2.0,
    show_default=True,
    type=POSITIVE_DURATION,
    help="Time between looks at the certificate files (seconds, or a duration such as 2s).",
)
@binary("virt-exportproxy", "KubeVirt's export proxy: one HTTPS entry point to every VirtualMachineExport.")
def main(
    kubeconfig: str | None,
    listen: str,
    port: int,
    tls_cert_file: Path,
    tls_key_file: Path,
    cert_reload_interval: float,
) -> None:
    options = app.Options(
        listen=listen,
        port=port,
        tls_cert_file=tls_cert_file,
        tls_key_file=tls_key_file,
        kubeconfig=kubeconfig,
        cert_reload_interval=cert_reload_interval,
    )
    sys.exit(app.run(options))
