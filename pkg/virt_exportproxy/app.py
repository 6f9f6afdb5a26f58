"""virt-exportproxy's process: what runs once the flags are parsed.

Informers follow the exports (every namespace), the ``kubevirt-export-ca`` ConfigMap and the KubeVirt CR
(for ``tlsConfiguration``) in the install namespace; serving starts once their caches are synced, as in
KubeVirt. The serving certificate is re-read from its files when they change.
"""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from aiohttp.abc import AbstractResolver

from kubevirt.client import CONFIG_MAPS, install_namespace
from kubevirt.client.resources import VIRTUAL_MACHINE_EXPORTS
from kubevirt.controller import SharedInformerFactory, key_for
from kubevirt.controller.informer import ListWatcher
from kubevirt.log import get_logger
from kubevirt.service.certs import EXPORT_CA_CONFIG_MAP
from kubevirt.service.startup import cluster_client, tls_files_present
from kubevirt.service.tls import ReloadingCertificate
from kubevirt.virt_config.follower import ConfigFollower
from kubevirt.virt_exportproxy.proxy import BACKEND_PORT, BackendTrust, ExportProxy
from kubevirt_api.export.v1beta1.types import VirtualMachineExport

COMPONENT = "virt-exportproxy"
CERT_DIR = Path("/etc/virt-exportproxy/certificates")
# Exit codes: 0 stopped by a signal, 1 failed while running, 2 cannot start.
EXIT_FAILED = 1
EXIT_CANNOT_START = 2
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


class Listening:
    """A serving proxy: its port, and how to stop it (the listener, then the certificate's watch)."""

    def __init__(self, runner: web.AppRunner, certificate: ReloadingCertificate) -> None:
        self._runner = runner
        self._certificate = certificate

    @property
    def port(self) -> int:
        return int(self._runner.addresses[0][1])

    async def close(self) -> None:
        await self._certificate.stop()
        await self._runner.cleanup()


async def listen(proxy: ExportProxy, certificate: ReloadingCertificate, host: str, port: int) -> Listening:
    """Serves ``proxy`` over TLS on ``host:port`` (0 picks a free port) until :meth:`Listening.close`;
    the certificate follows its files meanwhile."""
    runner = web.AppRunner(proxy.application(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=certificate.server_context, reuse_address=True)
    await site.start()
    certificate.start()
    return Listening(runner, certificate)


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
        listening = await self.listen()
        try:
            await stop.wait()
        finally:
            await listening.close()


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
        asyncio.run(_serve_until_signalled(app))
    except OSError as err:
        log.error("virt-exportproxy cannot serve", reason=str(err))
        return EXIT_FAILED
    finally:
        app.stop()
    return 0


async def _serve_until_signalled(app: ExportProxyApp) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await app.serve(stop)
