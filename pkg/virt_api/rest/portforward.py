"""``portforward/{port}[/{protocol}]`` of a VMI or a VM: virt-api dials the guest itself.

As in KubeVirt, this stream does not go through virt-handler: virt-api connects to the first address
in ``status.interfaces`` (TCP by default, or UDP), and only then upgrades the client's connection
(subprotocol ``plain.kubevirt.io``), so every refusal is still an HTTP answer with a ``Status`` body.
Each websocket message from the client is written to the guest (one datagram each over UDP), what the
guest sends comes back as binary messages, and the client is pinged every second.

Both directions are bounded: a client message of :data:`MAX_MESSAGE_BYTES` or more ends the stream with
close code 1009 (message too big) before it is read; the guest is read 32 KiB at a time over TCP, and over UDP
at most :data:`MAX_QUEUED_DATAGRAMS` datagrams (:data:`MAX_QUEUED_BYTES` bytes) wait for a slow client;
the ones arriving beyond that are dropped, as a full socket buffer drops them.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from kubevirt.client import JSON, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES, KubeApi
from kubevirt.log import get_logger
from kubevirt.monitoring.virt_api import ConnectionKind, active_connection
from kubevirt.virt_api.rest.kube import get_or_404
from kubevirt.virt_api.rest.lifecycle import has_condition, uid_of
from kubevirt.virt_api.rest.status import VM, VMI, StatusError, bad_request, conflict, internal

PLAIN_SUBPROTOCOL = "plain.kubevirt.io"
PING_INTERVAL = 1.0
DIAL_TIMEOUT = 10.0
READ_SIZE = 32 * 1024
PROTOCOLS = ("tcp", "udp")
# Port-forward clients send what they read at once (virtctl and KubeVirt: 32 KiB at most); an unbounded
# message would be held in memory whole before it could be written to the guest.
MAX_MESSAGE_BYTES = 1024 * 1024
# What a guest may have waiting over UDP for a client that does not read, about a socket's receive
# buffer: a datagram is at most 64 KiB, the count bounds the overhead of tiny ones.
MAX_QUEUED_DATAGRAMS = 256
MAX_QUEUED_BYTES = 256 * 1024


def check_vmi(vmi: JSON) -> None:
    if has_condition(vmi, "Paused"):
        raise conflict(VMI, vmi["metadata"]["name"], "VMI is paused")


def target_address(vmi: JSON) -> str:
    """The guest's first interface address (``status.interfaces[0].ipAddress``)."""
    interfaces = (vmi.get("status") or {}).get("interfaces") or []
    if not interfaces:
        raise bad_request("no network interfaces are present")
    return str(interfaces[0].get("ipAddress") or "")


def _host_port(address: str, port: str) -> str:
    try:
        v6 = isinstance(ipaddress.ip_address(address), ipaddress.IPv6Address)
    except ValueError:
        v6 = False
    return f"[{address}]:{port}" if v6 else f"{address}:{port}"


class Tunnel:
    """One connection to the guest: bytes out, chunks (or datagrams) back."""

    async def send(self, data: bytes) -> None:
        raise NotImplementedError

    async def receive(self) -> bytes:
        """The next chunk; empty when the guest closed."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _TCPTunnel(Tunnel):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer

    async def send(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    async def receive(self) -> bytes:
        return await self._reader.read(READ_SIZE)

    def close(self) -> None:
        self._writer.close()


class _Datagrams(asyncio.DatagramProtocol):
    """The guest's datagrams waiting for the client, within the bounds above; the rest are dropped."""

    def __init__(self) -> None:
        # One place more than the bound: the end marker always fits.
        self.queue: asyncio.Queue[bytes] = asyncio.Queue(MAX_QUEUED_DATAGRAMS + 1)
        self.queued_bytes = 0
        self.dropped = 0

    def datagram_received(self, data: bytes, addr: object) -> None:
        full = self.queue.qsize() >= MAX_QUEUED_DATAGRAMS
        if full or self.queued_bytes + len(data) > MAX_QUEUED_BYTES:
            if not self.dropped:
                get_logger().info("port-forward client is slow, dropping datagrams from the guest")
            self.dropped += 1
            return
        self.queued_bytes += len(data)
        self.queue.put_nowait(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.dropped:
            get_logger().info("port-forward dropped datagrams from the guest", dropped=self.dropped)
        self.queue.put_nowait(b"")

    async def next(self) -> bytes:
        data = await self.queue.get()
        self.queued_bytes -= len(data)
        return data


class _UDPTunnel(Tunnel):
    def __init__(self, transport: asyncio.DatagramTransport, protocol: _Datagrams) -> None:
        self._transport, self._protocol = transport, protocol

    async def send(self, data: bytes) -> None:
        self._transport.sendto(data)

    async def receive(self) -> bytes:
        return await self._protocol.next()

    def close(self) -> None:
        self._transport.close()


async def dial(protocol: str, address: str, port: str) -> Tunnel:
    """Connects to the guest, or raises the 500 KubeVirt answers with (Go's ``net.Dial`` wording)."""
    where = _host_port(address, port)
    if protocol not in PROTOCOLS:
        raise internal(f"dialing VM: dial {protocol}: unknown network {protocol}")
    if not port.isdigit() or int(port) > 65535:
        raise internal(f"dialing VM: dial {protocol}: address {where}: invalid port")
    try:
        if protocol == "tcp":
            reader, writer = await asyncio.wait_for(asyncio.open_connection(address, int(port)), DIAL_TIMEOUT)
            return _TCPTunnel(reader, writer)
        loop = asyncio.get_running_loop()
        transport, datagrams = await loop.create_datagram_endpoint(
            _Datagrams, remote_addr=(address, int(port))
        )
        return _UDPTunnel(transport, datagrams)
    except (OSError, TimeoutError) as err:
        get_logger().error("Can't dial", protocol=protocol, address=where, reason=str(err))
        reason = os.strerror(err.errno) if isinstance(err, OSError) and err.errno else "i/o timeout"
        raise internal(f"dialing VM: dial {protocol} {where}: connect: {reason.lower()}") from None


@dataclass
class PortForwarder:
    api: KubeApi
    dialer: Callable[[str, str, str], Awaitable[Tunnel]] = dial

    def vmi(self, namespace: str, name: str) -> JSON:
        return get_or_404(self.api, VIRTUAL_MACHINE_INSTANCES, namespace, name, VMI, "vmi")

    def vmi_of_vm(self, namespace: str, name: str) -> JSON:
        """The VM's own VMI: the VM must say it created one, and the VMI must be owned by it."""
        vm = get_or_404(self.api, VIRTUAL_MACHINES, namespace, name, VM, "vm")
        if not (vm.get("status") or {}).get("created"):
            raise conflict(VM, name, "VMI is not started")
        vmi = self.vmi(namespace, name)
        owners = (vmi.get("metadata") or {}).get("ownerReferences") or []
        if not any(ref.get("uid") == uid_of(vm) for ref in owners):
            raise internal(f"unable to retrieve vmi [{name}] for vm: <nil>")
        return vmi

    async def handle(self, request: web.Request, fetch: Callable[[str, str], JSON]) -> web.StreamResponse:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        # The tunnel is counted under the name in the path, the VM's on a VM's route, as in KubeVirt.
        with active_connection(ConnectionKind.PORTFORWARD, namespace, name):
            return await self._forward(request, fetch, namespace, name)

    async def _forward(
        self, request: web.Request, fetch: Callable[[str, str], JSON], namespace: str, name: str
    ) -> web.StreamResponse:
        port = request.match_info["port"]
        protocol = request.match_info.get("protocol") or "tcp"
        try:
            vmi = await asyncio.to_thread(fetch, namespace, name)
            check_vmi(vmi)
            tunnel = await self.dialer(protocol, target_address(vmi), port)
        except StatusError as err:
            return web.json_response(err.body(), status=err.code)
        try:
            client = web.WebSocketResponse(
                protocols=(PLAIN_SUBPROTOCOL,), max_msg_size=MAX_MESSAGE_BYTES, heartbeat=None
            )
            await client.prepare(request)
            await _relay(client, tunnel)
            return client
        finally:
            tunnel.close()


async def _to_guest(client: web.WebSocketResponse, tunnel: Tunnel) -> None:
    async for message in client:
        if message.type == aiohttp.WSMsgType.BINARY:
            await tunnel.send(message.data)
        elif message.type == aiohttp.WSMsgType.TEXT:
            await tunnel.send(message.data.encode())
        elif message.type == aiohttp.WSMsgType.ERROR:  # aiohttp closed it already (1009 when too big)
            get_logger().info("port-forward refused a message", reason=str(message.data))
            return


async def _to_client(client: web.WebSocketResponse, tunnel: Tunnel) -> None:
    while chunk := await tunnel.receive():
        await client.send_bytes(chunk)


async def _keep_alive(client: web.WebSocketResponse) -> None:
    while not client.closed:
        await asyncio.sleep(PING_INTERVAL)
        await client.ping(b"keep alive")


async def _relay(client: web.WebSocketResponse, tunnel: Tunnel) -> None:
    """Copies both ways until either side ends (or a ping cannot be sent); then closes both."""
    tasks = [
        asyncio.ensure_future(_to_guest(client, tunnel)),
        asyncio.ensure_future(_to_client(client, tunnel)),
        asyncio.ensure_future(_keep_alive(client)),
    ]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    for task in done:
        if task.exception() is not None:
            get_logger().info("port-forward ended", reason=str(task.exception()))
    tunnel.close()
    await client.close()
