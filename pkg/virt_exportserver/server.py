"""The export server: KubeVirt's routes for each volume and the VM's manifests, behind the token, on
HTTPS (HTTP/1.1 only, as KubeVirt disables HTTP/2), until the deadline.

At the deadline the server stops accepting connections, lets the requests in flight finish (a download
may take hours; KubeVirt waits for it too) and returns; the controller then replaces the pod, with a
fresh certificate. A volume whose contents cannot all be read stops the server before it listens.
"""

from __future__ import annotations

import asyncio
import ssl
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from kubevirt.export.paths import READINESS_PATH, VolumeInfo
from kubevirt.log import get_logger
from kubevirt.service.serving import until_signalled
from kubevirt.virt_exportserver.archive import TAR, archive_handler
from kubevirt.virt_exportserver.config import ServerConfig
from kubevirt.virt_exportserver.dirserver import dir_handler
from kubevirt.virt_exportserver.httpcompat import TEXT_PLAIN, Target, go_join
from kubevirt.virt_exportserver.images import DiskImage, gzip_handler, raw_handler
from kubevirt.virt_exportserver.manifest_data import ManifestData
from kubevirt.virt_exportserver.manifests import secret_handler, vm_handler
from kubevirt.virt_exportserver.mux import Handler, ServeMux
from kubevirt.virt_exportserver.token import TokenFile
from kubevirt.virt_exportserver.volumes import readable_volume

INTERNAL = "/internal"
EXTERNAL = "/external"
# After a stop signal (not the deadline), how long requests in flight may still run.
_STOP_GRACE_SECONDS = 5.0
# How long the bytes a finished response left in a connection's buffers may take to reach the client
# once the connection is closed; the process ending earlier would truncate the download.
_FLUSH_SECONDS = 60.0
_FLUSH_POLL_SECONDS = 0.05


class StartupError(Exception):
    """The server cannot start: a volume cannot be read, a route is given twice."""


def volume_handlers(volume: VolumeInfo, tar: str = TAR) -> dict[str, Handler]:
    """The routes of one volume (KubeVirt's ``getHandlerMap``)."""
    path = Path(volume.path)
    handlers: dict[str, Handler] = {}
    if volume.archive_uri:
        handlers[volume.archive_uri] = archive_handler(path, tar)
    if volume.dir_uri:
        handlers[volume.dir_uri] = dir_handler(volume.dir_uri, path)
    image = DiskImage.of(path)
    if volume.raw_uri:
        handlers[volume.raw_uri] = raw_handler(image)
    if volume.raw_gzip_uri:
        handlers[volume.raw_gzip_uri] = gzip_handler(image)
    return handlers


def build_mux(config: ServerConfig, tar: str = TAR) -> ServeMux:
    """Every route, the token guarding all but readiness. Raises :class:`StartupError`."""
    log = get_logger()
    token = TokenFile(config.token_file)
    volumes = config.paths.volumes
    mux = ServeMux()
    try:
        for volume in volumes:
            if not readable_volume(Path(volume.path)):
                raise StartupError(f"unable to manipulate {volume.path}'s contents")
            for pattern, handler in volume_handlers(volume, tar).items():
                log.info("handling path", path=pattern)
                mux.handle(pattern, token.guard(handler))
        data = ManifestData(config.manifest_dir)
        for prefix, internal in ((INTERNAL, True), (EXTERNAL, False)):
            if config.paths.vm_uri:
                handler = vm_handler(data, volumes, internal=internal)
                mux.handle(go_join(prefix, config.paths.vm_uri), token.guard(handler))
            if config.paths.secret_uri:
                handler = secret_handler(data, token.read)
                mux.handle(go_join(prefix, config.paths.secret_uri), token.guard(handler))
        mux.handle(READINESS_PATH, _ready)
    except ValueError as err:
        raise StartupError(str(err)) from None
    return mux


async def _ready(_request: web.Request, _target: Target) -> web.StreamResponse:
    return web.Response(text="OK", headers={"Content-Type": TEXT_PLAIN})


def tls_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """Go's server defaults: TLS 1.2 and up; only HTTP/1.1 offered."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as err:
        raise StartupError(f"cannot load the TLS certificate {cert_file} and key {key_file}: {err}") from None
    context.set_alpn_protocols(["http/1.1"])
    return context


class ExportServer:
    """Serves ``mux`` on the configured address until :meth:`shutdown`."""

    def __init__(self, config: ServerConfig, mux: ServeMux) -> None:
        self._config = config
        self._mux = mux
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._servers: list[asyncio.Server] = []

    @property
    def port(self) -> int:
        return int(self._servers[0].sockets[0].getsockname()[1])

    async def start(self) -> None:
        context = tls_context(self._config.cert_file, self._config.key_file)
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0)
        await self._runner.setup()
        if self._runner.server is None:
            raise RuntimeError("aiohttp runner has no server after setup")
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            self._runner.server, self._config.host, self._config.port, ssl=context, reuse_address=True
        )
        self._servers.append(server)
        get_logger().info("export server listening", host=self._config.host or "", port=self.port)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self._in_flight += 1
        self._idle.clear()
        try:
            response = await self._mux.dispatch(request)
            if self._closing:
                response.force_close()
            return response
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def shutdown(self, *, grace: float | None) -> None:
        """Stops listening, waits for the requests in flight (at most ``grace`` seconds; None: as long
        as they take), then closes every connection."""
        self._closing = True
        for server in self._servers:
            server.close()
        try:
            await asyncio.wait_for(self._idle.wait(), grace)
        except TimeoutError:
            get_logger().warning("requests still in flight are cut", in_flight=self._in_flight)
        if self._runner is None:
            return
        # The sockets, not the handlers: a handler forgets its transport as soon as it closes it.
        sockets = (
            [_socket_of(handler) for handler in self._runner.server.connections]
            if self._runner.server
            else []
        )
        await self._runner.cleanup()
        await _flushed([sock for sock in sockets if sock is not None], _FLUSH_SECONDS)


def _socket_of(handler: RequestHandler) -> Any:
    return handler.transport.get_extra_info("socket") if handler.transport is not None else None


async def _flushed(sockets: list[Any], timeout: float) -> None:
    """Waits until every closed connection has handed its last bytes to the kernel and closed its socket
    (asyncio drops a transport's buffer when the loop ends, and a response that returned, or TLS's
    closing records, may still sit there)."""
    try:
        async with asyncio.timeout(timeout):
            while any(sock.fileno() != -1 for sock in sockets):
                await asyncio.sleep(_FLUSH_POLL_SECONDS)
    except TimeoutError:
        still_open = sum(sock.fileno() != -1 for sock in sockets)
        get_logger().warning("connections still flushing are cut", connections=still_open)


async def serve(config: ServerConfig, stop: asyncio.Event, tar: str = TAR) -> None:
    """Serves until the deadline (then gracefully) or until ``stop`` is set."""
    log = get_logger()
    server = ExportServer(config, build_mux(config, tar))
    await server.start()
    if config.deadline is not None:
        log.info("deadline set", deadline=config.deadline.isoformat())
    try:
        await asyncio.wait_for(stop.wait(), _seconds_until(config.deadline))
    except TimeoutError:
        log.info("deadline exceeded, shutting down")
        await server.shutdown(grace=None)
        return
    log.info("stopping")
    await server.shutdown(grace=_STOP_GRACE_SECONDS)


def _seconds_until(deadline: datetime | None) -> float | None:
    if deadline is None:
        return None
    return max(0.0, (deadline - datetime.now(UTC)).total_seconds())


def run(config: ServerConfig) -> int:
    """Serves until the deadline, SIGTERM or SIGINT. Returns the process exit code."""
    log = get_logger()

    try:
        asyncio.run(until_signalled(lambda stop: serve(config, stop)))
    except StartupError as err:
        log.error("virt-exportserver cannot start", reason=str(err))
        return 1
    except (OSError, ssl.SSLError) as err:
        log.error("virt-exportserver cannot serve", reason=str(err))
        return 1
    return 0
