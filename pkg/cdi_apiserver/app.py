"""cdi-apiserver's process: the signing key, the front proxy's trust, and the token API and the DataVolume
webhook over TLS.

At start the signing key is read from (or stored into) its Secret and the front proxy's identity from
``kube-system/extension-apiserver-authentication``; then the API is served on port 8443 until SIGTERM or
SIGINT. The serving certificate follows its files, and the front proxy's CA and names are read again
every ``trust_refresh_interval`` seconds, so rotations of either need no restart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import rsa

from kubevirt.cdi.cloneauth import ClusterAccess
from kubevirt.cdi_apiserver import datavolume_mutate
from kubevirt.cdi_apiserver.authorizer import TokenAuthorizer
from kubevirt.cdi_apiserver.server import UploadTokenAPI, application
from kubevirt.cdi_apiserver.signing_key import SigningKeyError, get_or_create_signing_key
from kubevirt.client import ApiError, KubeClient, install_namespace
from kubevirt.log import get_logger
from kubevirt.service.aggregation.authorizer import review_poster
from kubevirt.service.aggregation.front_proxy import FrontProxyFollower
from kubevirt.service.serving import EXIT_CANNOT_START, EXIT_FAILED, Listening, listen, run_until_signalled
from kubevirt.service.startup import cluster_client, tls_files_present
from kubevirt.service.tls import ReloadingCertificate
from kubevirt_api.cdi.constants import Upload

COMPONENT = Upload.APISERVER
# Where CDI's deployment mounts the cdi-apiserver-server-cert Secret (CDI's CERT_FILE/KEY_FILE defaults).
CERT_DIR = Path("/var/run/certs/cdi-apiserver-server-cert")
PORT = 8443


@dataclass(frozen=True, kw_only=True)
class Options:
    listen: str = "0.0.0.0"
    port: int = PORT
    tls_cert_file: Path = CERT_DIR / "tls.crt"
    tls_key_file: Path = CERT_DIR / "tls.key"
    kubeconfig: str | None = None
    # Where the signing key Secret lives; the pod's own namespace when None.
    namespace: str | None = None
    installer_labels: Mapping[str, str] = field(default_factory=dict)
    cert_reload_interval: float = 2.0
    trust_refresh_interval: float = 10.0


class Serving:
    """A listening token API: its port, and how to stop it (the trust's refresh, then the listener)."""

    def __init__(self, listening: Listening, follower: asyncio.Task[None]) -> None:
        self._listening = listening
        self._follower = follower

    @property
    def port(self) -> int:
        return self._listening.port

    async def close(self) -> None:
        self._follower.cancel()
        await asyncio.gather(self._follower, return_exceptions=True)
        await self._listening.close()


async def serve(options: Options, client: KubeClient, signing_key: rsa.RSAPrivateKey) -> Serving:
    """Starts serving; the front proxy's trust is read once before the first request is taken."""
    certificate = ReloadingCertificate(
        options.tls_cert_file, options.tls_key_file, interval=options.cert_reload_interval
    )
    follower = FrontProxyFollower(client, certificate.trust_client_ca)
    await asyncio.to_thread(follower.refresh)
    authorizer = TokenAuthorizer(review_poster(client))
    mutator = datavolume_mutate.DataVolumeMutator(signing_key, ClusterAccess.over(client))
    webhooks = {datavolume_mutate.PATH: mutator.admit}
    app = application(UploadTokenAPI(signing_key), authorizer, lambda: follower.current, webhooks=webhooks)
    listening = await listen(app, certificate, options.listen, options.port)
    task = asyncio.get_running_loop().create_task(follower.follow(options.trust_refresh_interval))
    return Serving(listening, task)


def run(options: Options) -> int:
    """Serve until SIGTERM or SIGINT. Returns the process exit code."""
    log = get_logger()
    if not tls_files_present(options.tls_cert_file, options.tls_key_file):
        return EXIT_CANNOT_START
    client = cluster_client(options.kubeconfig, COMPONENT)
    if client is None:
        return EXIT_CANNOT_START
    namespace = install_namespace(options.namespace)
    try:
        signing_key = get_or_create_signing_key(client, namespace, options.installer_labels)
    except (ApiError, SigningKeyError) as err:
        log.error("Error getting/creating signing key", namespace=namespace, reason=str(err))
        return EXIT_FAILED
    return run_until_signalled(COMPONENT, lambda stop: serve_until(stop, options, client, signing_key))


async def serve_until(
    stop: asyncio.Event, options: Options, client: KubeClient, signing_key: rsa.RSAPrivateKey
) -> None:
    """Serves until ``stop`` is set."""
    serving = await serve(options, client, signing_key)
    get_logger().info("cdi-apiserver serving", address=options.listen, port=serving.port)
    try:
        await stop.wait()
    finally:
        get_logger().info("cdi-apiserver stopping")
        await serving.close()
