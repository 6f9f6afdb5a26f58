"""The streaming routes of virt-handler's console server: serial console, VNC and USB redirection.

Each upgrades virt-api's request to a websocket (subprotocol ``plain.kubevirt.io``) and relays raw bytes
between it and a unix socket QEMU listens on in the launcher pod: whatever arrives from the socket goes
out as binary messages, and every message's payload goes into the socket. Both directions are bounded:
the socket is read 32 KiB at a time, and a message of :data:`MAX_MESSAGE_BYTES` or more ends the stream
with close code 1009 (message too big) before it is read.

One serial console and one VNC session per VMI: a new one ends the one before, unless a VNC client asks
to preserve the running session, which is then refused with 503. USB redirection has four slots.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from kubevirt import pod_paths
from kubevirt.client import JSON
from kubevirt.log import get_logger
from kubevirt.virt_handler.launcher_sockets import SocketLookupError
from kubevirt.virt_handler.private_sockets import connect_private_socket
from kubevirt.virt_handler.rest.lifecycle import BAD_REQUEST, LauncherLocator, RouteError

PLAIN_SUBPROTOCOL = "plain.kubevirt.io"
READ_CHUNK = 32 * 1024
# virt-api relays what the client sent (virtctl and KubeVirt send 32 KiB at most); an unbounded message
# would be held in memory whole before it reached the socket.
MAX_MESSAGE_BYTES = 1024 * 1024
USB_SLOTS = 4
VNC_IN_USE = "Active VNC connection. Request denied."
NOT_AN_UPGRADE = "websocket: the client is not using the websocket protocol"
SERVICE_UNAVAILABLE = 503


def parse_bool(text: str | None) -> bool:
    """Go's ``strconv.ParseBool``, anything else being false (KubeVirt only logs the parse error)."""
    return (text or "") in ("1", "t", "T", "true", "TRUE", "True")


@dataclass
class Sessions:
    """The live streams, by (kind, VMI uid); ending one is setting its event."""

    active: dict[tuple[str, str], asyncio.Event] = field(default_factory=dict)

    def in_use(self, key: tuple[str, str]) -> bool:
        return key in self.active

    def take_over(self, key: tuple[str, str]) -> asyncio.Event:
        previous = self.active.pop(key, None)
        if previous is not None:
            previous.set()
        stop = asyncio.Event()
        self.active[key] = stop
        return stop

    def release(self, key: tuple[str, str], stop: asyncio.Event) -> None:
        if self.active.get(key) is stop:
            del self.active[key]


@dataclass
class ConsoleHandler:
    launchers: LauncherLocator
    sessions: Sessions = field(default_factory=Sessions)

    async def serial(self, request: web.Request, vmi: JSON) -> web.StreamResponse:
        return await self._exclusive(request, vmi, "serial", pod_paths.SERIAL_SOCKET)

    async def vnc(self, request: web.Request, vmi: JSON) -> web.StreamResponse:
        key = ("vnc", str(vmi["metadata"].get("uid") or ""))
        if self.sessions.in_use(key) and parse_bool(request.query.get("preserveSession")):
            get_logger().info("refusing VNC: a session is active and asked to be kept", name=_name(vmi))
            return web.Response(status=SERVICE_UNAVAILABLE, text=VNC_IN_USE)
        return await self._exclusive(request, vmi, "vnc", pod_paths.VNC_SOCKET)

    async def usbredir(self, request: web.Request, vmi: JSON) -> web.StreamResponse:
        uid = str(vmi["metadata"].get("uid") or "")
        free = [slot for slot in range(USB_SLOTS) if not self.sessions.in_use((f"usbredir-{slot}", uid))]
        if not free:
            return web.Response(status=SERVICE_UNAVAILABLE, text="All USB devices are in use.")
        return await self._exclusive(
            request, vmi, f"usbredir-{free[0]}", f"{pod_paths.USB_REDIRECT_SOCKET_PREFIX}{free[0]}"
        )

    async def _exclusive(
        self, request: web.Request, vmi: JSON, kind: str, socket_name: str
    ) -> web.StreamResponse:
        if not _websocket().can_prepare(request).ok:
            # Not an upgrade: refused before it could end the session in progress.
            return web.Response(
                status=BAD_REQUEST, text="websocket: the client is not using the websocket protocol"
            )
        try:
            connection = await asyncio.to_thread(self._dial, vmi, socket_name)
        except RouteError as err:
            return web.Response(status=err.code, text=err.message)
        key = (kind, str(vmi["metadata"].get("uid") or ""))
        stop = self.sessions.take_over(key)
        try:
            return await relay(request, connection, stop)
        finally:
            self.sessions.release(key, stop)

    def _dial(self, vmi: JSON, socket_name: str) -> socket.socket:
        uid = str(vmi["metadata"].get("uid") or "")
        try:
            pod = self.launchers.pod_uid(vmi)
            return connect_private_socket(self.launchers.pods_dir, pod, uid, socket_name)
        except (SocketLookupError, OSError) as err:
            get_logger().error(
                "failed to find the unix socket", name=_name(vmi), socket=socket_name, reason=str(err)
            )
            raise RouteError(BAD_REQUEST, str(err)) from None


def _name(vmi: JSON) -> str:
    return str(vmi["metadata"].get("name") or "")


def _websocket() -> web.WebSocketResponse:
    return web.WebSocketResponse(
        protocols=(PLAIN_SUBPROTOCOL,), max_msg_size=MAX_MESSAGE_BYTES, heartbeat=None
    )


async def relay(request: web.Request, connection: socket.socket, stop: asyncio.Event) -> web.StreamResponse:
    """Upgrades the request and copies bytes both ways until either side or ``stop`` ends it."""
    connection.setblocking(False)
    try:
        reader, writer = await asyncio.open_unix_connection(sock=connection)
    except OSError:
        connection.close()
        raise
    client = _websocket()
    try:
        await client.prepare(request)
        await _until_first_ends(
            _socket_to_client(reader, client), _client_to_socket(client, writer), stop.wait()
        )
    finally:
        writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await writer.wait_closed()
        await client.close()
    return client


async def _until_first_ends(*coroutines: Coroutine[Any, Any, Any]) -> None:
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                get_logger().info("stream ended", reason=str(task.exception()))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _socket_to_client(reader: asyncio.StreamReader, client: web.WebSocketResponse) -> None:
    while chunk := await reader.read(READ_CHUNK):
        await client.send_bytes(chunk)


async def _client_to_socket(client: web.WebSocketResponse, writer: asyncio.StreamWriter) -> None:
    async for message in client:
        if message.type == aiohttp.WSMsgType.BINARY:
            writer.write(message.data)
        elif message.type == aiohttp.WSMsgType.TEXT:
            writer.write(message.data.encode())
        elif message.type == aiohttp.WSMsgType.ERROR:  # aiohttp closed it already (1009 when too big)
            get_logger().info("console stream refused a message", reason=str(message.data))
            return
        await writer.drain()
