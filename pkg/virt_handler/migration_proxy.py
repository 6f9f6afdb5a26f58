"""Migration proxies: byte pipes between the source launcher's unix sockets and the target launcher's.

On the source node virt-handler listens on unix sockets in the source pod's ``migrationproxy``
directory (libvirt's peer-to-peer connection, and QEMU's direct migration stream for port 49152) and
forwards each connection over TCP to the target node's handler. There the target listener forwards it
to the target pod's libvirt socket or to the socket QEMU listens on for the incoming stream. With TLS
contexts given, the TCP leg is TLS (both handlers present the certificate their CA signed).

One asyncio loop in a thread carries every pipe: TLS needs one owner per connection, which asyncio
gives without a thread per direction.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import ssl
import stat
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from kubevirt.log import get_logger
from kubevirt.podroot import PodRoot

T = TypeVar("T")
# The target's libvirt connection is published under this port key, QEMU's stream under its own port.
LIBVIRT_PORT_KEY = "0"
CHUNK = 256 * 1024
Opener = Callable[[], socket.socket]


class MigrationProxyError(Exception):
    """A proxy could not be set up (a socket path in the pod is unsafe or a listener failed)."""


def _in_dir(root: PodRoot, directory: str, name: str, use: Callable[[str], T]) -> T:
    """Runs ``use`` on a path naming ``name`` inside ``directory`` of the pod, resolved in the pod's
    root without following any link out of it (through the directory's descriptor)."""
    if "/" in name or name in ("", ".", ".."):
        raise MigrationProxyError(f"{name!r}: not a plain file name")
    try:
        fd = root.open_directory(directory)
    except OSError as err:
        raise MigrationProxyError(f"{directory}: {err}") from err
    try:
        return use(f"/proc/self/fd/{fd}/{name}")
    finally:
        os.close(fd)


def bind_unix_in_pod(root: PodRoot, directory: str, name: str) -> socket.socket:
    """A listening unix socket at ``directory/name`` in the pod (a stale socket there is replaced)."""

    def bind(path: str) -> socket.socket:
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                raise MigrationProxyError(f"{directory}/{name}: exists and is not a socket")
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(path)
            listener.listen(16)
        except OSError as err:
            listener.close()
            raise MigrationProxyError(f"{directory}/{name}: {err}") from err
        return listener

    return _in_dir(root, directory, name, bind)


def unix_opener(root: PodRoot, directory: str, name: str) -> Opener:
    """Connects, each time it is called, to the socket ``directory/name`` in the pod."""

    def open_() -> socket.socket:
        def connect(path: str) -> socket.socket:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                raise MigrationProxyError(f"{directory}/{name}: not a socket")
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                conn.connect(path)
            except OSError:
                conn.close()
                raise
            return conn

        return _in_dir(root, directory, name, connect)

    return open_


class ProxyManager:
    """Source and target proxies per migration key (the VMI's UID), on one event loop."""

    def __init__(
        self,
        *,
        listen_address: str,
        server_tls: ssl.SSLContext | None = None,
        client_tls: ssl.SSLContext | None = None,
    ) -> None:
        self._address = listen_address
        self._server_tls = server_tls
        self._client_tls = client_tls
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="migration-proxy", daemon=True)
        self._thread.start()
        self._servers: dict[str, list[asyncio.AbstractServer]] = {}
        self._target_ports: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()
        self._log = get_logger(component="migration-proxy")

    def _run(self, coroutine: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(30)

    # -- target ----------------------------------------------------------------------------------

    def target_ports(self, key: str) -> dict[str, int]:
        """``targetDirectMigrationNodePorts`` of a started target listener: node port -> pod port."""
        with self._lock:
            return dict(self._target_ports.get(key, {}))

    def start_target(self, key: str, destinations: dict[int, Opener]) -> dict[str, int]:
        """TCP listeners, one per destination (keyed by the pod port it stands for: 0 for libvirt)."""
        with self._lock:
            if key in self._target_ports:
                return dict(self._target_ports[key])
        servers: list[asyncio.AbstractServer] = []
        ports: dict[str, int] = {}
        for pod_port, opener in destinations.items():
            server = self._run(self._serve_tcp(opener))
            servers.append(server)
            ports[str(server.sockets[0].getsockname()[1])] = pod_port
        with self._lock:
            self._servers[key] = servers
            self._target_ports[key] = ports
        self._log.info("migration target listening", key=key, address=self._address, ports=ports)
        return dict(ports)

    async def _serve_tcp(self, opener: Opener) -> asyncio.AbstractServer:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                inner = await asyncio.to_thread(opener)
                inner_reader, inner_writer = await asyncio.open_connection(sock=inner)
            except (OSError, MigrationProxyError) as err:
                self._log.warning("migration target cannot reach the pod", reason=str(err))
                writer.close()
                return
            await _pipe(reader, writer, inner_reader, inner_writer)

        return await asyncio.start_server(accepted, self._address, 0, ssl=self._server_tls)

    # -- source ----------------------------------------------------------------------------------

    def start_source(self, key: str, listeners: list[tuple[socket.socket, str, int]]) -> None:
        """Forwards connections on each bound unix listener to ``host:port`` of the target node."""
        with self._lock:
            if key in self._servers:
                for listener, _, _ in listeners:
                    listener.close()
                return
        servers = [self._run(self._serve_unix(listener, host, port)) for listener, host, port in listeners]
        with self._lock:
            self._servers[key] = servers
        self._log.info("migration source proxy started", key=key, to=[(h, p) for _, h, p in listeners])

    async def _serve_unix(self, listener: socket.socket, host: str, port: int) -> asyncio.AbstractServer:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                outer_reader, outer_writer = await asyncio.open_connection(
                    host, port, ssl=self._client_tls, server_hostname="" if self._client_tls else None
                )
            except (OSError, ssl.SSLError) as err:
                self._log.warning("migration source cannot reach the target", reason=str(err))
                writer.close()
                return
            await _pipe(reader, writer, outer_reader, outer_writer)

        return await asyncio.start_unix_server(accepted, sock=listener)

    # -- both ------------------------------------------------------------------------------------

    def running(self, key: str) -> bool:
        with self._lock:
            return key in self._servers

    def stop(self, key: str) -> None:
        with self._lock:
            servers = self._servers.pop(key, [])
            self._target_ports.pop(key, None)
        for server in servers:
            self._loop.call_soon_threadsafe(server.close)
        if servers:
            self._log.info("migration proxy stopped", key=key)

    def shut_down(self) -> None:
        with self._lock:
            keys = list(self._servers)
        for key in keys:
            self.stop(key)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


async def _pipe(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    other_reader: asyncio.StreamReader,
    other_writer: asyncio.StreamWriter,
) -> None:
    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(CHUNK):
                sink.write(data)
                await sink.drain()
            if sink.can_write_eof():
                sink.write_eof()
        except (OSError, ssl.SSLError):
            pass

    try:
        await asyncio.gather(copy(reader, other_writer), copy(other_reader, writer))
    finally:
        for stream in (writer, other_writer):
            stream.close()
