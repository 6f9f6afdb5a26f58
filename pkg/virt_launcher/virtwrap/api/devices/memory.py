"""``<memory>`` under ``<devices>``: a memory device, here the virtio-mem device of memory hotplug."""

from __future__ import annotations

from ..common import Address, Alias
from ..memory import Memory
from ..xmlmodel import XMLElement, attr, child, element, text_child


@element("address")
class MemoryAddress(XMLElement):
    """Where the device's memory starts in the guest's physical address space."""

    base: str | None = attr()


@element("target")
class MemoryTarget(XMLElement):
    # Plain structs in Go: one left out reads as the zero struct there, and is not written here.
    size: Memory | None = child(Memory, "size", go_pointer=False)
    requested: Memory | None = child(Memory, "requested", go_pointer=False)
    current: Memory | None = child(Memory, "current", go_pointer=False)
    node: str | None = text_child()
    block: Memory | None = child(Memory, "block", go_pointer=False)
    address: MemoryAddress | None = child(MemoryAddress)


@element("memory", go_xml_name=True)
class MemoryDevice(XMLElement):
    model: str | None = attr()
    target: MemoryTarget | None = child(MemoryTarget)
    alias: Alias | None = child(Alias)
    address: Address | None = child(Address)
