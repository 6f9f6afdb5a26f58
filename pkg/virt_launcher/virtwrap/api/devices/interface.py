"""``<interface>``: network interfaces and their sources, targets, drivers and ROMs."""

from __future__ import annotations

from ..common import Address, Alias, BootOrder, Model
from ..xmlmodel import XMLElement, attr, child, element


@element("source")
class InterfaceSource(XMLElement):
    network: str | None = attr()
    dev: str | None = attr(go="Device")
    bridge: str | None = attr()
    mode: str | None = attr()
    address: Address | None = child(Address)


@element("target")
class InterfaceTarget(XMLElement):
    dev: str | None = attr(go="Device")
    managed: str | None = attr()


@element("mac")
class MAC(XMLElement):
    address: str | None = attr(go="MAC")


@element("mtu")
class MTU(XMLElement):
    size: str | None = attr()


@element("link")
class LinkState(XMLElement):
    state: str | None = attr()


@element("filterref")
class FilterRef(XMLElement):
    filter: str | None = attr()


@element("driver")
class InterfaceDriver(XMLElement):
    name: str | None = attr()
    queues: int | None = attr(as_type=int, go_pointer=True)
    iommu: str | None = attr(go="IOMMU")


@element("rom")
class Rom(XMLElement):
    enabled: str | None = attr()


@element("acpi")
class ACPI(XMLElement):
    index: int | None = attr(as_type=int)


@element("backend")
class InterfaceBackend(XMLElement):
    type: str | None = attr()
    log_file: str | None = attr("logFile")


@element("interface", go_xml_name=True, go_extra={"BandWidth": None, "PortForward": None})
class Interface(XMLElement):
    """A NIC. The converter leaves ``source`` empty; libvirt's schema forbids that, so it is optional."""

    type: str | None = attr()
    trust_guest_rx_filters: str | None = attr("trustGuestRxFilters")
    address: Address | None = child(Address)
    source: InterfaceSource | None = child(InterfaceSource, go_pointer=False)
    target: InterfaceTarget | None = child(InterfaceTarget)
    model: Model | None = child(Model)
    mac: MAC | None = child(MAC, go="MAC")
    mtu: MTU | None = child(MTU, go="MTU")
    boot: BootOrder | None = child(BootOrder, go="BootOrder")
    link: LinkState | None = child(LinkState, go="LinkState")
    filterref: FilterRef | None = child(FilterRef, go="FilterRef")
    alias: Alias | None = child(Alias)
    driver: InterfaceDriver | None = child(InterfaceDriver)
    rom: Rom | None = child(Rom)
    acpi: ACPI | None = child(ACPI, go="ACPI")
    backend: InterfaceBackend | None = child(InterfaceBackend)
