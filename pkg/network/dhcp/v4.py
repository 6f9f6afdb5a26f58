"""DHCPv4 for one client (RFC 2131/2132), pure: parsing a client's message and building the answer.

As KubeVirt's server does, the VM is the only client (its MAC), it always gets the same address with a
lease that never ends, and every option is sent whether or not the client asked for it: subnet mask,
router, name servers, search domains (RFC 3397), domain name (the longest search domain), host name,
MTU and classless static routes (RFC 3442; the default route last, so its gateway is reachable first).
"""

from __future__ import annotations

import ipaddress
import re
import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from kubevirt.network.dhcp.config import DHCPConfig
from kubevirt.network.dhcp.resolvconf import DNSSettings
from kubevirt.network.podnet import Route

SERVER_PORT = 67
CLIENT_PORT = 68
MAGIC_COOKIE = b"\x63\x82\x53\x63"
_HEADER = struct.Struct("!BBBB4sHH4s4s4s4s16s64s128s")
BOOTREQUEST, BOOTREPLY = 1, 2
BROADCAST_FLAG = 0x8000
INFINITE_LEASE = 0xFFFFFFFF

# Message types (option 53).
DISCOVER, OFFER, REQUEST, DECLINE, ACK, NAK, RELEASE, INFORM = range(1, 9)

# Option codes.
OPT_PAD, OPT_END = 0, 255
OPT_SUBNET_MASK = 1
OPT_ROUTER = 3
OPT_DNS = 6
OPT_HOSTNAME = 12
OPT_DOMAIN_NAME = 15
OPT_MTU = 26
OPT_LEASE_TIME = 51
OPT_MESSAGE_TYPE = 53
OPT_SERVER_ID = 54
OPT_DOMAIN_SEARCH = 119
OPT_CLASSLESS_ROUTES = 121
MAX_OPTION = 255
_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")  # one DNS label


class MalformedMessageError(ValueError):
    """Not a DHCPv4 client message this server can read."""


@dataclass(frozen=True)
class ClientMessage:
    xid: bytes
    flags: int
    ciaddr: bytes
    giaddr: bytes
    chaddr: bytes  # the 16-byte field as sent
    mac: str  # the client's hardware address, lower case with colons
    message_type: int


def parse(data: bytes) -> ClientMessage:
    if len(data) < _HEADER.size + len(MAGIC_COOKIE):
        raise MalformedMessageError("shorter than a DHCP header")
    op, htype, hlen, _hops, xid, _secs, flags, ciaddr, _yi, _si, giaddr, chaddr, _sname, _file = (
        _HEADER.unpack_from(data)
    )
    if op != BOOTREQUEST or hlen > 16:
        raise MalformedMessageError("not a BOOTREQUEST")
    if data[_HEADER.size : _HEADER.size + 4] != MAGIC_COOKIE:
        raise MalformedMessageError("no DHCP magic cookie")
    options = parse_options(data[_HEADER.size + 4 :])
    kind = options.get(OPT_MESSAGE_TYPE, b"")
    if len(kind) != 1:
        raise MalformedMessageError("no message type")
    mac = ":".join(f"{b:02x}" for b in chaddr[:hlen]) if htype == 1 else ""
    return ClientMessage(
        xid=xid, flags=flags, ciaddr=ciaddr, giaddr=giaddr, chaddr=chaddr, mac=mac, message_type=kind[0]
    )


def parse_options(data: bytes) -> dict[int, bytes]:
    options: dict[int, bytes] = {}
    offset = 0
    while offset < len(data):
        code = data[offset]
        if code == OPT_END:
            break
        if code == OPT_PAD:
            offset += 1
            continue
        if offset + 1 >= len(data):
            raise MalformedMessageError("truncated option")
        length = data[offset + 1]
        value = data[offset + 2 : offset + 2 + length]
        if len(value) != length:
            raise MalformedMessageError(f"option {code} is truncated")
        options[code] = options.get(code, b"") + value  # RFC 3396: repeated options concatenate
        offset += 2 + length
    return options


def search_domains_option(domains: Sequence[str]) -> bytes:
    """RFC 1035 names, uncompressed, one after the other."""
    encoded = b""
    for domain in domains:
        for label in domain.rstrip(".").split("."):
            encoded += bytes([len(label)]) + label.encode("ascii")
        encoded += b"\x00"
    return encoded


def classless_routes_option(routes: Sequence[Route]) -> bytes:
    """RFC 3442: prefix length, the significant octets of the destination, the gateway (0.0.0.0: on-link)."""
    default = [r for r in routes if r.destination in ("0.0.0.0/0", "default")]
    encoded = b""
    for route in [r for r in routes if r not in default] + default:
        network = ipaddress.IPv4Network(
            "0.0.0.0/0" if route.destination == "default" else route.destination, strict=False
        )
        octets = (network.prefixlen + 7) // 8
        gateway = ipaddress.IPv4Address(route.gateway or "0.0.0.0")
        encoded += bytes([network.prefixlen]) + network.network_address.packed[:octets] + gateway.packed
    return encoded


def server_options(config: DHCPConfig, dns: DNSSettings, hostname: str) -> dict[int, bytes]:
    """What every answer carries besides its type, server identifier and lease time."""
    if config.ip is None:
        raise ValueError("the DHCP configuration has no IPv4 address to hand out")
    options = {
        OPT_SUBNET_MASK: config.ip.netmask.packed,
        OPT_DNS: b"".join(ipaddress.IPv4Address(s).packed for s in dns.nameservers),
        OPT_MTU: struct.pack("!H", config.mtu or 1500),
    }
    if config.gateway:
        options[OPT_ROUTER] = ipaddress.IPv4Address(config.gateway).packed
    routes = classless_routes_option(config.routes)
    if routes:
        options[OPT_CLASSLESS_ROUTES] = routes
    search = search_domains_option(dns.search)
    if search and len(search) <= MAX_OPTION:
        options[OPT_DOMAIN_SEARCH] = search
    if dns.search:
        options[OPT_DOMAIN_NAME] = max(dns.search, key=len).encode("ascii")
    if _HOSTNAME.match(hostname):
        options[OPT_HOSTNAME] = hostname.encode("ascii")
    return {code: value for code, value in options.items() if value or code == OPT_DNS}


def answer_type(message: ClientMessage) -> int | None:
    """OFFER for a DISCOVER, ACK for a REQUEST; other messages get no answer."""
    return {DISCOVER: OFFER, REQUEST: ACK}.get(message.message_type)


def build_reply(
    message: ClientMessage, kind: int, *, server_ip: str, client_ip: str, options: dict[int, bytes]
) -> bytes:
    header = _HEADER.pack(
        BOOTREPLY,
        1,
        6,
        0,
        message.xid,
        0,
        message.flags,
        message.ciaddr if kind == ACK else b"\x00" * 4,
        socket.inet_aton(client_ip),
        socket.inet_aton(server_ip),
        message.giaddr,
        message.chaddr,
        b"",
        b"",
    )
    body = {
        OPT_MESSAGE_TYPE: bytes([kind]),
        OPT_SERVER_ID: socket.inet_aton(server_ip),
        OPT_LEASE_TIME: struct.pack("!I", INFINITE_LEASE),
        **options,
    }
    encoded = b"".join(_encode_option(code, value) for code, value in body.items())
    return header + MAGIC_COOKIE + encoded + bytes([OPT_END])


def _encode_option(code: int, value: bytes) -> bytes:
    # RFC 3396: a value longer than one option's 255 bytes is split over repeated options.
    chunks = [value[i : i + MAX_OPTION] for i in range(0, len(value), MAX_OPTION)] or [b""]
    return b"".join(bytes([code, len(chunk)]) + chunk for chunk in chunks)


def reply_destination(message: ClientMessage, source: str) -> str:
    """Broadcast to a client without an address (or one that asks for it), else its address."""
    if source == "0.0.0.0" or message.flags & BROADCAST_FLAG:
        return "255.255.255.255"
    return source
