"""Pods without a cluster: network namespaces wired like a CNI would, for the pod network bindings.

``pod`` has ``eth0`` (10.244.7.2/24, MTU 1400, default route via 10.244.7.1) whose peer is in
``client``, standing for the rest of the cluster. After phase 1, :meth:`Topology.attach_guest` puts a
``guest`` namespace on the binding's bridge through a veth carrying the VM's MAC: a stand-in for the
VM behind the tap, which runs a real DHCP client (busybox udhcpc) and real sockets.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pyroute2 import IPRoute, netns

from kubevirt.network.netns import run_in_netns

T = TypeVar("T")
POD_IP = "10.244.7.2"
CLIENT_IP = "10.244.7.1"
POD_MTU = 1400
BUSYBOX = shutil.which("busybox") or "/bin/busybox"


class Topology:
    def __init__(self, tmp: Path) -> None:
        suffix = uuid.uuid4().hex[:6]
        self.tmp = tmp
        self.pod, self.client, self.guest = f"kvp-pod-{suffix}", f"kvp-cli-{suffix}", f"kvp-gst-{suffix}"
        self.created: list[str] = []
        for name in (self.pod, self.client):
            netns.create(name)
            self.created.append(name)
        with IPRoute() as ipr:
            ipr.link("add", ifname=f"c{suffix}", kind="veth", peer={"ifname": f"p{suffix}"})
            ipr.link("set", index=ipr.link_lookup(ifname=f"c{suffix}")[0], net_ns_fd=self.client)
            ipr.link("set", index=ipr.link_lookup(ifname=f"p{suffix}")[0], net_ns_fd=self.pod)
        self.run(self.client, lambda: _configure(f"c{suffix}", "eth0", f"{CLIENT_IP}/24", None, 1500))
        self.run(self.pod, lambda: _configure(f"p{suffix}", "eth0", f"{POD_IP}/24", CLIENT_IP, POD_MTU))

    def path(self, name: str) -> Path:
        return Path("/run/netns") / name

    def run(self, name: str, work: Callable[[], T]) -> T:
        return run_in_netns(self.path(name), work)

    def attach_guest(self, bridge: str, mac: str) -> None:
        """The VM stand-in: ``eth0`` in the guest namespace, its peer a port of ``bridge`` in the pod."""
        netns.create(self.guest)
        self.created.append(self.guest)

        def plug() -> None:
            with IPRoute() as ipr:
                ipr.link("add", ifname="vmport", kind="veth", peer={"ifname": "vmeth"})
                port = ipr.link_lookup(ifname="vmport")[0]
                ipr.link("set", index=port, master=ipr.link_lookup(ifname=bridge)[0], state="up", mtu=POD_MTU)
                ipr.link("set", index=ipr.link_lookup(ifname="vmeth")[0], net_ns_fd=self.guest)

        self.run(self.pod, plug)
        self.run(self.guest, lambda: _configure("vmeth", "eth0", None, None, 1500, mac=mac))

    def udhcpc(self) -> dict[str, str]:
        """A DHCP exchange from the guest; the variables udhcpc hands its script on ``bound``."""
        out = self.tmp / "dhcp.env"
        script = self.tmp / "dhcp.sh"
        script.write_text(f'#!/bin/sh\n[ "$1" = bound ] && env > {out}\nexit 0\n')
        script.chmod(0o755)
        command = [BUSYBOX, "udhcpc", "-i", "eth0", "-f", "-q", "-n", "-t", "5", "-T", "1", "-s", str(script)]
        result = self.run(
            self.guest,
            lambda: subprocess.run(command, capture_output=True, text=True, timeout=30, check=False),
        )
        assert result.returncode == 0, f"udhcpc failed: {result.stdout}{result.stderr}"
        return dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)

    def dhcpv6_solicit(self, mac: str) -> list[str]:
        """A DHCPv6 SOLICIT from the guest (busybox has no DHCPv6 client); the addresses advertised."""
        return self.run(self.guest, lambda: _solicit(mac))

    def close(self) -> None:
        for name in reversed(self.created):
            with contextlib.suppress(OSError):
                netns.remove(name)


def _solicit(mac: str, timeout: float = 30.0) -> list[str]:
    duid = struct.pack("!HH", 3, 1) + bytes.fromhex(mac.replace(":", ""))  # DUID-LL, Ethernet
    options = struct.pack("!HH", 1, len(duid)) + duid  # client identifier
    options += struct.pack("!HHIII", 3, 12, 1, 0, 0)  # IA_NA 1, no preferred times
    options += struct.pack("!HHH", 8, 2, 0)  # elapsed time
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"eth0")
        sock.bind(("::", 546))
        sock.settimeout(
            1.0
        )  # a client retransmits; the first may leave before the link-local address is usable
        deadline = time.monotonic() + timeout
        while True:
            try:
                sock.sendto(
                    bytes([1]) + os.urandom(3) + options, ("ff02::1:2", 547, 0, socket.if_nametoindex("eth0"))
                )
                reply, _ = sock.recvfrom(2048)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
    assert reply[0] == 2, f"not an ADVERTISE: message type {reply[0]}"
    addresses = []
    offset = 4
    while offset + 4 <= len(reply):
        code, length = struct.unpack("!HH", reply[offset : offset + 4])
        body = reply[offset + 4 : offset + 4 + length]
        if code == 3:  # IA_NA: IAID, T1, T2, then its own options
            inner = 12
            while inner + 4 <= len(body):
                inner_code, inner_length = struct.unpack("!HH", body[inner : inner + 4])
                if inner_code == 5:  # IA address
                    addresses.append(socket.inet_ntop(socket.AF_INET6, body[inner + 4 : inner + 20]))
                inner += 4 + inner_length
        offset += 4 + length
    return addresses


def _configure(
    old: str, new: str, address: str | None, gateway: str | None, mtu: int, mac: str | None = None
) -> None:
    with IPRoute() as ipr:
        index = ipr.link_lookup(ifname=old)[0]
        settings: dict[str, Any] = {"ifname": new, "mtu": mtu}
        if mac:
            settings["address"] = mac
        ipr.link("set", index=index, **settings)
        ipr.link("set", index=index, state="up")
        ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")
        if address:
            ip, prefix = address.split("/")
            ipr.addr("add", index=index, address=ip, prefixlen=int(prefix))
        if gateway:
            ipr.route("add", dst="0.0.0.0/0", gateway=gateway)


def guest_address(topology: Topology, address: str, gateway: str) -> None:
    def configure() -> None:
        with IPRoute() as ipr:
            index = ipr.link_lookup(ifname="eth0")[0]
            ip, prefix = address.split("/")
            ipr.addr("add", index=index, address=ip, prefixlen=int(prefix))
            ipr.route("add", dst="0.0.0.0/0", gateway=gateway)

    topology.run(topology.guest, configure)


class Listener:
    """A TCP server in a namespace that records each peer's address and answers ``ok``."""

    def __init__(self, topology: Topology, ns: str, port: int, *, ipv6: bool = False) -> None:
        self.peers: list[str] = []
        address, family = ("::", socket.AF_INET6) if ipv6 else ("0.0.0.0", socket.AF_INET)
        self.sock = topology.run(ns, lambda: socket.create_server((address, port), family=family))
        self.sock.settimeout(10)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, peer = self.sock.accept()
                with conn:
                    self.peers.append(peer[0])
                    conn.sendall(b"ok")

    def close(self) -> None:
        self.sock.close()


def connect(topology: Topology, ns: str, address: str, port: int) -> bytes:
    """Connects from ``ns``; the first bytes the server sends. Raises ``OSError`` when refused."""

    def dial() -> bytes:
        with socket.create_connection((address, port), timeout=5) as conn:
            return conn.recv(16)

    return topology.run(ns, dial)
