"""The VM's DHCP server, in virt-launcher's own process (as KubeVirt's is): DHCPv4 and, for an IPv6 VM
address, DHCPv6, each a thread answering on the binding's bridge.

It needs no more than KubeVirt gives the compute container: binding ports 67 and 547 takes
NET_BIND_SERVICE. The sockets listen on every interface of the pod and keep only what arrived on the
bridge (the kernel says where, through IP_PKTINFO / IPV6_PKTINFO); answers leave through the bridge the
same way, so no SO_BINDTODEVICE (NET_RAW) and no ARP-cache injection (NET_ADMIN) is needed: a client
without an address gets its answer by broadcast.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kubevirt.log import get_logger
from kubevirt.network.dhcp import v4, v6
from kubevirt.network.dhcp.config import DHCPConfig
from kubevirt.network.dhcp.resolvconf import DNSSettings
from kubevirt.network.errors import NetworkError

IP_PKTINFO = 8  # <linux/in.h>; the socket module names it only from Python 3.13
POLL_SECONDS = 0.5  # how often a serving thread looks whether it was stopped
_PKTINFO = struct.Struct("I4s4s")  # struct in_pktinfo: ifindex, local address, header destination
_PKTINFO6 = struct.Struct("16sI")  # struct in6_pktinfo: address, ifindex
_ANCILLARY = socket.CMSG_SPACE(64)


class DHCPServerError(NetworkError):
    """The DHCP server could not be started."""


@dataclass(frozen=True)
class ServerSpec:
    interface: str  # where the server answers (the binding's bridge)
    interface_mac: str  # the bridge's MAC: the DHCPv6 server's identity
    config: DHCPConfig
    dns: DNSSettings
    hostname: str


def _interface_index(name: str) -> int:
    try:
        return socket.if_nametoindex(name)
    except OSError as err:
        raise DHCPServerError(f"the DHCP server's interface {name} is missing: {err}") from err


def _bound(family: socket.AddressFamily, port: int) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
            sock.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)
            sock.bind(("0.0.0.0", port))
        else:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 1)
            sock.bind(("::", port))
        sock.settimeout(POLL_SECONDS)
    except OSError as err:
        sock.close()
        raise DHCPServerError(f"listening on port {port}: {err}") from err
    return sock


def _arrived_on(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, data in ancillary:
        if level == socket.IPPROTO_IP and kind == IP_PKTINFO and len(data) >= _PKTINFO.size:
            return int(_PKTINFO.unpack_from(data)[0])
        if level == socket.IPPROTO_IPV6 and kind == socket.IPV6_PKTINFO and len(data) >= _PKTINFO6.size:
            return int(_PKTINFO6.unpack_from(data)[1])
    return None


class DHCPServer:
    """The servers for one VM interface; :meth:`start` returns once they listen."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._log = get_logger().bind(interface=spec.interface, mac=spec.config.mac)

    def start(self) -> None:
        config = self.spec.config
        if config.ip is None and config.ipv6 is None:
            raise DHCPServerError("the DHCP configuration has no address to hand out")
        index = _interface_index(self.spec.interface)
        try:
            if config.ip is not None:
                options = v4.server_options(config, self.spec.dns, self.spec.hostname)
                self._serve(
                    _bound(socket.AF_INET, v4.SERVER_PORT), lambda s: self._serve_v4(s, index, options)
                )
            if config.ipv6 is not None:
                self._serve(_bound(socket.AF_INET6, v6.SERVER_PORT), lambda s: self._serve_v6(s, index))
        except (DHCPServerError, ValueError) as err:
            self.stop()
            raise DHCPServerError(f"the DHCP server for {self.spec.interface} did not start: {err}") from err
        self._log.info("DHCP server started", ipv4=str(config.ip or ""), ipv6=str(config.ipv6 or ""))

    def _serve(self, sock: socket.socket, loop: Callable[[socket.socket], None]) -> None:
        self._sockets.append(sock)
        thread = threading.Thread(target=loop, args=(sock,), name=f"dhcp-{self.spec.interface}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _receive(self, sock: socket.socket) -> tuple[bytes, int | None, tuple[object, ...]] | None:
        try:
            data, ancillary, _flags, peer = sock.recvmsg(4096, _ANCILLARY)
        except TimeoutError:
            return None
        return data, _arrived_on(ancillary), peer

    def _arrivals(self, sock: socket.socket, index: int) -> Iterator[tuple[bytes, tuple[object, ...]]]:
        """Each datagram that arrives on the VM's interface, with its sender, until the server stops
        (timeouts and socket errors are skipped)."""
        while not self._stopping.is_set():
            try:
                received = self._receive(sock)
            except OSError:
                continue
            if received is not None and received[1] == index:
                yield received[0], received[2]

    def _serve_v4(self, sock: socket.socket, index: int, options: dict[int, bytes]) -> None:
        config = self.spec.config
        assert config.ip is not None
        server_ip = config.advertising_ip or config.gateway
        for data, peer in self._arrivals(sock, index):
            with contextlib.suppress(OSError):
                try:
                    message = v4.parse(data)
                except v4.MalformedMessageError as err:
                    self._log.debug("ignoring a DHCP message", reason=str(err))
                    continue
                kind = v4.answer_type(message)
                if kind is None or message.mac != config.mac.lower():
                    continue  # not a question, or not our VM
                reply = v4.build_reply(
                    message, kind, server_ip=server_ip, client_ip=str(config.ip.ip), options=options
                )
                destination = v4.reply_destination(message, str(peer[0]))
                pktinfo = _PKTINFO.pack(index, socket.inet_aton(server_ip), b"\x00" * 4)
                sock.sendmsg(
                    [reply],
                    [(socket.IPPROTO_IP, IP_PKTINFO, pktinfo)],
                    0,
                    (destination, v4.CLIENT_PORT),
                )
                self._log.debug("DHCP answer", kind=kind, to=destination)

    def _serve_v6(self, sock: socket.socket, index: int) -> None:
        config = self.spec.config
        assert config.ipv6 is not None
        group = ipaddress.IPv6Address(v6.ALL_SERVERS_AND_RELAYS).packed + struct.pack("@I", index)
        try:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, group)
        except OSError as err:
            self._log.error("DHCPv6 server cannot join the servers' group", reason=str(err))
            return
        for data, peer in self._arrivals(sock, index):
            with contextlib.suppress(OSError):
                try:
                    message = v6.parse(data)
                except v6.MalformedMessageError as err:
                    self._log.debug("ignoring a DHCPv6 message", reason=str(err))
                    continue
                reply = v6.build_reply(
                    message, client_ip=str(config.ipv6.ip), server_mac=self.spec.interface_mac
                )
                sock.sendto(reply, peer)

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(POLL_SECONDS * 4)
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()
        self._threads.clear()
