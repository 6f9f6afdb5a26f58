"""The console and VNC streams: a websocket from the client relayed to virt-handler's (port 8186).

virt-api checks the VMI, finds the handler on its node and dials the handler's websocket with its client
certificate (subprotocol ``plain.kubevirt.io``) before it upgrades the client's connection, so every
refusal is still an HTTP answer with a ``Status`` body. Then each message is passed on unchanged in both
directions until either side closes. (KubeVirt relays the raw TCP bytes; relaying whole messages is the
same to both ends.) A message of :data:`MAX_MESSAGE_BYTES` or more, from either side, is refused unread
and ends the stream with close code 1009 (message too big).

When virt-handler ends the stream (a newer console session took over, the VMI went away), the client's
connection is dropped without a close frame, as KubeVirt's virt-api drops it: KubeVirt's clients read a
clean close as the end of input and an abrupt one as the error ("unexpected EOF") they report.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from kubevirt.client import JSON, VIRTUAL_MACHINE_INSTANCES, KubeApi
from kubevirt.log import get_logger
from kubevirt.virt_api.rest.handler import HandlerLocator
from kubevirt.virt_api.rest.kube import get_or_404
from kubevirt.virt_api.rest.lifecycle import vmi_phase
from kubevirt.virt_api.rest.screenshot import ScreenshotError, capture, encode_png
from kubevirt.virt_api.rest.status import VMI, bad_request, conflict, internal
from kubevirt_api.core.v1 import VirtualMachineInstancePhase

PLAIN_SUBPROTOCOL = "plain.kubevirt.io"
HANDSHAKE_TIMEOUT = 10.0
# Console and VNC clients send what they read at once (virtctl and KubeVirt: 32 KiB at most), and so
# does virt-handler; an unbounded message would be held in memory whole before it could be relayed.
MAX_MESSAGE_BYTES = 1024 * 1024
VMI_NOT_RUNNING = "VMI is not running"


def _devices(vmi: JSON) -> JSON:
    return dict(((vmi.get("spec") or {}).get("domain") or {}).get("devices") or {})


def check_console(vmi: JSON) -> None:
    if _devices(vmi).get("autoattachSerialConsole") is False:
        raise bad_request("No serial consoles are present.")
    if vmi_phase(vmi) == VirtualMachineInstancePhase.FAILED:
        raise conflict(VMI, vmi["metadata"]["name"], "VMI is in failed status")
    if vmi_phase(vmi) != VirtualMachineInstancePhase.RUNNING:
        raise bad_request(VMI_NOT_RUNNING)


def check_vnc(vmi: JSON) -> None:
    if _devices(vmi).get("autoattachGraphicsDevice") is False:
        raise bad_request("No graphics devices are present.")
    if vmi_phase(vmi) != VirtualMachineInstancePhase.RUNNING:
        raise bad_request(VMI_NOT_RUNNING)


def preserve_session(query: str | None) -> bool:
    """Go's ``strconv.ParseBool``; anything else (or nothing) is false, as KubeVirt reads it."""
    return (query or "") in ("1", "t", "T", "true", "TRUE", "True")


@dataclass
class StreamRelay:
    api: KubeApi
    handlers: HandlerLocator
    handler_tls: Callable[[], ssl.SSLContext]

    def handler_url(self, namespace: str, name: str, stream: str, check: Callable[[JSON], None]) -> str:
        """The handler's websocket URL for a VMI that may be streamed (blocking: runs in a thread)."""
        vmi = get_or_404(self.api, VIRTUAL_MACHINE_INSTANCES, namespace, name, VMI, "vmi")
        check(vmi)
        return self.handlers.url_for(vmi, stream, scheme="wss")

    async def relay(self, request: web.Request, url: str) -> web.StreamResponse:
        async with aiohttp.ClientSession() as session:
            upstream = await self._dial(session, url)
            client = web.WebSocketResponse(
                protocols=(PLAIN_SUBPROTOCOL,), max_msg_size=MAX_MESSAGE_BYTES, heartbeat=None
            )
            await client.prepare(request)
            if await _pump_both(client, upstream):
                await _drop_connection(request)
            return client

    async def screenshot(self, url: str, *, move_cursor: bool) -> bytes:
        """A PNG of the VNC server behind the handler's websocket ``url``."""
        async with aiohttp.ClientSession() as session:
            upstream = await self._dial(session, url)
            try:
                frame = await capture(_WebsocketBytes(upstream), move_cursor=move_cursor)
            except ScreenshotError as err:
                raise internal(str(err)) from None
            finally:
                await upstream.close()
        return await asyncio.to_thread(encode_png, frame)

    async def _dial(self, session: aiohttp.ClientSession, url: str) -> aiohttp.ClientWebSocketResponse:
        # Looking at the certificate files and the CA bundle may block: not on the event loop.
        context = await asyncio.to_thread(self.handler_tls)
        try:
            return await session.ws_connect(
                url,
                protocols=(PLAIN_SUBPROTOCOL,),
                ssl=context,
                timeout=aiohttp.ClientWSTimeout(ws_close=HANDSHAKE_TIMEOUT),
                autoping=True,
                max_msg_size=MAX_MESSAGE_BYTES,
            )
        except aiohttp.WSServerHandshakeError as err:
            raise internal(f"Can't connect to websocket ({err.status}): websocket: bad handshake") from None
        except (aiohttp.ClientError, OSError, TimeoutError) as err:
            raise internal(str(err) or type(err).__name__) from None


@dataclass
class _WebsocketBytes:
    """The handler's websocket seen as the VNC server's byte stream."""

    ws: aiohttp.ClientWebSocketResponse

    async def read(self) -> bytes:
        message = await self.ws.receive()
        if message.type == aiohttp.WSMsgType.BINARY:
            return bytes(message.data)
        if message.type == aiohttp.WSMsgType.TEXT:
            return str(message.data).encode()
        return b""

    async def write(self, data: bytes) -> None:
        await self.ws.send_bytes(data)


async def _copy(
    source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
    sink: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
) -> None:
    async for message in source:
        if message.type == aiohttp.WSMsgType.BINARY:
            await sink.send_bytes(message.data)
        elif message.type == aiohttp.WSMsgType.TEXT:
            await sink.send_str(message.data)
        elif message.type == aiohttp.WSMsgType.ERROR:  # aiohttp closed it already (1009 when too big)
            get_logger().info("stream refused a message", reason=str(message.data))
            return


async def _pump_both(client: web.WebSocketResponse, upstream: aiohttp.ClientWebSocketResponse) -> bool:
    """Copies messages both ways until the first side closes; closes the handler's side. True when the
    handler's side ended first and the client's is still open (the caller drops it); else the client's
    side is closed too."""
    from_client = asyncio.ensure_future(_copy(client, upstream))
    from_handler = asyncio.ensure_future(_copy(upstream, client))
    done, pending = await asyncio.wait((from_client, from_handler), return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    for task in done:
        if task.exception() is not None:
            get_logger().info("stream ended", reason=str(task.exception()))
    await upstream.close()
    if from_handler in done and not client.closed:
        return True
    await client.close()
    return False


_FLUSH_WAIT_SECONDS = 1.0
_FLUSH_POLL_SECONDS = 0.01


async def _drop_connection(request: web.Request) -> None:
    """Closes the client's TCP connection without a close frame, once what was relayed has been sent
    (or at once, unsent bytes dropped, when the client stops reading)."""
    transport = request.transport
    if transport is None:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _FLUSH_WAIT_SECONDS
    while transport.get_write_buffer_size() > 0 and loop.time() < deadline:
        await asyncio.sleep(_FLUSH_POLL_SECONDS)
    # With nothing buffered, close() ends the connection at once and later writes (aiohttp's own close
    # frame) are discarded; with bytes still buffered, abort() discards them too.
    if transport.get_write_buffer_size() > 0:
        transport.abort()
    else:
        transport.close()
