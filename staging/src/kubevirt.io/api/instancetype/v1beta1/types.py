"""Instance types and preferences (``instancetype.kubevirt.io/v1beta1``).

An instance type owns a VM's size (guest CPUs and memory, devices, placement); a preference offers
defaults (``preferred*``) that only fill what the VM leaves unset, plus minimum requirements. The
namespaced and cluster-wide kinds share one spec each.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import ApiModel, Int, Int64, TypeMeta, Uint32
from kubevirt_api.core.v1.domain import (
    EFI,
    GPU,
    NUMA,
    BlockSize,
    ClockOffset,
    CPUFeature,
    FeatureAPIC,
    FeatureHyperv,
    FeatureKVM,
    FeatureState,
    HostDevice,
    Hugepages,
    InterfaceMasquerade,
    LaunchSecurity,
    Realtime,
    Rng,
    Timer,
    TPMDevice,
    VGPUOptions,
)
from kubevirt_api.k8s import meta_v1
from kubevirt_api.resource import Quantity

__all__ = [
    "CPUInstancetype",
    "CPUPreferenceRequirement",
    "CPUPreferences",
    "ClockPreferences",
    "DevicePreferences",
    "FeaturePreferences",
    "FirmwarePreferences",
    "MachinePreferences",
    "MemoryInstancetype",
    "MemoryPreferenceRequirement",
    "PreferenceRequirements",
    "PreferredCPUTopology",
    "SpreadAcross",
    "SpreadOptions",
    "VirtualMachineClusterInstancetype",
    "VirtualMachineClusterInstancetypeList",
    "VirtualMachineClusterPreference",
    "VirtualMachineClusterPreferenceList",
    "VirtualMachineInstancetype",
    "VirtualMachineInstancetypeList",
    "VirtualMachineInstancetypeSpec",
    "VirtualMachinePreference",
    "VirtualMachinePreferenceList",
    "VirtualMachinePreferenceSpec",
    "VolumePreferences",
]


class PreferredCPUTopology:
    """Values of the string field typed ``PreferredCPUTopology``; the ``prefer*`` spellings are deprecated."""

    DEPRECATED_PREFER_CORES: Final = "preferCores"
    DEPRECATED_PREFER_SOCKETS: Final = "preferSockets"
    DEPRECATED_PREFER_THREADS: Final = "preferThreads"
    DEPRECATED_PREFER_SPREAD: Final = "preferSpread"
    DEPRECATED_PREFER_ANY: Final = "preferAny"
    CORES: Final = "cores"
    SOCKETS: Final = "sockets"
    THREADS: Final = "threads"
    SPREAD: Final = "spread"
    ANY: Final = "any"


class SpreadAcross:
    """Values of the string field typed ``SpreadAcross``."""

    SOCKETS_CORES_THREADS: Final = "SocketsCoresThreads"
    SOCKETS_CORES: Final = "SocketsCores"
    CORES_THREADS: Final = "CoresThreads"


# Go's uint32 fields appear in KubeVirt's OpenAPI as int64 and its plain int fields as int32.
class CPUInstancetype(ApiModel):
    guest: Uint32
    model: str | None = None
    dedicated_cpu_placement: bool | None = Field(default=None, alias="dedicatedCPUPlacement")
    numa: NUMA | None = None
    isolate_emulator_thread: bool | None = Field(default=None, alias="isolateEmulatorThread")
    realtime: Realtime | None = None
    max_sockets: Uint32 | None = Field(default=None, alias="maxSockets")


class MemoryInstancetype(ApiModel):
    guest: Quantity
    hugepages: Hugepages | None = None
    overcommit_percent: Int | None = Field(
        default=None, alias="overcommitPercent", json_schema_extra={"minimum": 0, "maximum": 100}
    )
    max_guest: Quantity | None = Field(default=None, alias="maxGuest")


class VirtualMachineInstancetypeSpec(ApiModel):
    node_selector: dict[str, str] | None = Field(default=None, alias="nodeSelector")
    scheduler_name: str | None = Field(default=None, alias="schedulerName")
    cpu: CPUInstancetype
    memory: MemoryInstancetype
    gpus: list[GPU] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})
    host_devices: list[HostDevice] | None = Field(
        default=None, alias="hostDevices", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    io_threads_policy: str | None = Field(default=None, alias="ioThreadsPolicy")
    launch_security: LaunchSecurity | None = Field(default=None, alias="launchSecurity")
    annotations: dict[str, str] | None = None


class VirtualMachineInstancetype(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineInstancetypeSpec


class VirtualMachineInstancetypeList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineInstancetype]


class VirtualMachineClusterInstancetype(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineInstancetypeSpec


class VirtualMachineClusterInstancetypeList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineClusterInstancetype]


class ClockPreferences(ApiModel):
    preferred_clock_offset: ClockOffset | None = Field(default=None, alias="preferredClockOffset")
    preferred_timer: Timer | None = Field(default=None, alias="preferredTimer")


class SpreadOptions(ApiModel):
    across: str | None = None
    ratio: Uint32 | None = None


class CPUPreferences(ApiModel):
    preferred_cpu_topology: str | None = Field(default=None, alias="preferredCPUTopology")
    spread_options: SpreadOptions | None = Field(default=None, alias="spreadOptions")
    preferred_cpu_features: list[CPUFeature] | None = Field(default=None, alias="preferredCPUFeatures")


class DevicePreferences(ApiModel):
    preferred_autoattach_graphics_device: bool | None = Field(
        default=None, alias="preferredAutoattachGraphicsDevice"
    )
    preferred_autoattach_mem_balloon: bool | None = Field(default=None, alias="preferredAutoattachMemBalloon")
    preferred_autoattach_pod_interface: bool | None = Field(
        default=None, alias="preferredAutoattachPodInterface"
    )
    preferred_autoattach_serial_console: bool | None = Field(
        default=None, alias="preferredAutoattachSerialConsole"
    )
    preferred_autoattach_input_device: bool | None = Field(
        default=None, alias="preferredAutoattachInputDevice"
    )
    preferred_disable_hotplug: bool | None = Field(default=None, alias="preferredDisableHotplug")
    preferred_virtual_gpu_options: VGPUOptions | None = Field(
        default=None, alias="preferredVirtualGPUOptions"
    )
    preferred_sound_model: str | None = Field(default=None, alias="preferredSoundModel")
    preferred_use_virtio_transitional: bool | None = Field(
        default=None, alias="preferredUseVirtioTransitional"
    )
    preferred_input_bus: str | None = Field(default=None, alias="preferredInputBus")
    preferred_input_type: str | None = Field(default=None, alias="preferredInputType")
    preferred_disk_bus: str | None = Field(default=None, alias="preferredDiskBus")
    preferred_lun_bus: str | None = Field(default=None, alias="preferredLunBus")
    preferred_cdrom_bus: str | None = Field(default=None, alias="preferredCdromBus")
    preferred_disk_dedicated_io_thread: bool | None = Field(
        default=None, alias="preferredDiskDedicatedIoThread"
    )
    preferred_disk_cache: str | None = Field(default=None, alias="preferredDiskCache")
    preferred_disk_io: str | None = Field(default=None, alias="preferredDiskIO")
    preferred_disk_block_size: BlockSize | None = Field(default=None, alias="preferredDiskBlockSize")
    preferred_interface_model: str | None = Field(default=None, alias="preferredInterfaceModel")
    preferred_rng: Rng | None = Field(default=None, alias="preferredRng")
    preferred_block_multi_queue: bool | None = Field(default=None, alias="preferredBlockMultiQueue")
    preferred_network_interface_multi_queue: bool | None = Field(
        default=None, alias="preferredNetworkInterfaceMultiQueue"
    )
    preferred_tpm: TPMDevice | None = Field(default=None, alias="preferredTPM")
    preferred_interface_masquerade: InterfaceMasquerade | None = Field(
        default=None, alias="preferredInterfaceMasquerade"
    )
    preferred_panic_device_model: str | None = Field(default=None, alias="preferredPanicDeviceModel")


class FeaturePreferences(ApiModel):
    preferred_acpi: FeatureState | None = Field(default=None, alias="preferredAcpi")
    preferred_apic: FeatureAPIC | None = Field(default=None, alias="preferredApic")
    preferred_hyperv: FeatureHyperv | None = Field(default=None, alias="preferredHyperv")
    preferred_kvm: FeatureKVM | None = Field(default=None, alias="preferredKvm")
    preferred_pvspinlock: FeatureState | None = Field(default=None, alias="preferredPvspinlock")
    preferred_smm: FeatureState | None = Field(default=None, alias="preferredSmm")


class FirmwarePreferences(ApiModel):
    preferred_use_bios: bool | None = Field(default=None, alias="preferredUseBios")
    preferred_use_bios_serial: bool | None = Field(default=None, alias="preferredUseBiosSerial")
    # Deprecated in favour of preferredEfi.
    preferred_use_efi: bool | None = Field(default=None, alias="preferredUseEfi")
    preferred_use_secure_boot: bool | None = Field(default=None, alias="preferredUseSecureBoot")
    preferred_efi: EFI | None = Field(default=None, alias="preferredEfi")


class MachinePreferences(ApiModel):
    preferred_machine_type: str | None = Field(default=None, alias="preferredMachineType")


class VolumePreferences(ApiModel):
    preferred_storage_class_name: str | None = Field(default=None, alias="preferredStorageClassName")


class CPUPreferenceRequirement(ApiModel):
    guest: Uint32


class MemoryPreferenceRequirement(ApiModel):
    guest: Quantity


class PreferenceRequirements(ApiModel):
    cpu: CPUPreferenceRequirement | None = None
    memory: MemoryPreferenceRequirement | None = None


class VirtualMachinePreferenceSpec(ApiModel):
    clock: ClockPreferences | None = None
    cpu: CPUPreferences | None = None
    devices: DevicePreferences | None = None
    features: FeaturePreferences | None = None
    firmware: FirmwarePreferences | None = None
    machine: MachinePreferences | None = None
    volumes: VolumePreferences | None = None
    preferred_subdomain: str | None = Field(default=None, alias="preferredSubdomain")
    preferred_termination_grace_period_seconds: Int64 | None = Field(
        default=None, alias="preferredTerminationGracePeriodSeconds"
    )
    requirements: PreferenceRequirements | None = None
    annotations: dict[str, str] | None = None
    prefer_spread_socket_to_core_ratio: Uint32 | None = Field(
        default=None, alias="preferSpreadSocketToCoreRatio"
    )


class VirtualMachinePreference(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachinePreferenceSpec


class VirtualMachinePreferenceList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachinePreference]


class VirtualMachineClusterPreference(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachinePreferenceSpec


class VirtualMachineClusterPreferenceList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineClusterPreference]
