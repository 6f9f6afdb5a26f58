"""Migration proxies: byte pipes between the source launcher's unix sockets and the target launcher's.

On the source node virt-handler listens on unix sockets in the source pod's ``migrationproxy``
directory (libvirt's peer-to-peer connection, and QEMU's direct migration stream for port 49152) and
forwards each connection over TCP to the target node's handler. There the target listener forwards it
to the target pod's libvirt socket or to the socket QEMU listens on for the incoming stream. With TLS
contexts given, the TCP leg is mutual TLS between virt-handler identities (see :func:`tls_contexts`).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kubevirt import safepath
from kubevirt.log import get_logger
from kubevirt.podroot import PodRoot
from kubevirt.service.tls import (
    ReloadingCertificate,
    client_context,
    handler_client_identity,
    handler_server_identity,
)
from kubevirt.virt_config.tls import TLSConfiguration

T = TypeVar("T")
# The target's libvirt connection is published under this port key, QEMU's stream under its own port.
LIBVIRT_PORT_KEY = "0"
CHUNK = 256 * 1024
Opener = Callable[[], socket.socket]


class MigrationProxyError(Exception):
    """A proxy could not be set up (a socket path in the pod is unsafe or a listener failed)."""


def _in_dir(root: PodRoot, directory: str, name: str, use: Callable[[int, str], T]) -> T:
    """Runs ``use`` with a descriptor of ``directory`` in the pod and a path naming ``name`` inside it,
    resolved in the pod's root without following any link out of it (through the directory's descriptor)."""
    if "/" in name or name in ("", ".", ".."):
        raise MigrationProxyError(f"{name!r}: not a plain file name")
    try:
        fd = root.open_directory(directory)
    except OSError as err:
        raise MigrationProxyError(f"{directory}: {err}") from err
    try:
        return use(fd, f"/proc/self/fd/{fd}/{name}")
    finally:
        os.close(fd)


def bind_unix_in_pod(root: PodRoot, directory: str, name: str, *, owner: int | None = None) -> socket.socket:
    """A listening unix socket at ``directory/name`` in the pod (a stale socket there is replaced; the
    directory is made if the launcher did not make it, as KubeVirt's proxy makes it).

    With ``owner`` the socket belongs to that user and group: a non-root launcher's libvirt and QEMU
    connect as it, and connecting takes write permission on the socket.
    """
    try:
        # Searchable by all, as KubeVirt makes it: a non-root launcher reaches its sockets through it.
        root.makedirs(directory, mode=0o755)
    except OSError as err:
        raise MigrationProxyError(f"{directory}: {err}") from err

    def bind(directory_fd: int, path: str) -> socket.socket:
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                raise MigrationProxyError(f"{directory}/{name}: exists and is not a socket")
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(path)
            if owner is not None:
                # Relative to the directory's descriptor, and a link put in the socket's place meanwhile
                # is changed itself, never followed.
                os.chown(name, owner, owner, dir_fd=directory_fd, follow_symlinks=False)
            listener.listen(16)
        except OSError as err:
            listener.close()
            raise MigrationProxyError(f"{directory}/{name}: {err}") from err
        return listener

    return _in_dir(root, directory, name, bind)


def unix_opener(root: PodRoot, directory: str, name: str) -> Opener:
    """Connects, each time it is called, to the socket ``directory/name`` in the pod: the socket itself
    opened without following a link (one put there since the last call is refused, never dialled)."""

    def open_() -> socket.socket:
        try:
            fd = root.open_directory(directory)
        except OSError as err:
            raise MigrationProxyError(f"{directory}: {err}") from err
        try:
            return safepath.connect_socket(fd, name)
        except safepath.UnsafePathError as err:
            raise MigrationProxyError(f"{directory}/{name}: {err.strerror}") from None
        finally:
            os.close(fd)

    return open_


@dataclass(frozen=True)
class TLSContexts:
    server: ssl.SSLContext
    client: ssl.SSLContext


def tls_contexts(
    *,
    cert_file: Path,
    key_file: Path,
    client_cert_file: Path,
    client_key_file: Path,
    ca_bundle: str,
    tls_config: Callable[[], TLSConfiguration] = TLSConfiguration,
    externally_managed: bool = False,
) -> TLSContexts:
    """Mutual TLS between two nodes' handlers, as KubeVirt's: each side proves a certificate the cluster
    CA signed for virt-handler. The CA signs every component's certificate, so the target takes only
    virt-handler's client identity and the source only virt-handler's serving identity (any name when
    certificates are externally managed). Peers are addressed by IP, which no certificate names.

    The target listener follows ``tls_config`` (the cluster's ``tlsConfiguration``) per connection.
    """
    server = ReloadingCertificate(
        cert_file,
        key_file,
        require_client_cert=True,
        tls_config=tls_config,
        peer=handler_client_identity(externally_managed=externally_managed),
    )
    server.trust_client_ca(ca_bundle)
    client = client_context(
        ca_bundle,
        cert=(client_cert_file, client_key_file),
        peer=handler_server_identity(externally_managed=externally_managed),
    )
    return TLSContexts(server.server_context, client)


class ProxyManager:
    """Source and target proxies per migration key (the VMI's UID), on one event loop.

    ``tls`` is asked for the contexts each time a proxy starts (certificates and CA may rotate);
    None from it means plain TCP.
    """

    def __init__(self, *, listen_address: str, tls: Callable[[], TLSContexts | None] | None = None) -> None:
        self._address = listen_address
        self._tls = tls or (lambda: None)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="migration-proxy", daemon=True)
        self._thread.start()
        self._servers: dict[str, list[asyncio.AbstractServer]] = {}
        self._pipes: dict[str, set[asyncio.Task[None]]] = {}  # open connections per key (loop thread only)
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
        tls = self._tls()
        for pod_port, opener in destinations.items():
            server = self._run(self._serve_tcp(key, opener, tls.server if tls else None))
            servers.append(server)
            ports[str(server.sockets[0].getsockname()[1])] = pod_port
        with self._lock:
            self._servers[key] = servers
            self._target_ports[key] = ports
        self._log.info("migration target listening", key=key, address=self._address, ports=ports)
        return dict(ports)

    async def _serve_tcp(
        self, key: str, opener: Opener, tls: ssl.SSLContext | None
    ) -> asyncio.AbstractServer:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self._track(key)
            try:
                inner = await asyncio.to_thread(opener)
                inner_reader, inner_writer = await asyncio.open_connection(sock=inner)
            except (OSError, MigrationProxyError) as err:
                self._log.warning("migration target cannot reach the pod", reason=str(err))
                writer.close()
                return
            await pipe(reader, writer, inner_reader, inner_writer)

        return await asyncio.start_server(accepted, self._address, 0, ssl=tls)

    # -- source ----------------------------------------------------------------------------------

    def start_source(self, key: str, listeners: list[tuple[socket.socket, str, int]]) -> None:
        """Forwards connections on each bound unix listener to ``host:port`` of the target node."""
        with self._lock:
            if key in self._servers:
                for listener, _, _ in listeners:
                    listener.close()
                return
        tls = self._tls()
        client = tls.client if tls else None
        servers = [
            self._run(self._serve_unix(key, listener, host, port, client))
            for listener, host, port in listeners
        ]
        with self._lock:
            self._servers[key] = servers
        self._log.info("migration source proxy started", key=key, to=[(h, p) for _, h, p in listeners])

    async def _serve_unix(
        self, key: str, listener: socket.socket, host: str, port: int, tls: ssl.SSLContext | None
    ) -> asyncio.AbstractServer:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self._track(key)
            try:
                outer_reader, outer_writer = await asyncio.open_connection(
                    host, port, ssl=tls, server_hostname="" if tls else None
                )
            except (OSError, ssl.SSLError) as err:
                self._log.warning("migration source cannot reach the target", reason=str(err))
                writer.close()
                return
            await pipe(reader, writer, outer_reader, outer_writer)

        return await asyncio.start_unix_server(accepted, sock=listener)

    # -- both ------------------------------------------------------------------------------------

    def running(self, key: str) -> bool:
        with self._lock:
            return key in self._servers

    def _track(self, key: str) -> None:
        task = asyncio.current_task()
        if task is not None:
            pipes = self._pipes.setdefault(key, set())
            pipes.add(task)
            task.add_done_callback(pipes.discard)

    async def _close(self, key: str, servers: list[asyncio.AbstractServer]) -> None:
        """Stop listening and end the open connections: a finished migration keeps no pipe."""
        for server in servers:
            server.close()
        pipes = self._pipes.pop(key, set())
        for task in pipes:
            task.cancel()
        await asyncio.gather(*pipes, return_exceptions=True)

    def stop(self, key: str) -> None:
        with self._lock:
            servers = self._servers.pop(key, [])
            self._target_ports.pop(key, None)
        if servers:
            self._run(self._close(key, servers))
            self._log.info("migration proxy stopped", key=key)

    def shut_down(self) -> None:
        with self._lock:
            keys = list(self._servers)
        for key in keys:
            self.stop(key)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


async def pipe(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    other_reader: asyncio.StreamReader,
    other_writer: asyncio.StreamWriter,
) -> None:
    """Copies bytes both ways until each side has ended, then closes both."""

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


@dataclass(frozen=True)
class TLSFiles:
    """The handler's server certificate (target listeners) and client certificate (source proxies)."""

    cert_file: Path
    key_file: Path
    client_cert_file: Path
    client_key_file: Path


class TLSProvider:
    """Contexts from the handler's certificate files and the cluster CA, read when a proxy starts.

    virt-operator rotates the certificates (the Secret volumes change under the running pod) and the CA
    bundle: contexts are rebuilt whenever a file's modification time or the bundle differs from what the
    last ones were built from, so each migration starts with the current pair. A rotation caught half
    written (a certificate that does not match its key yet) keeps the last good contexts.

    ``disabled`` is the cluster's ``migrations.disableTLS``, the only way to plain TCP: a handler missing
    its certificates or the CA refuses to migrate rather than send guest memory unprotected.
    """

    def __init__(
        self,
        files: TLSFiles,
        ca_bundle: Callable[[], str | None],
        disabled: Callable[[], bool],
        *,
        tls_config: Callable[[], TLSConfiguration] = TLSConfiguration,
        externally_managed: bool = False,
    ) -> None:
        self._files = files
        self._ca_bundle = ca_bundle
        self._disabled = disabled
        self._tls_config = tls_config
        self._externally_managed = externally_managed
        self._lock = threading.Lock()
        self._built: tuple[tuple[int, ...], str, TLSContexts] | None = None
        self._log = get_logger(component="migration-proxy")

    def __call__(self) -> TLSContexts | None:
        if self._disabled():
            return None
        files = self._files
        paths = (files.cert_file, files.key_file, files.client_cert_file, files.client_key_file)
        missing = [str(path) for path in paths if not path.is_file()]
        bundle = self._ca_bundle()
        if missing or not bundle:
            what = ", ".join(missing) if missing else "the CA bundle"
            raise MigrationProxyError(
                f"migration TLS: {what} missing (set migrations.disableTLS for plain TCP)"
            )
        with self._lock:
            try:
                stamp = tuple(path.stat().st_mtime_ns for path in paths)
            except OSError as err:  # replaced between the two looks: build from what is there now
                stamp = ()
                self._log.info("certificate files changing", reason=str(err))
            if self._built is not None and stamp and self._built[:2] == (stamp, bundle):
                return self._built[2]
            try:
                contexts = tls_contexts(
                    cert_file=files.cert_file,
                    key_file=files.key_file,
                    client_cert_file=files.client_cert_file,
                    client_key_file=files.client_key_file,
                    ca_bundle=bundle,
                    tls_config=self._tls_config,
                    externally_managed=self._externally_managed,
                )
            except (OSError, ssl.SSLError) as err:
                if self._built is None:
                    raise MigrationProxyError(f"migration TLS: {err}") from err
                self._log.warning("renewed migration certificate not loadable yet", reason=str(err))
                return self._built[2]
            if self._built is not None:
                self._log.info("migration proxies use renewed certificates or CA")
            self._built = (stamp, bundle, contexts)
            return contexts
