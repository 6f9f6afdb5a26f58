"""Console and VNC: which VMIs may be streamed, and how VNC's preserveSession is read."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kubevirt.virt_api.rest.handler import HandlerLocator
from kubevirt.virt_api.rest.status import StatusError
from kubevirt.virt_api.rest.streams import StreamRelay, check_console, check_vnc, preserve_session
from kubevirt_testing.fake_kube_api import FakeKubeApi

Handler = Callable[[web.Request], Awaitable[web.WebSocketResponse]]


@contextlib.asynccontextmanager
async def relayed(handler_console: Handler) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    """A client of virt-api's console route, relayed by :class:`StreamRelay` to ``handler_console``
    standing in for virt-handler's websocket."""
    handler_app = web.Application()
    handler_app.router.add_get("/console", handler_console)
    async with TestServer(handler_app) as handler:
        relay = StreamRelay(
            FakeKubeApi(), HandlerLocator(FakeKubeApi(), "kubevirt"), ssl.create_default_context
        )
        url = str(handler.make_url("/console"))

        async def console(request: web.Request) -> web.StreamResponse:
            return await relay.relay(request, url)

        api_app = web.Application()
        api_app.router.add_get("/console", console)
        async with TestClient(TestServer(api_app)) as client:
            yield client


def vmi(phase: str, **devices: Any) -> dict[str, Any]:
    return {"metadata": {"name": "vmi"}, "spec": {"domain": {"devices": devices}}, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("check", "obj", "code", "message"),
    [
        (
            check_console,
            vmi("Running", autoattachSerialConsole=False),
            400,
            "No serial consoles are present.",
        ),
        (
            check_console,
            vmi("Failed"),
            409,
            'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "vmi": '
            "VMI is in failed status",
        ),
        (check_console, vmi("Scheduled"), 400, "VMI is not running"),
        (check_vnc, vmi("Running", autoattachGraphicsDevice=False), 400, "No graphics devices are present."),
        (check_vnc, vmi("Failed"), 400, "VMI is not running"),
    ],
)
def test_refusals(check: Any, obj: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(StatusError) as caught:
        check(obj)
    assert (caught.value.code, caught.value.message) == (code, message)


def test_a_running_vmi_streams() -> None:
    check_console(vmi("Running"))
    check_vnc(vmi("Running", autoattachSerialConsole=False))


def test_preserve_session_is_read_as_go_reads_booleans() -> None:
    assert [preserve_session(v) for v in ("true", "1", "T", "yes", "", None, "false")] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]


def test_a_message_above_1_mib_ends_the_relay_with_message_too_big() -> None:
    """Either way: the client's message is refused before virt-handler sees it, and the handler's too."""
    to_handler: list[int] = []
    seen: dict[str, Any] = {}

    async def handler_console(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(protocols=("plain.kubevirt.io",), max_msg_size=0)
        await ws.prepare(request)
        async for message in ws:
            to_handler.append(len(message.data))
            if message.data == b"flood":
                await ws.send_bytes(b"h" * (2 * 1024 * 1024))
        return ws

    async def main() -> None:
        async with relayed(handler_console) as client:
            for payload, key in ((b"c" * (2 * 1024 * 1024), "from_client"), (b"flood", "from_handler")):
                async with client.ws_connect(
                    "/console", protocols=("plain.kubevirt.io",), max_msg_size=0
                ) as ws:
                    await ws.send_bytes(b"a" * (512 * 1024))  # within the bound: relayed
                    await ws.send_bytes(payload)
                    message = await asyncio.wait_for(ws.receive(), 5)
                    seen[key] = (message.type, message.data)

    asyncio.run(main())
    assert to_handler[:1] == [512 * 1024]
    kind, data = seen["from_client"]
    # 1009, or reset: the relay does not read the message's rest, which can beat the close frame.
    assert (kind, data) == (aiohttp.WSMsgType.CLOSE, aiohttp.WSCloseCode.MESSAGE_TOO_BIG) or kind in (
        aiohttp.WSMsgType.CLOSED,
        aiohttp.WSMsgType.ERROR,
    )
    assert 2 * 1024 * 1024 not in to_handler
    # The handler's side ended: the client's connection is dropped (no close frame), as KubeVirt does.
    assert seen["from_handler"][0] == aiohttp.WSMsgType.CLOSED


def test_when_the_handler_ends_the_stream_the_client_gets_what_was_sent_then_a_dropped_connection() -> None:
    """A newer console session ends the older one at virt-handler; KubeVirt's clients must then read an
    abrupt end ("unexpected EOF"), not a close frame, which they would take for the end of input."""
    received: list[tuple[aiohttp.WSMsgType, Any]] = []

    async def handler_console(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(protocols=("plain.kubevirt.io",))
        await ws.prepare(request)
        await ws.send_bytes(b"login: " * 20000)  # more than one socket write: it must all arrive first
        await ws.close()
        return ws

    async def main() -> None:
        async with (
            relayed(handler_console) as client,
            client.ws_connect("/console", protocols=("plain.kubevirt.io",)) as ws,
        ):
            while True:
                message = await asyncio.wait_for(ws.receive(), 5)
                received.append((message.type, message.data))
                if message.type != aiohttp.WSMsgType.BINARY:
                    break

    asyncio.run(main())
    assert received[0] == (aiohttp.WSMsgType.BINARY, b"login: " * 20000)
    assert [kind for kind, _ in received[1:]] == [aiohttp.WSMsgType.CLOSED]
