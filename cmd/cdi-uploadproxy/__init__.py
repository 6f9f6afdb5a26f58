"""Entrypoint of cdi-uploadproxy: parse flags and environment, wire ``kubevirt.cdi_uploadproxy``'s
application, run. The environment variables are CDI's, so CDI's Deployment works unchanged."""

import os
import sys
from pathlib import Path

import click

from kubevirt.cdi_uploadproxy import app
from kubevirt.service import binary
from kubevirt.service.durations import POSITIVE_DURATION
from kubevirt_api.cdi.constants import Upload

PUBLIC_KEY_ENV = "APISERVER_PUBLIC_KEY"
_FILE = click.Path(path_type=Path)


@click.option("--kubeconfig", default=None, help="Kubeconfig file; in a pod the service account is used.")
@click.option("--listen", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=Upload.PROXY_PORT,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="HTTPS port.",
)
@click.option(
    "--namespace", default=None, help="Namespace of the CA bundle ConfigMap (default: the pod's own)."
)
@click.option(
    "--tls-cert-file",
    envvar="SERVER_CERT_FILE",
    show_envvar=True,
    default=str(app.SERVER_CERT_DIR / "tls.crt"),
    show_default=True,
    type=_FILE,
    help="Serving certificate (re-read when it changes).",
)
@click.option(
    "--tls-key-file",
    envvar="SERVER_KEY_FILE",
    show_envvar=True,
    default=str(app.SERVER_CERT_DIR / "tls.key"),
    show_default=True,
    type=_FILE,
    help="Private key of the serving certificate.",
)
@click.option(
    "--client-cert-file",
    envvar="UPLOAD_CLIENT_CERT_FILE",
    show_envvar=True,
    default=str(app.CLIENT_CERT_DIR / "tls.crt"),
    show_default=True,
    type=_FILE,
    help="Client certificate presented to upload servers (read per request).",
)
@click.option(
    "--client-key-file",
    envvar="UPLOAD_CLIENT_KEY_FILE",
    show_envvar=True,
    default=str(app.CLIENT_CERT_DIR / "tls.key"),
    show_default=True,
    type=_FILE,
    help="Private key of the client certificate.",
)
@click.option(
    "--ca-bundle-config-map",
    envvar="UPLOAD_SERVER_CA_BUNDLE_CONFIG_MAP",
    show_envvar=True,
    default=Upload.SERVER_SIGNER_BUNDLE,
    show_default=True,
    help="ConfigMap whose ca-bundle.crt signs upload servers' certificates (read per request).",
)
@click.option(
    "--cert-reload-interval",
    default=2.0,
    show_default=True,
    type=POSITIVE_DURATION,
    help="Time between looks at the serving certificate files (seconds, or a duration such as 2s).",
)
@binary(
    app.COMPONENT,
    f"CDI's upload proxy: streams token-authorized uploads to each claim's upload server "
    f"(token key from ${PUBLIC_KEY_ENV}).",
)
def main(
    kubeconfig: str | None,
    listen: str,
    port: int,
    namespace: str | None,
    tls_cert_file: Path,
    tls_key_file: Path,
    client_cert_file: Path,
    client_key_file: Path,
    ca_bundle_config_map: str,
    cert_reload_interval: float,
) -> None:
    public_key = os.environ.get(PUBLIC_KEY_ENV)
    if public_key is None:
        raise click.UsageError(f"${PUBLIC_KEY_ENV} not defined")
    options = app.Options(
        public_key_pem=public_key,
        listen=listen,
        port=port,
        tls_cert_file=tls_cert_file,
        tls_key_file=tls_key_file,
        client_cert_file=client_cert_file,
        client_key_file=client_key_file,
        ca_bundle_config_map=ca_bundle_config_map,
        kubeconfig=kubeconfig,
        namespace=namespace,
        cert_reload_interval=cert_reload_interval,
    )
    sys.exit(app.run(options))
