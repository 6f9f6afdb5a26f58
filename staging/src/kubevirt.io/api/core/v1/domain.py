"""The guest hardware of a VMI: ``spec.domain`` (CPU, memory, firmware, clock, features, devices)."""

from __future__ import annotations

from typing import Final

from pydantic import ConfigDict, Field, field_validator

from kubevirt_api.base import ApiModel, Int, Int32, Uint, Uint32
from kubevirt_api.core.v1.sanitizers import sanitize_ip
from kubevirt_api.resource import Quantity

__all__ = [
    "ACPI",
    "BIOS",
    "CPU",
    "EFI",
    "GPU",
    "NUMA",
    "SEV",
    "BlockSize",
    "Bootloader",
    "CDRomTarget",
    "CPUFeature",
    "Chassis",
    "ClaimRequest",
    "ClientPassthroughDevices",
    "Clock",
    "ClockOffset",
    "ClockOffsetUTC",
    "CustomBlockSize",
    "DHCPOptions",
    "DHCPPrivateOptions",
    "DeprecatedInterfaceMacvtap",
    "DeprecatedInterfacePasst",
    "DeprecatedInterfaceSlirp",
    "Devices",
    "Diag288Watchdog",
    "Disk",
    "DiskBus",
    "DiskDevice",
    "DiskErrorPolicy",
    "DiskIOThreads",
    "DiskTarget",
    "DomainSpec",
    "DownwardMetrics",
    "DriverCache",
    "DriverIO",
    "FeatureAPIC",
    "FeatureHyperv",
    "FeatureKVM",
    "FeatureSpinlocks",
    "FeatureState",
    "FeatureVendorID",
    "Features",
    "Filesystem",
    "FilesystemVirtiofs",
    "Firmware",
    "HPETTickPolicy",
    "HPETTimer",
    "HostDevice",
    "Hugepages",
    "HyperVPassthrough",
    "HypervTimer",
    "I6300ESBWatchdog",
    "IOThreadsPolicy",
    "Input",
    "InputBus",
    "InputType",
    "Interface",
    "InterfaceBindingMethod",
    "InterfaceBridge",
    "InterfaceMasquerade",
    "InterfaceSRIOV",
    "InterfaceState",
    "KVMTimer",
    "KernelBoot",
    "KernelBootContainer",
    "LaunchSecurity",
    "LunTarget",
    "Machine",
    "Memory",
    "NUMAGuestMappingPassthrough",
    "PITTickPolicy",
    "PITTimer",
    "PanicDevice",
    "PanicDeviceModel",
    "PluginBinding",
    "Port",
    "RTCTickPolicy",
    "RTCTimer",
    "RTCTimerTrack",
    "Realtime",
    "ResourceRequirements",
    "Rng",
    "SEVAttestation",
    "SEVPolicy",
    "SoundDevice",
    "SyNICTimer",
    "TPMDevice",
    "Timer",
    "TrayState",
    "VGPUDisplayOptions",
    "VGPUOptions",
    "VideoDevice",
    "Watchdog",
    "WatchdogAction",
    "WatchdogDevice",
]


class DiskBus:
    """Values of the string field typed ``DiskBus``."""

    VIRTIO: Final = "virtio"  # declared untyped in Go (``VirtIO``), valid for disks and inputs
    SCSI: Final = "scsi"
    SATA: Final = "sata"
    USB: Final = "usb"


class DiskErrorPolicy:
    """Values of the string field typed ``DiskErrorPolicy``."""

    STOP: Final = "stop"
    IGNORE: Final = "ignore"
    REPORT: Final = "report"
    ENOSPACE: Final = "enospace"


class DriverCache:
    """Values of the string field typed ``DriverCache``."""

    NONE: Final = "none"
    WRITE_THROUGH: Final = "writethrough"
    WRITE_BACK: Final = "writeback"


class DriverIO:
    """Values of the string field typed ``DriverIO``."""

    THREADS: Final = "threads"
    NATIVE: Final = "native"


class HPETTickPolicy:
    """Values of the string field typed ``HPETTickPolicy``."""

    DELAY: Final = "delay"
    CATCHUP: Final = "catchup"
    MERGE: Final = "merge"
    DISCARD: Final = "discard"


class IOThreadsPolicy:
    """Values of the string field typed ``IOThreadsPolicy``."""

    SHARED: Final = "shared"
    AUTO: Final = "auto"
    SUPPLEMENTAL_POOL: Final = "supplementalPool"


class InputBus:
    """Values of the string field typed ``InputBus``."""

    USB: Final = "usb"
    VIRTIO: Final = "virtio"


class InputType:
    """Values of the string field typed ``InputType``."""

    TABLET: Final = "tablet"
    KEYBOARD: Final = "keyboard"


class InterfaceState:
    """Values of the string field typed ``InterfaceState``."""

    ABSENT: Final = "absent"
    LINK_UP: Final = "up"
    LINK_DOWN: Final = "down"


class PITTickPolicy:
    """Values of the string field typed ``PITTickPolicy``."""

    DELAY: Final = "delay"
    CATCHUP: Final = "catchup"
    DISCARD: Final = "discard"


class PanicDeviceModel:
    """Values of the string field typed ``PanicDeviceModel``."""

    HYPERV: Final = "hyperv"
    ISA: Final = "isa"
    PVPANIC: Final = "pvpanic"


class RTCTickPolicy:
    """Values of the string field typed ``RTCTickPolicy``."""

    DELAY: Final = "delay"
    CATCHUP: Final = "catchup"


class RTCTimerTrack:
    """Values of the string field typed ``RTCTimerTrack``."""

    GUEST: Final = "guest"
    WALL: Final = "wall"


class TrayState:
    """Values of the string field typed ``TrayState``."""

    OPEN: Final = "open"
    CLOSED: Final = "closed"


class WatchdogAction:
    """Values of the string field typed ``WatchdogAction``."""

    POWEROFF: Final = "poweroff"
    RESET: Final = "reset"
    SHUTDOWN: Final = "shutdown"


class ResourceRequirements(ApiModel):
    requests: dict[str, Quantity] | None = None
    limits: dict[str, Quantity] | None = None
    overcommit_guest_overhead: bool | None = Field(default=None, alias="overcommitGuestOverhead")


class CPUFeature(ApiModel):
    name: str
    policy: str | None = None


class NUMAGuestMappingPassthrough(ApiModel):
    pass


class NUMA(ApiModel):
    guest_mapping_passthrough: NUMAGuestMappingPassthrough | None = Field(
        default=None, alias="guestMappingPassthrough"
    )


class Realtime(ApiModel):
    mask: str | None = None


class CPU(ApiModel):
    cores: Uint32 | None = None
    sockets: Uint32 | None = None
    max_sockets: Uint32 | None = Field(default=None, alias="maxSockets")
    threads: Uint32 | None = None
    model: str | None = None
    features: list[CPUFeature] | None = None
    dedicated_cpu_placement: bool | None = Field(default=None, alias="dedicatedCpuPlacement")
    numa: NUMA | None = None
    isolate_emulator_thread: bool | None = Field(default=None, alias="isolateEmulatorThread")
    realtime: Realtime | None = None


class Hugepages(ApiModel):
    page_size: str | None = Field(default=None, alias="pageSize")


class Memory(ApiModel):
    hugepages: Hugepages | None = None
    guest: Quantity | None = None
    max_guest: Quantity | None = Field(default=None, alias="maxGuest")


class Machine(ApiModel):
    type: str | None = None


class BIOS(ApiModel):
    use_serial: bool | None = Field(default=None, alias="useSerial")


class EFI(ApiModel):
    secure_boot: bool | None = Field(default=None, alias="secureBoot")
    persistent: bool | None = None


class Bootloader(ApiModel):
    bios: BIOS | None = None
    efi: EFI | None = None


class KernelBootContainer(ApiModel):
    image: str
    image_pull_secret: str | None = Field(default=None, alias="imagePullSecret")
    image_pull_policy: str | None = Field(default=None, alias="imagePullPolicy")
    kernel_path: str | None = Field(default=None, alias="kernelPath")
    initrd_path: str | None = Field(default=None, alias="initrdPath")


class KernelBoot(ApiModel):
    kernel_args: str | None = Field(default=None, alias="kernelArgs")
    container: KernelBootContainer | None = None


class ACPI(ApiModel):
    slic_name_ref: str | None = Field(default=None, alias="slicNameRef")
    msdm_name_ref: str | None = Field(default=None, alias="msdmNameRef")


class Firmware(ApiModel):
    uuid: str | None = None
    bootloader: Bootloader | None = None
    serial: str | None = None
    kernel_boot: KernelBoot | None = Field(default=None, alias="kernelBoot")
    acpi: ACPI | None = None


class ClockOffsetUTC(ApiModel):
    offset_seconds: Int | None = Field(default=None, alias="offsetSeconds")


class ClockOffset(ApiModel):
    utc: ClockOffsetUTC | None = None
    timezone: str | None = None


class HPETTimer(ApiModel):
    tick_policy: str | None = Field(default=None, alias="tickPolicy")
    present: bool | None = None


class KVMTimer(ApiModel):
    present: bool | None = None


class PITTimer(ApiModel):
    tick_policy: str | None = Field(default=None, alias="tickPolicy")
    present: bool | None = None


class RTCTimer(ApiModel):
    tick_policy: str | None = Field(default=None, alias="tickPolicy")
    present: bool | None = None
    track: str | None = None


class HypervTimer(ApiModel):
    present: bool | None = None


class Timer(ApiModel):
    hpet: HPETTimer | None = None
    kvm: KVMTimer | None = None
    pit: PITTimer | None = None
    rtc: RTCTimer | None = None
    hyperv: HypervTimer | None = None


class Clock(ClockOffset):
    timer: Timer | None = None
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})


class FeatureState(ApiModel):
    enabled: bool | None = None


class FeatureAPIC(ApiModel):
    enabled: bool | None = None
    end_of_interrupt: bool | None = Field(default=None, alias="endOfInterrupt")


class HyperVPassthrough(ApiModel):
    enabled: bool | None = None


class FeatureSpinlocks(ApiModel):
    enabled: bool | None = None
    spinlocks: Uint32 | None = None


class SyNICTimer(ApiModel):
    enabled: bool | None = None
    direct: FeatureState | None = None


class FeatureVendorID(ApiModel):
    enabled: bool | None = None
    vendorid: str | None = None


class FeatureHyperv(ApiModel):
    relaxed: FeatureState | None = None
    vapic: FeatureState | None = None
    spinlocks: FeatureSpinlocks | None = None
    vpindex: FeatureState | None = None
    runtime: FeatureState | None = None
    synic: FeatureState | None = None
    synictimer: SyNICTimer | None = None
    reset: FeatureState | None = None
    vendorid: FeatureVendorID | None = None
    frequencies: FeatureState | None = None
    reenlightenment: FeatureState | None = None
    tlbflush: FeatureState | None = None
    ipi: FeatureState | None = None
    evmcs: FeatureState | None = None


class FeatureKVM(ApiModel):
    hidden: bool | None = None


class Features(ApiModel):
    acpi: FeatureState | None = None
    apic: FeatureAPIC | None = None
    hyperv_passthrough: HyperVPassthrough | None = Field(default=None, alias="hypervPassthrough")
    hyperv: FeatureHyperv | None = None
    smm: FeatureState | None = None
    kvm: FeatureKVM | None = None
    pvspinlock: FeatureState | None = None


class DiskTarget(ApiModel):
    bus: str | None = None
    readonly: bool | None = None
    pci_address: str | None = Field(default=None, alias="pciAddress")


class LunTarget(ApiModel):
    bus: str | None = None
    readonly: bool | None = None
    reservation: bool | None = None


class CDRomTarget(ApiModel):
    bus: str | None = None
    readonly: bool | None = None
    tray: str | None = None


class DiskDevice(ApiModel):
    disk: DiskTarget | None = None
    lun: LunTarget | None = None
    cdrom: CDRomTarget | None = None


class CustomBlockSize(ApiModel):
    logical: Uint
    physical: Uint


class BlockSize(ApiModel):
    custom: CustomBlockSize | None = None
    match_volume: FeatureState | None = Field(default=None, alias="matchVolume")


class Disk(DiskDevice):
    name: str
    boot_order: Uint | None = Field(default=None, alias="bootOrder")
    serial: str | None = None
    dedicated_io_thread: bool | None = Field(default=None, alias="dedicatedIOThread")
    cache: str | None = None
    io: str | None = None
    tag: str | None = None
    block_size: BlockSize | None = Field(default=None, alias="blockSize")
    shareable: bool | None = None
    error_policy: str | None = Field(default=None, alias="errorPolicy")


class I6300ESBWatchdog(ApiModel):
    action: str | None = None


class Diag288Watchdog(ApiModel):
    action: str | None = None


class WatchdogDevice(ApiModel):
    i6300esb: I6300ESBWatchdog | None = None
    diag288: Diag288Watchdog | None = None


class Watchdog(WatchdogDevice):
    name: str


class InterfaceBridge(ApiModel):
    pass


class DeprecatedInterfaceSlirp(ApiModel):
    pass


class InterfaceMasquerade(ApiModel):
    pass


class InterfaceSRIOV(ApiModel):
    pass


class DeprecatedInterfaceMacvtap(ApiModel):
    pass


class DeprecatedInterfacePasst(ApiModel):
    pass


class InterfaceBindingMethod(ApiModel):
    bridge: InterfaceBridge | None = None
    slirp: DeprecatedInterfaceSlirp | None = None
    masquerade: InterfaceMasquerade | None = None
    sriov: InterfaceSRIOV | None = None
    macvtap: DeprecatedInterfaceMacvtap | None = None
    passt: DeprecatedInterfacePasst | None = None


class PluginBinding(ApiModel):
    name: str


class Port(ApiModel):
    name: str | None = None
    protocol: str | None = None
    port: Int32


class DHCPPrivateOptions(ApiModel):
    option: Int
    value: str


class DHCPOptions(ApiModel):
    boot_file_name: str | None = Field(default=None, alias="bootFileName")
    tftp_server_name: str | None = Field(default=None, alias="tftpServerName")
    ntp_servers: list[str] | None = Field(default=None, alias="ntpServers")
    private_options: list[DHCPPrivateOptions] | None = Field(default=None, alias="privateOptions")

    @field_validator("ntp_servers")
    @classmethod
    def _sanitize_ntp_servers(cls, servers: list[str] | None) -> list[str] | None:
        return None if servers is None else [sanitize_ip(server) or server for server in servers]


class Interface(InterfaceBindingMethod):
    name: str
    model: str | None = None
    binding: PluginBinding | None = None
    ports: list[Port] | None = None
    mac_address: str | None = Field(default=None, alias="macAddress")
    boot_order: Uint | None = Field(default=None, alias="bootOrder")
    pci_address: str | None = Field(default=None, alias="pciAddress")
    dhcp_options: DHCPOptions | None = Field(default=None, alias="dhcpOptions")
    tag: str | None = None
    acpi_index: Int | None = Field(default=None, alias="acpiIndex")
    state: str | None = None


class Input(ApiModel):
    bus: str | None = None
    type: str
    name: str


class Rng(ApiModel):
    pass


class ClaimRequest(ApiModel):
    claim_name: str | None = Field(default=None, alias="claimName")
    request_name: str | None = Field(default=None, alias="requestName")


class VGPUDisplayOptions(ApiModel):
    enabled: bool | None = None
    ram_fb: FeatureState | None = Field(default=None, alias="ramFB")


class VGPUOptions(ApiModel):
    display: VGPUDisplayOptions | None = None


class GPU(ClaimRequest):
    name: str
    device_name: str | None = Field(default=None, alias="deviceName")
    virtual_gpu_options: VGPUOptions | None = Field(default=None, alias="virtualGPUOptions")
    tag: str | None = None


class DownwardMetrics(ApiModel):
    pass


class PanicDevice(ApiModel):
    model: str | None = None


class FilesystemVirtiofs(ApiModel):
    pass


class Filesystem(ApiModel):
    name: str
    virtiofs: FilesystemVirtiofs


class HostDevice(ClaimRequest):
    name: str
    device_name: str | None = Field(default=None, alias="deviceName")
    tag: str | None = None


class ClientPassthroughDevices(ApiModel):
    pass


class SoundDevice(ApiModel):
    name: str
    model: str | None = None


class TPMDevice(ApiModel):
    enabled: bool | None = None
    persistent: bool | None = None


class VideoDevice(ApiModel):
    type: str | None = None


class Devices(ApiModel):
    use_virtio_transitional: bool | None = Field(default=None, alias="useVirtioTransitional")
    disable_hotplug: bool | None = Field(default=None, alias="disableHotplug")
    disks: list[Disk] | None = Field(default=None, json_schema_extra={"maxItems": 256})
    watchdog: Watchdog | None = None
    interfaces: list[Interface] | None = Field(default=None, json_schema_extra={"maxItems": 256})
    inputs: list[Input] | None = None
    autoattach_pod_interface: bool | None = Field(default=None, alias="autoattachPodInterface")
    autoattach_graphics_device: bool | None = Field(default=None, alias="autoattachGraphicsDevice")
    autoattach_serial_console: bool | None = Field(default=None, alias="autoattachSerialConsole")
    log_serial_console: bool | None = Field(default=None, alias="logSerialConsole")
    autoattach_mem_balloon: bool | None = Field(default=None, alias="autoattachMemBalloon")
    autoattach_input_device: bool | None = Field(default=None, alias="autoattachInputDevice")
    autoattach_vsock: bool | None = Field(default=None, alias="autoattachVSOCK")
    rng: Rng | None = None
    block_multi_queue: bool | None = Field(default=None, alias="blockMultiQueue")
    network_interface_multiqueue: bool | None = Field(default=None, alias="networkInterfaceMultiqueue")
    gpus: list[GPU] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})
    downward_metrics: DownwardMetrics | None = Field(default=None, alias="downwardMetrics")
    panic_devices: list[PanicDevice] | None = Field(default=None, alias="panicDevices")
    filesystems: list[Filesystem] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    host_devices: list[HostDevice] | None = Field(
        default=None, alias="hostDevices", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    client_passthrough: ClientPassthroughDevices | None = Field(default=None, alias="clientPassthrough")
    sound: SoundDevice | None = None
    tpm: TPMDevice | None = None
    video: VideoDevice | None = None


class DiskIOThreads(ApiModel):
    supplemental_pool_thread_count: Uint32 | None = Field(default=None, alias="supplementalPoolThreadCount")


class Chassis(ApiModel):
    manufacturer: str | None = None
    version: str | None = None
    serial: str | None = None
    asset: str | None = None
    sku: str | None = None


class SEVPolicy(ApiModel):
    encrypted_state: bool | None = Field(default=None, alias="encryptedState")


class SEVAttestation(ApiModel):
    pass


class SEV(ApiModel):
    policy: SEVPolicy | None = None
    attestation: SEVAttestation | None = None
    session: str | None = None
    dh_cert: str | None = Field(default=None, alias="dhCert")


class LaunchSecurity(ApiModel):
    sev: SEV | None = None


class DomainSpec(ApiModel):
    resources: ResourceRequirements | None = None
    cpu: CPU | None = None
    memory: Memory | None = None
    machine: Machine | None = None
    firmware: Firmware | None = None
    clock: Clock | None = None
    features: Features | None = None
    devices: Devices
    io_threads_policy: str | None = Field(default=None, alias="ioThreadsPolicy")
    io_threads: DiskIOThreads | None = Field(default=None, alias="ioThreads")
    chassis: Chassis | None = None
    launch_security: LaunchSecurity | None = Field(default=None, alias="launchSecurity")
