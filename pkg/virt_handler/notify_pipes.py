"""The ``domain-notify-pipe.sock`` in each launcher pod, relaying to the handler's Notify socket.

A launcher cannot see the node's socket; virt-handler binds one inside the pod's share directory
(through the pod's root, resolved without following a link out of it) and copies every connection's
bytes to its own Notify socket. The socket belongs to the user the launcher runs as (the owner of its
command socket), so a non-root launcher can dial it. One asyncio loop in a thread carries all pipes.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from kubevirt.handler_launcher_com.sockets import DEFAULT_SHARE_DIR, NOTIFY_PIPE_SOCKET
from kubevirt.log import get_logger
from kubevirt.podroot import PodRoot
from kubevirt.virt_handler.migration_proxy import MigrationProxyError, bind_unix_in_pod, pipe
from kubevirt.virt_handler.pod_sockets import PodSocketError, launcher_root, launcher_socket_owner

START_TIMEOUT = 10.0
SOCKET_MODE = 0o600


class NotifyPipeError(Exception):
    """The pipe socket could not be made in the launcher's pod."""


def _give_to_launcher(root: PodRoot, launcher_socket: Path) -> None:
    """The pipe socket owned by the launcher's user, readable and writable by it alone (a link put in
    its place meanwhile is not followed)."""
    uid, gid = launcher_socket_owner(launcher_socket)
    directory = root.open_directory(str(DEFAULT_SHARE_DIR))
    try:
        os.chown(NOTIFY_PIPE_SOCKET, uid, gid, dir_fd=directory, follow_symlinks=False)
        os.chmod(NOTIFY_PIPE_SOCKET, SOCKET_MODE, dir_fd=directory, follow_symlinks=False)
    finally:
        os.close(directory)


class NotifyPipes:
    """Pipe sockets per VMI UID; ``target`` is the handler's Notify socket."""

    def __init__(self, target: Path, *, pod_root: Callable[[Path], PodRoot] = launcher_root) -> None:
        self._target = target
        self._pod_root = pod_root
        self._lock = threading.Lock()
        self._servers: dict[str, asyncio.AbstractServer] = {}
        self._connections: dict[str, set[asyncio.Task[None]]] = {}  # open relays (loop thread only)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="notify-pipes", daemon=True)
        self._thread.start()
        self._log = get_logger()

    def _run(self, coroutine: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(START_TIMEOUT)

    def running(self, uid: str) -> bool:
        with self._lock:
            return uid in self._servers

    def ensure(self, uid: str, launcher_socket: Path) -> None:
        """The pipe for the VMI ``uid`` whose launcher serves ``launcher_socket`` (once)."""
        if self.running(uid):
            return
        try:
            root = self._pod_root(launcher_socket)
            listener = bind_unix_in_pod(root, str(DEFAULT_SHARE_DIR), NOTIFY_PIPE_SOCKET)
        except (OSError, MigrationProxyError, PodSocketError) as err:
            raise NotifyPipeError(f"{DEFAULT_SHARE_DIR}/{NOTIFY_PIPE_SOCKET} in the pod: {err}") from None
        try:
            _give_to_launcher(root, launcher_socket)
        except (OSError, PodSocketError) as err:
            listener.close()
            raise NotifyPipeError(f"{DEFAULT_SHARE_DIR}/{NOTIFY_PIPE_SOCKET} in the pod: {err}") from None
        server = self._run(asyncio.start_unix_server(functools.partial(self._relay, uid), sock=listener))
        with self._lock:
            self._servers[uid] = server
        self._log.info("notify pipe serving", uid=uid)

    async def _relay(self, uid: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            connections = self._connections.setdefault(uid, set())
            connections.add(task)
            task.add_done_callback(connections.discard)
        try:
            inner_reader, inner_writer = await asyncio.open_unix_connection(str(self._target))
        except OSError as err:
            self._log.warning("notify pipe cannot reach the notify server", reason=str(err))
            writer.close()
            return
        await pipe(reader, writer, inner_reader, inner_writer)

    def stop(self, uid: str) -> None:
        with self._lock:
            server = self._servers.pop(uid, None)
        if server is not None:
            self._run(self._close(uid, server))
            self._log.info("notify pipe stopped", uid=uid)

    async def _close(self, uid: str, server: asyncio.AbstractServer) -> None:
        """Stop listening and end the open relays: a gone VMI keeps no connection."""
        server.close()
        connections = self._connections.pop(uid, set())
        for task in connections:
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)

    def shut_down(self) -> None:
        with self._lock:
            uids = list(self._servers)
        for uid in uids:
            self.stop(uid)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()
