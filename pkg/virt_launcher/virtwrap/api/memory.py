"""Guest memory: size, hotplug room and how it is backed (hugepages, memfd, sharing)."""

from __future__ import annotations

from .xmlmodel import XMLElement, attr, child, children, element, text


@element("memory")
class Memory(XMLElement):
    unit: str | None = attr()
    value: int | None = text(as_type=int)


@element("currentMemory")
class CurrentMemory(XMLElement):
    unit: str | None = attr()
    value: int | None = text(as_type=int)


@element("maxMemory")
class MaxMemory(XMLElement):
    unit: str | None = attr()
    slots: int | None = attr(as_type=int)
    value: int | None = text(as_type=int)


@element("page")
class HugePage(XMLElement):
    size: str | None = attr()
    unit: str | None = attr()
    nodeset: str | None = attr(go="NodeSet")


@element("hugepages")
class HugePages(XMLElement):
    pages: list[HugePage] = children(HugePage, go="HugePage")


@element("source")
class MemoryBackingSource(XMLElement):
    type: str | None = attr()


@element("access")
class MemoryBackingAccess(XMLElement):
    mode: str | None = attr()


@element("allocation")
class MemoryAllocation(XMLElement):
    mode: str | None = attr()


@element("nosharepages")
class NoSharePages(XMLElement):
    pass


@element("memoryBacking")
class MemoryBacking(XMLElement):
    hugepages: HugePages | None = child(HugePages, go="HugePages")
    source: MemoryBackingSource | None = child(MemoryBackingSource)
    access: MemoryBackingAccess | None = child(MemoryBackingAccess)
    allocation: MemoryAllocation | None = child(MemoryAllocation)
    nosharepages: NoSharePages | None = child(NoSharePages, go="NoSharePages")
