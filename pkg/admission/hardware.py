"""Parsers for hardware identifiers as KubeVirt (and Go's ``net``) accept them."""

from __future__ import annotations

import re

_PCI = re.compile(r"^([\da-fA-F]{4}):([\da-fA-F]{2}):([\da-fA-F]{2})\.([0-7])$")
_HEX2 = re.compile(r"^[0-9a-fA-F]{2}$")
_HEX4 = re.compile(r"^[0-9a-fA-F]{4}$")


def is_pci_address(text: str) -> bool:
    """``DDDD:BB:DD.F`` (``hwutil.ParsePciAddress``)."""
    return bool(_PCI.match(text))


def parse_mac(text: str) -> bytes | None:
    """Go's ``net.ParseMAC``: EUI-48, EUI-64 or 20-octet IPoIB, colon/hyphen or dotted form."""
    if len(text) < 14:
        return None
    if text[2] in ":-":
        if (len(text) + 1) % 3 != 0:
            return None
        groups = text.split(text[2])
        if len(groups) not in (6, 8, 20) or not all(_HEX2.match(g) for g in groups):
            return None
        return bytes(int(g, 16) for g in groups)
    if text[4] == ".":
        if (len(text) + 1) % 5 != 0:
            return None
        groups = text.split(".")
        if len(groups) * 2 not in (6, 8, 20) or not all(_HEX4.match(g) for g in groups):
            return None
        return b"".join(int(g, 16).to_bytes(2, "big") for g in groups)
    return None
