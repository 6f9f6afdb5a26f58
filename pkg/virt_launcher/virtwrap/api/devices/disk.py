"""``<disk>``: sources, targets, drivers, IO threads, backing stores and block sizes."""

from __future__ import annotations

from ..common import Address, Alias, BootOrder
from ..xmlmodel import XMLElement, attr, child, children, element, text_child


@element("host")
class DiskSourceHost(XMLElement):
    name: str | None = attr()
    port: str | None = attr()


@element("source")
class SourceReservations(XMLElement):
    type: str | None = attr()
    path: str | None = attr()
    mode: str | None = attr()


@element("reservations")
class Reservations(XMLElement):
    managed: str | None = attr()
    source: SourceReservations | None = child(SourceReservations, go="SourceReservations")


@element("source", go_extra={"Slices": None, "DataStore": None})
class DiskSource(XMLElement):
    dev: str | None = attr()
    file: str | None = attr()
    startup_policy: str | None = attr("startupPolicy")
    protocol: str | None = attr()
    name: str | None = attr()
    host: DiskSourceHost | None = child(DiskSourceHost)
    reservations: Reservations | None = child(Reservations)


@element("target")
class DiskTarget(XMLElement):
    bus: str | None = attr()
    dev: str | None = attr(go="Device")
    tray: str | None = attr()


@element("iothread")
class DiskIOThread(XMLElement):
    id: int | None = attr(as_type=int)


@element("iothreads")
class DiskIOThreads(XMLElement):
    iothreads: list[DiskIOThread] = children(DiskIOThread, go="IOThread")


@element("driver")
class DiskDriver(XMLElement):
    cache: str | None = attr()
    error_policy: str | None = attr()
    io: str | None = attr(go="IO")
    name: str | None = attr()
    type: str | None = attr()
    iothread: int | None = attr(as_type=int, go="IOThread", go_pointer=True)
    queues: int | None = attr(as_type=int, go_pointer=True)
    discard: str | None = attr()
    iommu: str | None = attr(go="IOMMU")
    iothreads: DiskIOThreads | None = child(DiskIOThreads, go="IOThreads")


@element("readonly")
class ReadOnly(XMLElement):
    pass


@element("shareable")
class Shareable(XMLElement):
    pass


@element("format")
class BackingStoreFormat(XMLElement):
    type: str | None = attr()


@element("backingStore")
class BackingStore(XMLElement):
    type: str | None = attr()
    format: BackingStoreFormat | None = child(BackingStoreFormat)
    source: DiskSource | None = child(DiskSource)


@element("blockio")
class BlockIO(XMLElement):
    logical_block_size: int | None = attr(as_type=int)
    physical_block_size: int | None = attr(as_type=int)
    discard_granularity: int | None = attr(as_type=int, go_pointer=True)


@element(
    "disk", go_extra={"Auth": None, "FilesystemOverhead": None, "Capacity": None, "ExpandDisksEnabled": False}
)
class Disk(XMLElement):
    device: str | None = attr()
    snapshot: str | None = attr()
    type: str | None = attr()
    model: str | None = attr()
    source: DiskSource = child(DiskSource, required=True)
    target: DiskTarget = child(DiskTarget, required=True)
    serial: str | None = text_child()
    driver: DiskDriver | None = child(DiskDriver)
    readonly: ReadOnly | None = child(ReadOnly, go="ReadOnly")
    alias: Alias | None = child(Alias)
    backing_store: BackingStore | None = child(BackingStore)
    boot: BootOrder | None = child(BootOrder, go="BootOrder")
    address: Address | None = child(Address)
    blockio: BlockIO | None = child(BlockIO, go="BlockIO")
    shareable: Shareable | None = child(Shareable)
