"""The API-level defaults of ``kubevirt.io/v1`` (KubeVirt's ``SetObjectDefaults_*`` and ``SetDefaults_*``).

These are the pure, cluster-independent defaults the API machinery applies whenever an object is decoded
in KubeVirt: ``enabled: true`` on feature flags and timers that are present, the disk target, CD-ROM
read-only/tray, input bus/type, probe thresholds, a firmware UUID. The webhook's cluster-aware defaulting
(machine type, CPU topology, buses, networks…) builds on these and lives in ``kubevirt``.

Every function changes the object in place and returns nothing, like its Go counterpart.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Protocol

from kubevirt_api.core.v1.domain import (
    CDRomTarget,
    DiskDevice,
    DiskTarget,
    FeatureAPIC,
    Features,
    FeatureSpinlocks,
    FeatureState,
    FeatureVendorID,
    Firmware,
    Input,
    InputBus,
    InputType,
    Interface,
    InterfaceBridge,
    InterfaceMasquerade,
    SyNICTimer,
    TrayState,
)
from kubevirt_api.core.v1.domain import Disk as DiskModel
from kubevirt_api.core.v1.networks import Network, PodNetwork
from kubevirt_api.core.v1.probes import Probe
from kubevirt_api.core.v1.replicaset import (
    VirtualMachineInstanceReplicaSet,
    VirtualMachineInstanceReplicaSetList,
)
from kubevirt_api.core.v1.vm import VirtualMachine, VirtualMachineList
from kubevirt_api.core.v1.vmi import (
    VirtualMachineInstance,
    VirtualMachineInstanceList,
    VirtualMachineInstanceSpec,
)

__all__ = [
    "CD_ROM_TRAY_CLOSED",
    "DEFAULT_SPINLOCK_RETRIES",
    "default_bridge_network_interface",
    "default_masquerade_network_interface",
    "default_pod_network",
    "new_firmware_uuid",
    "set_defaults_cdrom_target",
    "set_defaults_disk_device",
    "set_defaults_feature_apic",
    "set_defaults_feature_spinlocks",
    "set_defaults_feature_state",
    "set_defaults_feature_vendor_id",
    "set_defaults_firmware",
    "set_defaults_probe",
    "set_defaults_synic_timer",
    "set_defaults_virtual_machine_instance",
    "set_object_defaults_virtual_machine",
    "set_object_defaults_virtual_machine_instance",
    "set_object_defaults_virtual_machine_instance_list",
    "set_object_defaults_virtual_machine_instance_replica_set",
    "set_object_defaults_virtual_machine_instance_replica_set_list",
    "set_object_defaults_virtual_machine_list",
]

CD_ROM_TRAY_CLOSED = TrayState.CLOSED
DEFAULT_SPINLOCK_RETRIES = 4096

UuidFactory = Callable[[], str]


def new_firmware_uuid() -> str:
    return str(uuid.uuid4())


# -- per-type defaults --------------------------------------------------------------------------------
class _Enableable(Protocol):
    """Anything with an ``enabled: bool | None`` flag (FeatureState, timers, APIC, vendor id…)."""

    enabled: bool | None


def _enable_if_unset(obj: _Enableable) -> None:
    if obj.enabled is None:
        obj.enabled = True


def set_defaults_feature_state(obj: FeatureState) -> None:
    _enable_if_unset(obj)


def set_defaults_feature_apic(obj: FeatureAPIC) -> None:
    _enable_if_unset(obj)


def set_defaults_feature_vendor_id(obj: FeatureVendorID) -> None:
    _enable_if_unset(obj)


def set_defaults_synic_timer(obj: SyNICTimer) -> None:
    _enable_if_unset(obj)
    if obj.direct is not None:
        _enable_if_unset(obj.direct)


def set_defaults_feature_spinlocks(obj: FeatureSpinlocks) -> None:
    _enable_if_unset(obj)
    if obj.enabled and obj.spinlocks is None:
        obj.spinlocks = DEFAULT_SPINLOCK_RETRIES


def set_defaults_disk_device(obj: DiskDevice) -> None:
    """A disk with no target at all is a plain ``disk``."""
    if obj.disk is None and obj.cdrom is None and obj.lun is None:
        obj.disk = DiskTarget()


def set_defaults_cdrom_target(obj: CDRomTarget) -> None:
    if obj.readonly is None:
        obj.readonly = True
    if not obj.tray:
        obj.tray = CD_ROM_TRAY_CLOSED


def set_defaults_firmware(obj: Firmware, new_uuid: UuidFactory = new_firmware_uuid) -> None:
    if not obj.uuid:
        obj.uuid = new_uuid()


def set_defaults_probe(probe: Probe | None) -> None:
    """Zero or unset thresholds become Kubernetes' probe defaults."""
    if probe is None:
        return
    if (probe.timeout_seconds or 0) < 1:
        probe.timeout_seconds = 1
    if (probe.period_seconds or 0) < 1:
        probe.period_seconds = 10
    if (probe.success_threshold or 0) < 1:
        probe.success_threshold = 1
    if (probe.failure_threshold or 0) < 1:
        probe.failure_threshold = 3


def _set_defaults_input(obj: Input) -> None:
    if not obj.bus:
        obj.bus = InputBus.USB
    if not obj.type:
        obj.type = InputType.TABLET


def _set_defaults_disk(disk: DiskModel) -> None:
    set_defaults_disk_device(disk)
    if disk.cdrom is not None:
        set_defaults_cdrom_target(disk.cdrom)
    if disk.block_size is not None and disk.block_size.match_volume is not None:
        _enable_if_unset(disk.block_size.match_volume)


def _set_defaults_features(features: Features) -> None:
    # ``acpi`` is a value (not a pointer) in Go, so it exists, and is enabled, whenever features do.
    if features.acpi is None:
        features.acpi = FeatureState()
    _enable_if_unset(features.acpi)
    if features.apic is not None:
        _enable_if_unset(features.apic)
    hyperv = features.hyperv
    if hyperv is not None:
        for state in (
            hyperv.relaxed,
            hyperv.vapic,
            hyperv.vpindex,
            hyperv.runtime,
            hyperv.synic,
            hyperv.reset,
            hyperv.vendorid,
            hyperv.frequencies,
            hyperv.reenlightenment,
            hyperv.tlbflush,
            hyperv.ipi,
            hyperv.evmcs,
        ):
            if state is not None:
                _enable_if_unset(state)
        if hyperv.spinlocks is not None:
            set_defaults_feature_spinlocks(hyperv.spinlocks)
        if hyperv.synictimer is not None:
            set_defaults_synic_timer(hyperv.synictimer)
    for state in (features.smm, features.pvspinlock):
        if state is not None:
            _enable_if_unset(state)


def _set_spec_defaults(spec: VirtualMachineInstanceSpec, new_uuid: UuidFactory) -> None:
    """What ``SetObjectDefaults_*`` does to a VMI spec, wherever the spec is (VMI, VM or RS template)."""
    domain = spec.domain
    if domain.firmware is not None:
        set_defaults_firmware(domain.firmware, new_uuid)
    timer = domain.clock.timer if domain.clock is not None else None
    if timer is not None:
        for each in (timer.hpet, timer.kvm, timer.pit, timer.rtc, timer.hyperv):
            if each is not None and each.present is None:
                each.present = True  # a timer's ``enabled`` flag is spelled ``present`` in JSON
    if domain.features is not None:
        _set_defaults_features(domain.features)
    for disk in domain.devices.disks or ():
        _set_defaults_disk(disk)
    for gpu in domain.devices.gpus or ():
        display = gpu.virtual_gpu_options.display if gpu.virtual_gpu_options is not None else None
        if display is not None and display.ram_fb is not None:
            _enable_if_unset(display.ram_fb)
    set_defaults_probe(spec.liveness_probe)
    set_defaults_probe(spec.readiness_probe)


# -- per-object defaults ------------------------------------------------------------------------------
def set_defaults_virtual_machine_instance(vmi: VirtualMachineInstance) -> None:
    """The VMI-only part: firmware and features always exist, disk targets and inputs are filled in."""
    domain = vmi.spec.domain
    if domain.firmware is None:
        domain.firmware = Firmware()
    if domain.features is None:
        domain.features = Features()
    for disk in domain.devices.disks or ():
        set_defaults_disk_device(disk)
    for device in domain.devices.inputs or ():
        _set_defaults_input(device)
    set_defaults_probe(vmi.spec.readiness_probe)
    set_defaults_probe(vmi.spec.liveness_probe)


def set_object_defaults_virtual_machine_instance(
    vmi: VirtualMachineInstance, new_uuid: UuidFactory = new_firmware_uuid
) -> None:
    """Everything KubeVirt's scheme defaulter applies to a decoded VirtualMachineInstance."""
    set_defaults_virtual_machine_instance(vmi)
    _set_spec_defaults(vmi.spec, new_uuid)


def set_object_defaults_virtual_machine(
    vm: VirtualMachine, new_uuid: UuidFactory = new_firmware_uuid
) -> None:
    """Defaults inside the VM's template, and the disks of pending hotplug volume requests."""
    if vm.spec.template.spec is not None:
        _set_spec_defaults(vm.spec.template.spec, new_uuid)
    status = vm.status
    for request in (status.volume_requests if status is not None else None) or ():
        options = request.add_volume_options
        if options is not None and options.disk is not None:
            _set_defaults_disk(options.disk)


def set_object_defaults_virtual_machine_instance_replica_set(
    rs: VirtualMachineInstanceReplicaSet, new_uuid: UuidFactory = new_firmware_uuid
) -> None:
    if rs.spec.template.spec is not None:
        _set_spec_defaults(rs.spec.template.spec, new_uuid)


def set_object_defaults_virtual_machine_instance_list(
    items: VirtualMachineInstanceList, new_uuid: UuidFactory = new_firmware_uuid
) -> None:
    for vmi in items.items:
        set_object_defaults_virtual_machine_instance(vmi, new_uuid)


def set_object_defaults_virtual_machine_list(
    items: VirtualMachineList, new_uuid: UuidFactory = new_firmware_uuid
) -> None:
    for vm in items.items:
        set_object_defaults_virtual_machine(vm, new_uuid)


def set_object_defaults_virtual_machine_instance_replica_set_list(
    items: VirtualMachineInstanceReplicaSetList, new_uuid: UuidFactory = new_firmware_uuid
) -> None:
    for rs in items.items:
        set_object_defaults_virtual_machine_instance_replica_set(rs, new_uuid)


# -- the default pod network and its interface --------------------------------------------------------
def default_pod_network() -> Network:
    return Network(name="default", pod=PodNetwork())


def default_bridge_network_interface() -> Interface:
    return Interface(name="default", bridge=InterfaceBridge())


def default_masquerade_network_interface() -> Interface:
    return Interface(name="default", masquerade=InterfaceMasquerade())
