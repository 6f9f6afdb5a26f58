"""``<controller>``: USB, SCSI and virtio-serial controllers."""

from __future__ import annotations

from ..common import Address, Alias
from ..xmlmodel import XMLElement, attr, child, element


@element("driver")
class ControllerDriver(XMLElement):
    iothread: int | None = attr(as_type=int, go="IOThread", go_pointer=True)
    queues: int | None = attr(as_type=int, go_pointer=True)
    iommu: str | None = attr(go="IOMMU")


@element("controller", go_extra={"PCIHole64": None})
class Controller(XMLElement):
    type: str | None = attr()
    index: str | None = attr()
    model: str | None = attr()
    driver: ControllerDriver | None = child(ControllerDriver)
    alias: Alias | None = child(Alias)
    address: Address | None = child(Address)
