"""cdi-uploadproxy's process: what runs once the flags are parsed.

The serving certificate is re-read from its files when they change (CDI's cert watcher); the client
certificate and the upload servers' CA bundle are read per request (see ``backend``). The cluster's TLS
profile (CDIConfig ``tlsSecurityProfile``) is not followed: the listener takes TLS 1.2 and up with
OpenSSL's default suites.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import rsa

from kubevirt.cdi import token
from kubevirt.cdi_uploadproxy.backend import UploadServerTrust, read_bundle
from kubevirt.cdi_uploadproxy.proxy import UploadProxy
from kubevirt.client import KubeReader, install_namespace
from kubevirt.log import get_logger
from kubevirt.service.serving import EXIT_CANNOT_START, hold_until, listen, run_until_signalled
from kubevirt.service.startup import cluster_client, tls_files_present
from kubevirt.service.tls import ReloadingCertificate
from kubevirt_api.cdi.constants import Upload

COMPONENT = Upload.PROXY
SERVER_CERT_DIR = Path("/var/run/certs") / Upload.PROXY_SERVER_CERT
CLIENT_CERT_DIR = Path("/var/run/certs") / Upload.CLIENT_CERT


@dataclass(frozen=True, kw_only=True)
class Options:
    # cdi-apiserver's token verification key (PEM), from the cdi-api-signing-key Secret.
    public_key_pem: str
    listen: str = "0.0.0.0"
    port: int = Upload.PROXY_PORT
    tls_cert_file: Path = SERVER_CERT_DIR / "tls.crt"
    tls_key_file: Path = SERVER_CERT_DIR / "tls.key"
    client_cert_file: Path = CLIENT_CERT_DIR / "tls.crt"
    client_key_file: Path = CLIENT_CERT_DIR / "tls.key"
    ca_bundle_config_map: str = Upload.SERVER_SIGNER_BUNDLE
    kubeconfig: str | None = None
    # Where the CA bundle ConfigMap lives; the pod's own namespace when None.
    namespace: str | None = None
    cert_reload_interval: float = 2.0


def make_proxy(
    options: Options, api: KubeReader, namespace: str, public_key: rsa.RSAPublicKey
) -> UploadProxy:
    trust = UploadServerTrust(
        options.client_cert_file,
        options.client_key_file,
        lambda: read_bundle(api, namespace, options.ca_bundle_config_map),
    )
    return UploadProxy(api, public_key, trust)


async def serve(options: Options, proxy: UploadProxy, stop: asyncio.Event) -> None:
    certificate = ReloadingCertificate(
        options.tls_cert_file, options.tls_key_file, interval=options.cert_reload_interval
    )
    listening = await listen(proxy.application(), certificate, options.listen, options.port)
    get_logger().info("cdi-uploadproxy serving", address=options.listen, port=listening.port)
    await hold_until(stop, listening)


def run(options: Options) -> int:
    """Serve until SIGTERM or SIGINT. Returns the process exit code."""
    log = get_logger()
    if not tls_files_present(options.tls_cert_file, options.tls_key_file):
        return EXIT_CANNOT_START
    try:
        public_key = token.load_public_key(options.public_key_pem.encode())
    except (token.TokenError, ValueError) as err:
        log.error("unable to retrieve apiserver signing key", reason=str(err))
        return EXIT_CANNOT_START
    api = cluster_client(options.kubeconfig, COMPONENT)
    if api is None:
        return EXIT_CANNOT_START
    proxy = make_proxy(options, api, install_namespace(options.namespace), public_key)
    return run_until_signalled(COMPONENT, lambda stop: serve(options, proxy, stop))
