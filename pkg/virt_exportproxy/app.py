"""virt-exportproxy's process: what runs once the flags are parsed.

Informers follow the exports (every namespace), the ``kubevirt-export-ca`` ConfigMap and the KubeVirt CR
(for ``tlsConfiguration``) in the install namespace; serving starts once their caches are synced, as in
KubeVirt. The serving certificate is re-read from its files when they change.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from aiohttp.abc import AbstractResolver

from kubevirt.client import CONFIG_MAPS, install_namespace
from kubevirt.client.resources import VIRTUAL_MACHINE_EXPORTS
from kubevirt.controller import SharedInformerFactory, key_for
from kubevirt.controller.informer import ListWatcher
from kubevirt.log import get_logger
from kubevirt.service import serving
from kubevirt.service.certs import EXPORT_CA_CONFIG_MAP
from kubevirt.service.serving import EXIT_CANNOT_START, EXIT_FAILED, Listening, hold_until
from kubevirt.service.startup import cluster_client, tls_files_present
from kubevirt.service.tls import ReloadingCertificate
from kubevirt.virt_config.follower import ConfigFollower
from kubevirt.virt_exportproxy.proxy import BACKEND_PORT, BackendTrust, ExportProxy
from kubevirt_api.export.v1beta1.types import VirtualMachineExport

COMPONENT = "virt-exportproxy"
CERT_DIR = Path("/etc/virt-exportproxy/certificates")
CACHE_SYNC_TIMEOUT = 120.0


@dataclass(frozen=True, kw_only=True)
class Options:
    listen: str = "0.0.0.0"
    port: int = 8443
    tls_cert_file: Path = CERT_DIR / "tls.crt"
    tls_key_file: Path = CERT_DIR / "tls.key"
    kubeconfig: str | None = None
    # Where the export CA and the KubeVirt CR live; the pod's own namespace when None.
    namespace: str | None = None
    cert_reload_interval: float = 2.0
    cache_sync_timeout: float = CACHE_SYNC_TIMEOUT


async def listen(proxy: ExportProxy, certificate: ReloadingCertificate, host: str, port: int) -> Listening:
    """Serves ``proxy`` over TLS on ``host:port`` (0 picks a free port) until :meth:`Listening.close`."""
    return await serving.listen(proxy.application(), certificate, host, port)


class ExportProxyApp:
    """The informers and the proxy reading them."""

    def __init__(
        self,
        options: Options,
        api: ListWatcher,
        namespace: str,
        *,
        backend_port: int = BACKEND_PORT,
        resolver: AbstractResolver | None = None,
    ) -> None:
        """``backend_port`` and ``resolver`` say how export services are reached (see ExportProxy)."""
        self._options = options
        self._factory = SharedInformerFactory(api)
        self._exports = self._factory.informer(VIRTUAL_MACHINE_EXPORTS, VirtualMachineExport)
        self._ca = self._factory.informer(
            CONFIG_MAPS, namespace=namespace, field_selector=f"metadata.name={EXPORT_CA_CONFIG_MAP}"
        )
        self._config = ConfigFollower.from_informer(self._factory, namespace)
        ca_key = key_for(namespace, EXPORT_CA_CONFIG_MAP)
        trust = BackendTrust(lambda: self._ca.store.get_by_key(ca_key))
        self.proxy = ExportProxy(
            self._exports.store.get_by_key, trust, backend_port=backend_port, resolver=resolver
        )

    def start_informers(self) -> bool:
        """Starts the informers; whether their caches synced in time."""
        self._factory.start()
        return self._factory.wait_for_cache_sync(self._options.cache_sync_timeout)

    def stop(self) -> None:
        self._factory.stop()

    async def listen(self) -> Listening:
        options = self._options
        # The listener follows the cluster's tlsConfiguration, read at each handshake (KubeVirt's
        # SetupExportProxyTLS).
        certificate = ReloadingCertificate(
            options.tls_cert_file,
            options.tls_key_file,
            interval=options.cert_reload_interval,
            tls_config=lambda: self._config.current().tls,
        )
        listening = await listen(self.proxy, certificate, options.listen, options.port)
        get_logger().info("virt-exportproxy serving", address=options.listen, port=listening.port)
        return listening

    async def serve(self, stop: asyncio.Event) -> None:
        await hold_until(stop, await self.listen())


def run(options: Options) -> int:
    """Serve until SIGTERM or SIGINT. Returns the process exit code."""
    log = get_logger()
    if not tls_files_present(options.tls_cert_file, options.tls_key_file):
        return EXIT_CANNOT_START
    api = cluster_client(options.kubeconfig, COMPONENT)
    if api is None:
        return EXIT_CANNOT_START
    app = ExportProxyApp(options, api, install_namespace(options.namespace))
    try:
        if not app.start_informers():
            log.error("the caches did not sync")
            return EXIT_FAILED
        return serving.run_until_signalled(COMPONENT, app.serve)
    finally:
        app.stop()
