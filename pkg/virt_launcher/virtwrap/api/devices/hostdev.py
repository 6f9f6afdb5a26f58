"""``<hostdev>``: PCI and mediated devices passed through from the host."""

from __future__ import annotations

from ..common import Address, Alias, BootOrder
from ..xmlmodel import XMLElement, attr, child, element


@element("source")
class HostDeviceSource(XMLElement):
    address: Address | None = child(Address)


@element("hostdev", go_xml_name=True)
class HostDevice(XMLElement):
    type: str | None = attr()
    managed: str | None = attr()
    mode: str | None = attr()
    model: str | None = attr()
    display: str | None = attr()
    ramfb: str | None = attr(go="RamFB")
    source: HostDeviceSource = child(HostDeviceSource, required=True)
    boot: BootOrder | None = child(BootOrder, go="BootOrder")
    address: Address | None = child(Address)
    alias: Alias | None = child(Alias)
