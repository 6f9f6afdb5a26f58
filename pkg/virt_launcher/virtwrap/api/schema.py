"""The libvirt domain as KubeVirt writes and reads it.

Element and attribute order follow KubeVirt's ``virtwrap/api/schema.go`` (not libvirt's own order), so
the XML we write matches KubeVirt's byte for byte up to the empty elements libvirt rejects. Only what
the converter emits or a component reads is modelled; everything else is ignored when parsing.
"""

from __future__ import annotations

from typing import Any

from .xmlmodel import (
    KUBEVIRT_NS,
    QEMU_NS,
    XMLElement,
    attr,
    child,
    children,
    element,
    text,
    text_child,
)

USER_ALIAS_PREFIX = "ua-"

# ---------------------------------------------------------------- shared small elements


@element("alias")
class Alias(XMLElement):
    name: str | None = attr()

    @classmethod
    def user_defined(cls, name: str) -> Alias:
        """The alias KubeVirt gives a device named by the user (``ua-<name>``)."""
        return cls(name=USER_ALIAS_PREFIX + name)

    def _go_json(self) -> dict[str, Any]:
        # KubeVirt's Alias marshals itself: the name without the user prefix, and whether it had one.
        name = self.name or ""
        if name.startswith(USER_ALIAS_PREFIX):
            return {"Name": name[len(USER_ALIAS_PREFIX) :], "UserDefined": True}
        return {"Name": name, "UserDefined": False}


@element("address")
class Address(XMLElement):
    type: str | None = attr()
    domain: str | None = attr()
    bus: str | None = attr()
    slot: str | None = attr()
    function: str | None = attr()
    controller: str | None = attr()
    target: str | None = attr()
    unit: str | None = attr()
    uuid: str | None = attr(go="UUID")
    device: str | None = attr()
    cssid: str | None = attr(go="CSSID")
    ssid: str | None = attr(go="SSID")
    devno: str | None = attr(go="DevNo")


@element("boot")
class BootOrder(XMLElement):
    order: int | None = attr(as_type=int)


@element("model")
class Model(XMLElement):
    type: str | None = attr()


# ---------------------------------------------------------------- memory


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


# ---------------------------------------------------------------- os


@element("type")
class OSType(XMLElement):
    arch: str | None = attr()
    machine: str | None = attr()
    os: str | None = text(go="OS")


@element("table")
class ACPITable(XMLElement):
    type: str | None = attr()
    path: str | None = text()


@element("acpi")
class OSACPI(XMLElement):
    tables: list[ACPITable] = children(ACPITable, go="Table")


@element("smbios")
class SMBios(XMLElement):
    mode: str | None = attr()


@element("boot")
class Boot(XMLElement):
    dev: str | None = attr()


@element("bootmenu")
class BootMenu(XMLElement):
    enable: str | None = attr()
    timeout: int | None = attr(as_type=int, go_pointer=True)


@element("bios")
class BIOS(XMLElement):
    useserial: str | None = attr(go="UseSerial")


@element("loader")
class Loader(XMLElement):
    readonly: str | None = attr(go="ReadOnly")
    secure: str | None = attr()
    type: str | None = attr()
    path: str | None = text()


@element("nvram")
class NVRam(XMLElement):
    template: str | None = attr()
    path: str | None = text(go="NVRam")


@element("os")
class OS(XMLElement):
    type: OSType = child(OSType, required=True)
    acpi: OSACPI | None = child(OSACPI, go="ACPI")
    smbios: SMBios | None = child(SMBios, go="SMBios")
    boot_order: list[Boot] = children(Boot)
    bootmenu: BootMenu | None = child(BootMenu, go="BootMenu")
    bios: BIOS | None = child(BIOS, go="BIOS")
    loader: Loader | None = child(Loader, go="BootLoader")
    nvram: NVRam | None = child(NVRam, go="NVRam")
    kernel: str | None = text_child()
    initrd: str | None = text_child()
    cmdline: str | None = text_child(go="KernelArgs")


# ---------------------------------------------------------------- sysinfo


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


# ---------------------------------------------------------------- devices: disks


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


# ---------------------------------------------------------------- devices: interfaces


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


# ---------------------------------------------------------------- devices: character devices


@element("source")
class ChannelSource(XMLElement):
    mode: str | None = attr()
    path: str | None = attr()


@element("target")
class ChannelTarget(XMLElement):
    name: str | None = attr()
    type: str | None = attr()
    address: str | None = attr()
    port: int | None = attr(as_type=int)
    state: str | None = attr()


@element("channel")
class Channel(XMLElement):
    type: str | None = attr()
    source: ChannelSource | None = child(ChannelSource)
    target: ChannelTarget | None = child(ChannelTarget)


@element("target")
class SerialTarget(XMLElement):
    port: int | None = attr(as_type=int, go_pointer=True)


@element("source")
class SerialSource(XMLElement):
    mode: str | None = attr()
    path: str | None = attr()


@element("log")
class SerialLog(XMLElement):
    file: str | None = attr()
    append: str | None = attr()


@element("serial")
class Serial(XMLElement):
    type: str | None = attr()
    target: SerialTarget | None = child(SerialTarget)
    source: SerialSource | None = child(SerialSource)
    alias: Alias | None = child(Alias)
    log: SerialLog | None = child(SerialLog)


@element("target")
class ConsoleTarget(XMLElement):
    type: str | None = attr(go_pointer=True)
    port: int | None = attr(as_type=int, go_pointer=True)


@element("source")
class ConsoleSource(XMLElement):
    mode: str | None = attr()
    path: str | None = attr()


@element("console")
class Console(XMLElement):
    type: str | None = attr()
    target: ConsoleTarget | None = child(ConsoleTarget)
    source: ConsoleSource | None = child(ConsoleSource)
    alias: Alias | None = child(Alias)


# ---------------------------------------------------------------- devices: the rest


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


@element("panic")
class PanicDevice(XMLElement):
    model: str | None = attr(go_pointer=True)


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


@element("model")
class VideoModel(XMLElement):
    type: str | None = attr()
    heads: int | None = attr(as_type=int, go_pointer=True)
    ram: int | None = attr(as_type=int, go_pointer=True)
    vram: int | None = attr(as_type=int, go="VRam", go_pointer=True)
    vgamem: int | None = attr(as_type=int, go="VGAMem", go_pointer=True)


@element("video")
class Video(XMLElement):
    model: VideoModel = child(VideoModel, required=True)


@element("listen")
class GraphicsListen(XMLElement):
    type: str | None = attr()
    address: str | None = attr()
    network: str | None = attr()
    socket: str | None = attr()


@element("graphics")
class Graphics(XMLElement):
    autoport: str | None = attr(go="AutoPort")
    default_mode: str | None = attr("defaultMode")
    passwd_valid_to: str | None = attr("passwdValidTo")
    port: int | None = attr(as_type=int)
    tls_port: int | None = attr("tlsPort", as_type=int, go="TLSPort")
    type: str | None = attr()
    listen: GraphicsListen | None = child(GraphicsListen)


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


@element("input")
class Input(XMLElement):
    type: str | None = attr()
    bus: str | None = attr()
    model: str | None = attr()
    alias: Alias | None = child(Alias)
    address: Address | None = child(Address)


@element("watchdog")
class Watchdog(XMLElement):
    model: str | None = attr()
    action: str | None = attr()
    alias: Alias | None = child(Alias)
    address: Address | None = child(Address)


@element("backend")
class RngBackend(XMLElement):
    model: str | None = attr()
    source: str | None = text()


@element("rng")
class Rng(XMLElement):
    model: str | None = attr()
    backend: RngBackend | None = child(RngBackend)
    address: Address | None = child(Address)
    driver: IOMMUDriver | None = child(IOMMUDriver)


@element("source")
class FilesystemSource(XMLElement):
    dir: str | None = attr()
    socket: str | None = attr()


@element("target")
class FilesystemTarget(XMLElement):
    dir: str | None = attr()


@element("driver")
class FilesystemDriver(XMLElement):
    type: str | None = attr()
    queue: str | None = attr()


@element("filesystem", go_extra={"Binary": None})
class FilesystemDevice(XMLElement):
    type: str | None = attr()
    access_mode: str | None = attr("accessMode")
    source: FilesystemSource | None = child(FilesystemSource)
    target: FilesystemTarget | None = child(FilesystemTarget)
    driver: FilesystemDriver | None = child(FilesystemDriver)


@element("source")
class RedirectedDeviceSource(XMLElement):
    mode: str | None = attr()
    path: str | None = attr()


@element("redirdev")
class RedirectedDevice(XMLElement):
    type: str | None = attr()
    bus: str | None = attr()
    source: RedirectedDeviceSource = child(RedirectedDeviceSource, required=True)


@element("sound")
class SoundCard(XMLElement):
    model: str | None = attr()
    alias: Alias | None = child(Alias)


@element("backend")
class TPMBackend(XMLElement):
    type: str | None = attr()
    version: str | None = attr()
    persistent_state: str | None = attr()


@element("tpm")
class TPM(XMLElement):
    model: str | None = attr()
    backend: TPMBackend = child(TPMBackend, required=True)


@element("cid")
class CID(XMLElement):
    auto: str | None = attr()
    address: int | None = attr(as_type=int)


@element("vsock")
class VSOCK(XMLElement):
    model: str | None = attr()
    cid: CID = child(CID, required=True, go="CID")


@element("devices", go_extra={"Memory": None})
class Devices(XMLElement):
    emulator: str | None = text_child()
    interfaces: list[Interface] = children(Interface)
    channels: list[Channel] = children(Channel)
    host_devices: list[HostDevice] = children(HostDevice)
    panic_devices: list[PanicDevice] = children(PanicDevice)
    controllers: list[Controller] = children(Controller)
    video: list[Video] = children(Video)
    graphics: list[Graphics] = children(Graphics)
    ballooning: MemBalloon | None = child(MemBalloon)
    disks: list[Disk] = children(Disk)
    inputs: list[Input] = children(Input)
    serials: list[Serial] = children(Serial)
    consoles: list[Console] = children(Console)
    watchdogs: list[Watchdog] = children(Watchdog)
    rng: Rng | None = child(Rng)
    filesystems: list[FilesystemDevice] = children(FilesystemDevice)
    redirs: list[RedirectedDevice] = children(RedirectedDevice)
    sound_cards: list[SoundCard] = children(SoundCard)
    tpms: list[TPM] = children(TPM, go="TPMs")
    vsock: VSOCK | None = child(VSOCK, go="VSOCK")


# ---------------------------------------------------------------- clock, resource, qemu, metadata


@element("timer")
class Timer(XMLElement):
    name: str | None = attr()
    tickpolicy: str | None = attr(go="TickPolicy")
    present: str | None = attr()
    track: str | None = attr()
    frequency: str | None = attr()


@element("clock")
class Clock(XMLElement):
    offset: str | None = attr()
    timezone: str | None = attr()
    adjustment: str | None = attr()
    timers: list[Timer] = children(Timer, go="Timer")


@element("resource")
class Resource(XMLElement):
    partition: str | None = text_child()


@element("qemu:env")
class QEMUEnv(XMLElement):
    name: str | None = attr()
    value: str | None = attr()


@element("qemu:arg")
class QEMUArg(XMLElement):
    value: str | None = attr()


@element("qemu:commandline", namespace=QEMU_NS)
class Commandline(XMLElement):
    env: list[QEMUEnv] = children(QEMUEnv, go="QEMUEnv")
    args: list[QEMUArg] = children(QEMUArg, go="QEMUArg")


@element("graceperiod", namespace=KUBEVIRT_NS)
class GracePeriodMetadata(XMLElement):
    deletion_grace_period_seconds: int | None = text_child("deletionGracePeriodSeconds", as_type=int)
    deletion_timestamp: str | None = text_child("deletionTimestamp", go_time=True)
    marked_for_graceful_shutdown: bool | None = text_child(
        "markedForGracefulShutdown", as_type=bool, go_pointer=True
    )


@element("migration", namespace=KUBEVIRT_NS)
class MigrationMetadata(XMLElement):
    uid: str | None = text_child(go="UID")
    start_timestamp: str | None = text_child("startTimestamp", go_time=True)
    end_timestamp: str | None = text_child("endTimestamp", go_time=True)
    # Older KubeVirt releases carry ``completed`` (a JSON key newer virt-handlers ignore).
    completed: bool | None = text_child(as_type=bool)
    failed: bool | None = text_child(as_type=bool)
    failure_reason: str | None = text_child("failureReason")
    abort_status: str | None = text_child("abortStatus")
    mode: str | None = text_child()


@element("accessCredential", namespace=KUBEVIRT_NS)
class AccessCredentialMetadata(XMLElement):
    succeeded: bool | None = text_child(as_type=bool)
    message: str | None = text_child()


@element("memoryDump", namespace=KUBEVIRT_NS)
class MemoryDumpMetadata(XMLElement):
    file_name: str | None = text_child("fileName")
    start_timestamp: str | None = text_child("startTimestamp", go_time=True)
    end_timestamp: str | None = text_child("endTimestamp", go_time=True)
    completed: bool | None = text_child(as_type=bool)
    failed: bool | None = text_child(as_type=bool)
    failure_reason: str | None = text_child("failureReason")


@element("kubevirt", namespace=KUBEVIRT_NS, declare=f' xmlns="{KUBEVIRT_NS}"')
class KubeVirtMetadata(XMLElement):
    uid: str | None = text_child(default="", go="UID")
    grace_period: GracePeriodMetadata | None = child(GracePeriodMetadata)
    migration: MigrationMetadata | None = child(MigrationMetadata)
    access_credential: AccessCredentialMetadata | None = child(AccessCredentialMetadata)
    memory_dump: MemoryDumpMetadata | None = child(MemoryDumpMetadata)


@element("metadata")
class Metadata(XMLElement):
    kubevirt: KubeVirtMetadata = child(KubeVirtMetadata, required=True, go="KubeVirt")


# ---------------------------------------------------------------- features


@element("state")
class FeatureState(XMLElement):
    """A ``state="on|off"`` switch; the tag is given by the field that holds it."""

    state: str | None = attr()


@element("enabled")
class FeatureEnabled(XMLElement):
    """A switch that is on by being present (``<acpi/>``); the tag is given by the field."""


@element("spinlocks")
class FeatureSpinlocks(XMLElement):
    state: str | None = attr()
    retries: int | None = attr(as_type=int, go_pointer=True)


@element("stimer")
class SyNICTimer(XMLElement):
    state: str | None = attr()
    direct: FeatureState | None = child(FeatureState, "direct")


@element("vendor_id")
class FeatureVendorID(XMLElement):
    state: str | None = attr()
    value: str | None = attr()


@element("hyperv")
class FeatureHyperv(XMLElement):
    mode: str | None = attr()
    relaxed: FeatureState | None = child(FeatureState, "relaxed")
    vapic: FeatureState | None = child(FeatureState, "vapic", go="VAPIC")
    spinlocks: FeatureSpinlocks | None = child(FeatureSpinlocks)
    vpindex: FeatureState | None = child(FeatureState, "vpindex", go="VPIndex")
    runtime: FeatureState | None = child(FeatureState, "runtime")
    synic: FeatureState | None = child(FeatureState, "synic", go="SyNIC")
    synic_timer: SyNICTimer | None = child(SyNICTimer, go="SyNICTimer")
    reset: FeatureState | None = child(FeatureState, "reset")
    vendor_id: FeatureVendorID | None = child(FeatureVendorID, go="VendorID")
    frequencies: FeatureState | None = child(FeatureState, "frequencies")
    reenlightenment: FeatureState | None = child(FeatureState, "reenlightenment")
    tlbflush: FeatureState | None = child(FeatureState, "tlbflush", go="TLBFlush")
    ipi: FeatureState | None = child(FeatureState, "ipi", go="IPI")
    evmcs: FeatureState | None = child(FeatureState, "evmcs", go="EVMCS")


@element("kvm")
class FeatureKVM(XMLElement):
    hidden: FeatureState | None = child(FeatureState, "hidden")
    hint_dedicated: FeatureState | None = child(FeatureState, "hint-dedicated")


@element("features")
class Features(XMLElement):
    acpi: FeatureEnabled | None = child(FeatureEnabled, "acpi", go="ACPI")
    apic: FeatureEnabled | None = child(FeatureEnabled, "apic", go="APIC")
    hyperv: FeatureHyperv | None = child(FeatureHyperv)
    smm: FeatureEnabled | None = child(FeatureEnabled, "smm", go="SMM")
    kvm: FeatureKVM | None = child(FeatureKVM, go="KVM")
    pvspinlock: FeatureState | None = child(FeatureState, "pvspinlock", go="PVSpinlock")
    pmu: FeatureState | None = child(FeatureState, "pmu", go="PMU")
    vmport: FeatureState | None = child(FeatureState, "vmport", go="VMPort")


# ---------------------------------------------------------------- cpu


@element("feature")
class CPUFeature(XMLElement):
    name: str | None = attr()
    policy: str | None = attr()


@element("topology")
class CPUTopology(XMLElement):
    sockets: int | None = attr(as_type=int)
    cores: int | None = attr(as_type=int)
    threads: int | None = attr(as_type=int)


@element("cell")
class NUMACell(XMLElement):
    id: str | None = attr(go="ID")
    cpus: str | None = attr(go="CPUs")
    memory: int | None = attr(as_type=int)
    unit: str | None = attr()
    mem_access: str | None = attr("memAccess", go="MemoryAccess")


@element("numa")
class NUMA(XMLElement):
    cells: list[NUMACell] = children(NUMACell)


@element("cpu")
class CPU(XMLElement):
    mode: str | None = attr()
    model: str | None = text_child()
    features: list[CPUFeature] = children(CPUFeature)
    topology: CPUTopology | None = child(CPUTopology)
    numa: NUMA | None = child(NUMA, go="NUMA")


@element("vcpu")
class VCPU(XMLElement):
    placement: str | None = attr()
    cpus: int | None = text(as_type=int, go="CPUs")


@element("vcpu")
class VCPUsVCPU(XMLElement):
    id: int | None = attr(as_type=int, go="ID")
    enabled: str | None = attr()
    hotpluggable: str | None = attr()
    order: int | None = attr(as_type=int)


@element("vcpus")
class VCPUs(XMLElement):
    vcpus: list[VCPUsVCPU] = children(VCPUsVCPU, go="VCPU")


@element("vcpupin")
class CPUTuneVCPUPin(XMLElement):
    vcpu: int | None = attr(as_type=int, go="VCPU")
    cpuset: str | None = attr(go="CPUSet")


@element("iothreadpin")
class CPUTuneIOThreadPin(XMLElement):
    iothread: int | None = attr(as_type=int, go="IOThread")
    cpuset: str | None = attr(go="CPUSet")


@element("emulatorpin")
class CPUEmulatorPin(XMLElement):
    cpuset: str | None = attr(go="CPUSet")


@element("cputune")
class CPUTune(XMLElement):
    vcpupin: list[CPUTuneVCPUPin] = children(CPUTuneVCPUPin, go="VCPUPin")
    iothreadpin: list[CPUTuneIOThreadPin] = children(CPUTuneIOThreadPin, go="IOThreadPin")
    emulatorpin: CPUEmulatorPin | None = child(CPUEmulatorPin, go="EmulatorPin")


@element("memory")
class NumaTuneMemory(XMLElement):
    mode: str | None = attr()
    nodeset: str | None = attr(go="NodeSet")


@element("memnode")
class MemNode(XMLElement):
    cellid: int | None = attr(as_type=int, go="CellID")
    mode: str | None = attr()
    nodeset: str | None = attr(go="NodeSet")


@element("numatune")
class NUMATune(XMLElement):
    memory: NumaTuneMemory | None = child(NumaTuneMemory, go_pointer=False)
    memnodes: list[MemNode] = children(MemNode, go="MemNodes")


@element("iothreads")
class IOThreads(XMLElement):
    count: int | None = text(as_type=int, go="IOThreads")


@element("launchSecurity")
class LaunchSecurity(XMLElement):
    type: str | None = attr()
    dh_cert: str | None = text_child("dhCert", go="DHCert")
    session: str | None = text_child()
    cbitpos: str | None = text_child()
    reduced_phys_bits: str | None = text_child("reducedPhysBits")
    policy: str | None = text_child()


# ---------------------------------------------------------------- the domain


@element("domain", declare=f' xmlns:qemu="{QEMU_NS}"', go_xml_name=True, go_extra={"XmlNS": ""})
class Domain(XMLElement):
    """``<domain>``: what the converter produces and what is read back from libvirt."""

    type: str | None = attr()
    name: str | None = text_child()
    uuid: str | None = text_child(go="UUID")
    memory: Memory = child(Memory, required=True)
    current_memory: CurrentMemory | None = child(CurrentMemory)
    max_memory: MaxMemory | None = child(MaxMemory)
    memory_backing: MemoryBacking | None = child(MemoryBacking)
    os: OS = child(OS, required=True, go="OS")
    sysinfo: SysInfo | None = child(SysInfo, go="SysInfo")
    devices: Devices = child(Devices, required=True)
    clock: Clock | None = child(Clock)
    resource: Resource | None = child(Resource)
    qemu_commandline: Commandline | None = child(Commandline, go="QEMUCmd", go_unread=True)
    metadata: Metadata = child(Metadata, required=True)
    features: Features | None = child(Features)
    cpu: CPU = child(CPU, required=True, go="CPU")
    vcpu: VCPU | None = child(VCPU, go="VCPU")
    vcpus: VCPUs | None = child(VCPUs, go="VCPUs")
    cputune: CPUTune | None = child(CPUTune, go="CPUTune")
    numatune: NUMATune | None = child(NUMATune, go="NUMATune")
    iothreads: IOThreads | None = child(IOThreads, go="IOThreads")
    launch_security: LaunchSecurity | None = child(LaunchSecurity)
