"""IP and CIDR clean-up KubeVirt applies while decoding (DNS nameservers, DHCP NTP servers, pod CIDR).

Addresses are read as Kubernetes' "sloppy" parser does (IPv4 parts may carry leading zeros and are read
as decimal) and written back in Go's canonical form (IPv4-mapped IPv6 addresses print as IPv4, IPv6 is
compressed and lower-case). Text that is not an address is left untouched, as KubeVirt does.
"""

from __future__ import annotations

import ipaddress

__all__ = ["sanitize_cidr", "sanitize_ip"]

_IPV4_PARTS = 4
_MAX_OCTET = 255


def _parse_ipv4(text: str) -> ipaddress.IPv4Address | None:
    parts = text.split(".")
    if len(parts) != _IPV4_PARTS or not all(part.isdigit() and part.isascii() for part in parts):
        return None
    octets = [int(part) for part in parts]
    if any(octet > _MAX_OCTET for octet in octets):
        return None
    return ipaddress.IPv4Address(bytes(octets))


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if ":" not in text:
        return _parse_ipv4(text)
    if "%" in text:  # zones are not addresses here
        return None
    head, sep, tail = text.rpartition(":")
    if "." in tail:  # an embedded IPv4 part may carry leading zeros too
        embedded = _parse_ipv4(tail)
        if embedded is None:
            return None
        text = f"{head}{sep}{embedded}"
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        return None


def _go_string(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def sanitize_ip(text: str) -> str | None:
    """The canonical form of an IP address, or None when ``text`` is not one."""
    address = _parse_ip(text)
    return None if address is None else _go_string(address)


def sanitize_cidr(text: str) -> str | None:
    """``<address>/<prefix length>`` in canonical form (the address is kept, not masked), or None."""
    address_text, sep, length_text = text.partition("/")
    if not sep or not length_text.isdigit() or not length_text.isascii():
        return None
    address = _parse_ip(address_text)
    if address is None:
        return None
    length = int(length_text)
    if length > address.max_prefixlen:
        return None
    return f"{_go_string(address)}/{length}"
