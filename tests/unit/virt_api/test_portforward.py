"""virt-api's port-forward: its refusals, and a TCP and a UDP relay to a loopback "guest"."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.virt_api.rest.portforward import PortForwarder, dial
from kubevirt.virt_api.rest.status import StatusError
from kubevirt_testing.fake_kube_api import FakeKubeApi

JSON = dict[str, Any]
BASE = "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}"


def _vmi(name: str = "guest", address: str = "127.0.0.1", **status: Any) -> JSON:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {},
        "status": {"phase": "Running", "interfaces": [{"name": "default", "ipAddress": address}], **status},
    }


def _app(forwarder: PortForwarder) -> web.Application:
    app = web.Application()
    for path, fetch in (
        ("virtualmachineinstances/{name}", forwarder.vmi),
        ("virtualmachines/{name}", forwarder.vmi_of_vm),
    ):

        def route(fetch: Callable[[str, str], JSON] = fetch) -> Callable[[web.Request], Awaitable[Any]]:
            async def handle(request: web.Request) -> web.StreamResponse:
                return await forwarder.handle(request, fetch)

            return handle

        app.router.add_get(f"{BASE}/{path}/portforward/{{port}}", route())
        app.router.add_get(f"{BASE}/{path}/portforward/{{port}}/{{protocol}}", route())
    return app


def _run(api: FakeKubeApi, scenario: Callable[[TestClient[Any, Any]], Awaitable[None]]) -> None:
    async def main() -> None:
        async with TestClient(TestServer(_app(PortForwarder(api)))) as client:
            await scenario(client)

    asyncio.run(main())


def _status(api: FakeKubeApi, path: str) -> tuple[int, JSON]:
    result: list[tuple[int, JSON]] = []

    async def scenario(client: TestClient[Any, Any]) -> None:
        response = await client.get(path)
        result.append((response.status, await response.json()))

    _run(api, scenario)
    return result[0]


def test_refusals_are_status_answers_before_any_upgrade() -> None:
    api = FakeKubeApi()
    api.add(VIRTUAL_MACHINE_INSTANCES, _vmi("paused", conditions=[{"type": "Paused", "status": "True"}]))
    api.add(VIRTUAL_MACHINE_INSTANCES, {**_vmi("bare"), "status": {"phase": "Running"}})
    api.add(VIRTUAL_MACHINES, {"metadata": {"name": "stopped", "namespace": "default", "uid": "vm"}})
    vmis = BASE.format(namespace="default") + "/virtualmachineinstances"
    code, body = _status(api, f"{vmis}/paused/portforward/22")
    assert (code, body["message"]) == (
        409,
        'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "paused": VMI is paused',
    )
    code, body = _status(api, f"{vmis}/bare/portforward/22")
    assert (code, body["message"]) == (400, "no network interfaces are present")
    code, body = _status(api, f"{vmis}/missing/portforward/22")
    assert (code, body["reason"]) == (404, "NotFound")
    vms = BASE.format(namespace="default") + "/virtualmachines"
    code, body = _status(api, f"{vms}/stopped/portforward/22")
    assert (code, body["message"]) == (
        409,
        'Operation cannot be fulfilled on virtualmachine.kubevirt.io "stopped": VMI is not started',
    )


def test_dial_failures_are_internal_errors() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # bound, not listening: the connection is refused
        for protocol, wanted in (
            ("sctp", "dialing VM: dial sctp: unknown network sctp"),
            ("tcp", f"dialing VM: dial tcp 127.0.0.1:{port}: connect: connection refused"),
        ):
            with pytest.raises(StatusError) as caught:
                asyncio.run(dial(protocol, "127.0.0.1", str(port)))
            assert (caught.value.code, caught.value.message) == (500, f"Internal error occurred: {wanted}")
    with pytest.raises(StatusError) as caught:
        asyncio.run(dial("tcp", "fd00::1", "http"))
    assert caught.value.message.endswith("address [fd00::1]:http: invalid port")


async def _tcp_echo() -> tuple[asyncio.Server, int]:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data.upper())
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    return server, int(server.sockets[0].getsockname()[1])


def test_a_vm_forwards_tcp_to_its_vmis_first_address() -> None:
    api = FakeKubeApi()
    vm = api.add(
        VIRTUAL_MACHINES, {"metadata": {"name": "guest", "namespace": "default"}, "status": {"created": True}}
    )
    vmi = _vmi()
    vmi["metadata"]["ownerReferences"] = [
        {"kind": "VirtualMachine", "name": "guest", "uid": vm["metadata"]["uid"]}
    ]
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi)
    replies: list[bytes] = []

    async def scenario(client: TestClient[Any, Any]) -> None:
        server, port = await _tcp_echo()
        path = BASE.format(namespace="default") + f"/virtualmachines/guest/portforward/{port}"
        async with client.ws_connect(path, protocols=("plain.kubevirt.io",)) as ws:
            assert ws.protocol == "plain.kubevirt.io"
            for word in (b"hello", b"guest"):
                await ws.send_bytes(word)
                message = await ws.receive(timeout=5)
                assert message.type == aiohttp.WSMsgType.BINARY
                replies.append(message.data)
        server.close()

    _run(api, scenario)
    assert replies == [b"HELLO", b"GUEST"]


def test_udp_is_one_datagram_per_message() -> None:
    api = FakeKubeApi()
    api.add(VIRTUAL_MACHINE_INSTANCES, _vmi())
    replies: list[bytes] = []

    class Echo(asyncio.DatagramProtocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport

        def datagram_received(self, data: bytes, addr: Any) -> None:
            self.transport.sendto(data[::-1], addr)

    async def scenario(client: TestClient[Any, Any]) -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
        port = transport.get_extra_info("sockname")[1]
        path = BASE.format(namespace="default") + f"/virtualmachineinstances/guest/portforward/{port}/udp"
        async with client.ws_connect(path, protocols=("plain.kubevirt.io",)) as ws:
            await ws.send_bytes(b"abc")
            replies.append((await ws.receive(timeout=5)).data)
        transport.close()

    _run(api, scenario)
    assert replies == [b"cba"]


def test_a_message_above_1_mib_closes_the_stream_with_message_too_big() -> None:
    api = FakeKubeApi()
    api.add(VIRTUAL_MACHINE_INSTANCES, _vmi())
    received: list[int] = []
    seen: dict[str, Any] = {}

    async def sink(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(64 * 1024):
            received.append(len(data))
        writer.close()

    async def scenario(client: TestClient[Any, Any]) -> None:
        server = await asyncio.start_server(sink, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        path = BASE.format(namespace="default") + f"/virtualmachineinstances/guest/portforward/{port}"
        async with client.ws_connect(path, protocols=("plain.kubevirt.io",), max_msg_size=0) as ws:
            await ws.send_bytes(b"a" * (512 * 1024))  # well within the bound: relayed
            for _ in range(100):
                if sum(received) == 512 * 1024:
                    break
                await asyncio.sleep(0.05)
            await ws.send_bytes(b"b" * (2 * 1024 * 1024))
            # The relay pings every second, each ping restarting receive()'s own timeout.
            message = await asyncio.wait_for(ws.receive(), 5)
            seen["close"] = (message.type, message.data)
        server.close()

    _run(api, scenario)
    assert sum(received) == 512 * 1024  # the large message never reached the guest
    assert closed_as_too_big(*seen["close"])


def closed_as_too_big(kind: aiohttp.WSMsgType, data: Any) -> bool:
    """Closed with 1009, or reset: the server does not read the message's rest, and the reset that
    causes can reach the client before the close frame."""
    if kind == aiohttp.WSMsgType.CLOSE:
        return bool(data == aiohttp.WSCloseCode.MESSAGE_TOO_BIG)
    return kind in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR)


async def _flood(guest: socket.socket, target: Any, count: int, size: int) -> None:
    """``count`` datagrams to the tunnel, letting the loop take each batch off the socket."""
    for index in range(count):
        guest.sendto(b"d" * size, target)
        if index % 16 == 0:
            await asyncio.sleep(0.001)
    await asyncio.sleep(0.2)


async def _drain(tunnel: Any) -> list[bytes]:
    received: list[bytes] = []
    while True:
        try:
            received.append(await asyncio.wait_for(tunnel.receive(), 0.3))
        except TimeoutError:
            return received


def test_udp_datagrams_waiting_for_a_slow_client_are_bounded_and_the_rest_dropped() -> None:
    counts: dict[str, Any] = {}

    async def scenario() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as guest:
            guest.bind(("127.0.0.1", 0))
            guest.setblocking(False)
            tunnel = await dial("udp", "127.0.0.1", str(guest.getsockname()[1]))
            await tunnel.send(b"hello")  # the tunnel's address, as the guest learns it
            await asyncio.sleep(0.05)
            _, target = guest.recvfrom(64)
            # 2000 small datagrams, then 100 of 60 KiB: neither the count nor the bytes may pile up.
            await _flood(guest, target, 2000, 100)
            small = await _drain(tunnel)
            await _flood(guest, target, 100, 60 * 1024)
            large = await _drain(tunnel)
            await _flood(guest, target, 2000, 100)
            tunnel.close()  # with the queue full, the end still arrives
            last = await _drain(tunnel)
            counts.update(small=len(small), large=sum(map(len, large)), ended=last[-1:] == [b""])

    asyncio.run(scenario())
    assert 0 < counts["small"] <= 256
    assert 0 < counts["large"] <= 256 * 1024
    assert counts["ended"]
