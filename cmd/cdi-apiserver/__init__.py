"""Entrypoint of cdi-apiserver: the project's upload token API (CDI's cdi-apiserver, without webhooks)."""

import os
import sys
from pathlib import Path

import click

from kubevirt.cdi_apiserver import app
from kubevirt.cdi_apiserver.signing_key import installer_labels
from kubevirt.service import binary
from kubevirt.service.durations import POSITIVE_DURATION

# CDI's variables for the serving certificate's files.
CERT_FILE_ENV = "CERT_FILE"
KEY_FILE_ENV = "KEY_FILE"


@click.option(
    "--kubeconfig",
    default=lambda: os.environ.get("KUBECONFIG") or None,
    help="Kubeconfig file (default: $KUBECONFIG); in a pod the service account is used.",
)
@click.option(
    "--namespace", default=None, help="Namespace of the signing key Secret (default: the pod's own)."
)
@click.option("--listen", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=app.PORT, show_default=True, type=click.IntRange(0, 65535), help="HTTPS port."
)
@click.option(
    "--tls-cert-file",
    default=lambda: os.environ.get(CERT_FILE_ENV) or str(app.CERT_DIR / "tls.crt"),
    type=click.Path(path_type=Path),
    help=f"Serving certificate (default: ${CERT_FILE_ENV}, else {app.CERT_DIR / 'tls.crt'}).",
)
@click.option(
    "--tls-key-file",
    default=lambda: os.environ.get(KEY_FILE_ENV) or str(app.CERT_DIR / "tls.key"),
    type=click.Path(path_type=Path),
    help=f"Key of the serving certificate (default: ${KEY_FILE_ENV}, else {app.CERT_DIR / 'tls.key'}).",
)
@click.option(
    "--cert-reload-interval",
    default=2.0,
    show_default=True,
    type=POSITIVE_DURATION,
    help="Time between looks at the certificate files (seconds, or a duration such as 2s).",
)
@binary("cdi-apiserver", "Serves upload.cdi.kubevirt.io UploadTokenRequests to the aggregation layer.")
def main(
    kubeconfig: str | None,
    namespace: str | None,
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
        namespace=namespace,
        installer_labels=installer_labels(os.environ),
        cert_reload_interval=cert_reload_interval,
    )
    sys.exit(app.run(options))
