"""``<sysinfo>``: the SMBIOS tables the guest sees."""

from __future__ import annotations

from .xmlmodel import XMLElement, attr, children, element, text


@element("entry")
class Entry(XMLElement):
    name: str | None = attr()
    value: str | None = text()


@element("sysinfo")
class SysInfo(XMLElement):
    """SMBIOS tables. A section is written only when it has entries (libvirt rejects empty ones)."""

    type: str | None = attr()
    system: list[Entry] = children(Entry, wrapper="system")
    bios: list[Entry] = children(Entry, wrapper="bios", go="BIOS")
    baseboard: list[Entry] = children(Entry, wrapper="baseBoard", go="BaseBoard")
    chassis: list[Entry] = children(Entry, wrapper="chassis")
