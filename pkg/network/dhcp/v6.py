"""DHCPv6 for one client (RFC 8415), pure: the masquerade binding's VM address behind the bridge.

As KubeVirt's server does: a SOLICIT is answered with an ADVERTISE (a REPLY when the client asked for
rapid commit), every other client message with a REPLY; each carries the client's identifier, the
server's (a DUID-LL of the bridge's MAC) and one IA_NA with the VM's address, valid forever.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

SERVER_PORT = 547
CLIENT_PORT = 546
ALL_SERVERS_AND_RELAYS = "ff02::1:2"
INFINITE = 0xFFFFFFFF

SOLICIT, ADVERTISE, REQUEST, CONFIRM, RENEW, REBIND, REPLY = 1, 2, 3, 4, 5, 6, 7
RELEASE, DECLINE, RECONFIGURE, INFORMATION_REQUEST = 8, 9, 10, 11
CLIENT_MESSAGES = (SOLICIT, REQUEST, CONFIRM, RENEW, REBIND, RELEASE, DECLINE, INFORMATION_REQUEST)

OPT_CLIENT_ID = 1
OPT_SERVER_ID = 2
OPT_IA_NA = 3
OPT_IAADDR = 5
OPT_RAPID_COMMIT = 14


class MalformedMessageError(ValueError):
    """Not a DHCPv6 client message this server can read."""


@dataclass(frozen=True)
class ClientMessage:
    message_type: int
    transaction: bytes
    options: dict[int, bytes]

    @property
    def iaid(self) -> bytes:
        ia = self.options.get(OPT_IA_NA, b"")
        return ia[:4] if len(ia) >= 4 else b"\x00" * 4


def parse(data: bytes) -> ClientMessage:
    if len(data) < 4 or data[0] not in CLIENT_MESSAGES:
        raise MalformedMessageError("not a DHCPv6 client message")
    options: dict[int, bytes] = {}
    offset = 4
    while offset + 4 <= len(data):
        code, length = struct.unpack_from("!HH", data, offset)
        value = data[offset + 4 : offset + 4 + length]
        if len(value) != length:
            raise MalformedMessageError(f"option {code} is truncated")
        options.setdefault(code, value)
        offset += 4 + length
    return ClientMessage(message_type=data[0], transaction=data[1:4], options=options)


def server_duid(mac: str) -> bytes:
    """DUID-LL (type 3) for Ethernet (hardware type 1)."""
    return struct.pack("!HH", 3, 1) + bytes.fromhex(mac.replace(":", ""))


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("!HH", code, len(value)) + value


def build_reply(message: ClientMessage, *, client_ip: str, server_mac: str) -> bytes:
    rapid = message.message_type == SOLICIT and OPT_RAPID_COMMIT in message.options
    kind = ADVERTISE if message.message_type == SOLICIT and not rapid else REPLY
    address = ipaddress.IPv6Address(client_ip).packed + struct.pack("!II", INFINITE, INFINITE)
    ia_na = message.iaid + struct.pack("!II", INFINITE, INFINITE) + _option(OPT_IAADDR, address)
    body = b""
    if OPT_CLIENT_ID in message.options:
        body += _option(OPT_CLIENT_ID, message.options[OPT_CLIENT_ID])
    body += _option(OPT_SERVER_ID, server_duid(server_mac))
    body += _option(OPT_IA_NA, ia_na)
    if rapid:
        body += _option(OPT_RAPID_COMMIT, b"")
    return bytes([kind]) + message.transaction + body
