"""``<memballoon>``: the memory balloon and its statistics period."""

from __future__ import annotations

from ..common import Address
from ..xmlmodel import XMLElement, attr, child, element


@element("stats")
class Stats(XMLElement):
    period: int | None = attr(as_type=int)


@element("driver")
class IOMMUDriver(XMLElement):
    iommu: str | None = attr(go="IOMMU")


@element("memballoon")
class MemBalloon(XMLElement):
    model: str | None = attr()
    free_page_reporting: str | None = attr("freePageReporting")
    stats: Stats | None = child(Stats)
    address: Address | None = child(Address)
    driver: IOMMUDriver | None = child(IOMMUDriver)
