"""What virt-launcher reads about the pod's links, with the standard library only.

pyroute2's import alone costs about 0.2 CPU-seconds (its package loads every netlink family it
supports), which under a launcher pod's CPU limit is seconds of wall time before the domain is
defined. Phase 2 only reads a few facts, in the current network namespace: a link's index, MAC and
MTU (``if_nametoindex`` and two ``ioctl`` calls) and which address families a link has global
addresses in (one rtnetlink address dump).
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import socket
import struct
from dataclasses import dataclass

from kubevirt.network.errors import PodNetworkError
from kubevirt.network.podnet import global_unicast

_SIOCGIFMTU = 0x8921
_SIOCGIFHWADDR = 0x8927
_IFREQ_SIZE = 40  # struct ifreq: a 16-byte name and a 24-byte union

_RTM_NEWADDR = 20
_RTM_GETADDR = 22
_NLM_F_REQUEST = 0x1
_NLM_F_DUMP = 0x300
_NLMSG_ERROR = 2
_NLMSG_DONE = 3
_IFA_ADDRESS = 1
_NLMSG_HEADER = struct.Struct("=IHHII")  # length, type, flags, sequence, port
_IFADDRMSG = struct.Struct("=BBBBI")  # family, prefix length, flags, scope, link index
_RTATTR = struct.Struct("=HH")  # length, type


@dataclass(frozen=True)
class Link:
    index: int
    mac: str
    mtu: int


def link_index(name: str) -> int | None:
    """The link's index, or None when the namespace has no such link."""
    try:
        return socket.if_nametoindex(name)
    except OSError:
        return None


def link(name: str) -> Link:
    """The link's index, MAC and MTU; :class:`PodNetworkError` when it is missing."""
    index = link_index(name)
    if index is None:
        raise PodNetworkError(f"link ({name}) is missing")
    request = struct.pack("16s24x", name.encode())
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            mtu_reply = fcntl.ioctl(sock, _SIOCGIFMTU, request)
            mac_reply = fcntl.ioctl(sock, _SIOCGIFHWADDR, request)
        except OSError as err:
            raise PodNetworkError(f"link ({name}): {err.strerror}") from None
    (mtu,) = struct.unpack_from("=i", mtu_reply, 16)
    # struct sockaddr in the union: a 2-byte family, then the hardware address.
    mac = ":".join(f"{byte:02x}" for byte in mac_reply[18:24])
    return Link(index=index, mac=mac, mtu=mtu)


@dataclass(frozen=True)
class Families:
    ipv4: bool
    ipv6: bool


def global_address_families(name: str) -> Families:
    """Whether link ``name`` has a global unicast IPv4 and IPv6 address; :class:`PodNetworkError` when
    it is missing."""
    index = link_index(name)
    if index is None:
        raise PodNetworkError(f"pod link ({name}) is missing")
    families = {
        family for family, address in _addresses(index) if global_unicast(ipaddress.ip_address(address))
    }
    return Families(ipv4=socket.AF_INET in families, ipv6=socket.AF_INET6 in families)


def _addresses(index: int) -> list[tuple[int, bytes]]:
    """(family, packed address) of every address on link ``index``, from an RTM_GETADDR dump."""
    sequence = 1
    request = _NLMSG_HEADER.pack(
        _NLMSG_HEADER.size + _IFADDRMSG.size, _RTM_GETADDR, _NLM_F_REQUEST | _NLM_F_DUMP, sequence, 0
    ) + _IFADDRMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
    found: list[tuple[int, bytes]] = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.sendto(request, (0, 0))
        while True:
            data = sock.recv(65536)
            offset = 0
            while offset + _NLMSG_HEADER.size <= len(data):
                length, kind, _, seq, _ = _NLMSG_HEADER.unpack_from(data, offset)
                if length < _NLMSG_HEADER.size:
                    raise PodNetworkError("netlink: a malformed address message")
                if seq == sequence:
                    if kind == _NLMSG_DONE:
                        return found
                    if kind == _NLMSG_ERROR:
                        (code,) = struct.unpack_from("=i", data, offset + _NLMSG_HEADER.size)
                        raise PodNetworkError(f"netlink: listing addresses failed: {os.strerror(-code)}")
                    if kind == _RTM_NEWADDR:
                        found.extend(_address(data[offset + _NLMSG_HEADER.size : offset + length], index))
                offset += (length + 3) & ~3


def _address(message: bytes, index: int) -> list[tuple[int, bytes]]:
    family, _, _, _, link_of = _IFADDRMSG.unpack_from(message)
    if link_of != index:
        return []
    offset = _IFADDRMSG.size
    while offset + _RTATTR.size <= len(message):
        length, kind = _RTATTR.unpack_from(message, offset)
        if length < _RTATTR.size:
            break
        if kind == _IFA_ADDRESS:
            return [(family, message[offset + _RTATTR.size : offset + length])]
        offset += (length + 3) & ~3
    return []
