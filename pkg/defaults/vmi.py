"""VMI defaulting as virt-api's mutating webhook applies it on CREATE (KubeVirt's ``pkg/defaults`` plus
the VMI mutator's metadata and status)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime

from kubevirt.virt_config import ClusterConfig
from kubevirt_api.core.v1 import (
    CPU,
    CPUTopology,
    I6300ESBWatchdog,
    Machine,
    Memory,
    MemoryStatus,
    ResourceRequirements,
    VirtualMachineInstance,
    VirtualMachineInstanceGuestOSInfo,
    VirtualMachineInstancePhase,
    VirtualMachineInstancePhaseTransitionTimestamp,
    VirtualMachineInstanceSpec,
    VirtualMachineInstanceStatus,
)
from kubevirt_api.core.v1.defaults import (
    default_bridge_network_interface,
    default_masquerade_network_interface,
    default_pod_network,
    set_object_defaults_virtual_machine_instance,
)
from kubevirt_api.core.v1.domain import Disk
from kubevirt_api.k8s.meta_v1 import ObjectMeta
from kubevirt_api.resource import Quantity

from .hotplug import set_cpu_hotplug_defaults, set_memory_hotplug_defaults
from .hyperv import set_hyperv_feature_dependencies
from .settings import (
    DEFAULT_CPU_MODEL,
    DEFAULT_MACHINE_TYPES,
    DEFAULT_NETWORK_INTERFACE,
    EVICTION_STRATEGY_NONE,
    NON_ROOT_UID,
    ROOT_FEATURE_GATE,
)

PCI_TOPOLOGY_ANNOTATION = "kubevirt.io/pci-topology-version"
PCI_TOPOLOGY_VERSION = "v3"
VMI_FINALIZER = "foregroundDeleteVirtualMachine"
_UINT32 = 0xFFFFFFFF


class DefaultingError(ValueError):
    """The webhook refuses the object (e.g. a bridge on the pod network where the cluster forbids it)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _utc_now() -> datetime:
    return datetime.now(UTC)


def set_vmi_defaults(
    vmi: VirtualMachineInstance,
    cluster: ClusterConfig,
    *,
    now: Callable[[], datetime] = _utc_now,
) -> None:
    """Default a VMI in place exactly as KubeVirt's VMI mutator does on CREATE."""
    spec = vmi.spec
    _set_spec_defaults(spec, cluster)
    set_object_defaults_virtual_machine_instance(vmi)
    set_hyperv_feature_dependencies(vmi)
    if spec.architecture == "amd64":
        _set_amd64_defaults(spec)
    _set_cpu_model(spec)
    status = vmi.status or VirtualMachineInstanceStatus()
    vmi.status = status
    memory = spec.domain.memory
    if memory is not None and memory.guest is not None:
        status.memory = MemoryStatus(
            guest_at_boot=memory.guest, guest_current=memory.guest, guest_requested=memory.guest
        )
    cpu = spec.domain.cpu
    if cpu is not None and status.current_cpu_topology is None:
        status.current_cpu_topology = CPUTopology(cores=cpu.cores, sockets=cpu.sockets, threads=cpu.threads)
    if cluster.rollout_strategy == "LiveUpdate":
        set_cpu_hotplug_defaults(vmi)
        set_memory_hotplug_defaults(vmi)
    _set_mutator_metadata_and_status(vmi, cluster, now())


def _set_spec_defaults(spec: VirtualMachineInstanceSpec, cluster: ClusterConfig) -> None:
    if not spec.architecture:
        spec.architecture = cluster.default_architecture
    domain = spec.domain
    machine_type = DEFAULT_MACHINE_TYPES.get(spec.architecture, DEFAULT_MACHINE_TYPES["amd64"])
    if domain.machine is None:
        domain.machine = Machine(type=machine_type)
    elif not domain.machine.type:
        domain.machine.type = machine_type
    if domain.resources is None:
        domain.resources = ResourceRequirements()  # a value, not a pointer, in KubeVirt's API
    _set_cpu_request_from_limit(spec)
    _set_guest_memory(spec)
    _set_cpu_topology(spec)
    for volume in spec.volumes or ():
        disk = volume.container_disk
        if disk is not None and not disk.image_pull_policy:
            image = disk.image
            untagged = not any(ch in image for ch in ":@")
            disk.image_pull_policy = "Always" if image.endswith(":latest") or untagged else "IfNotPresent"
    if spec.eviction_strategy is None:
        spec.eviction_strategy = cluster.eviction_strategy or EVICTION_STRATEGY_NONE
    _set_default_network(spec, cluster)
    _set_volume_disks(spec)


def _set_cpu_request_from_limit(spec: VirtualMachineInstanceSpec) -> None:
    resources = spec.domain.resources
    if resources is None or not resources.limits:
        return
    limit = resources.limits.get("cpu")
    request = (resources.requests or {}).get("cpu")
    if limit is not None and not limit.is_zero() and (request is None or request.is_zero()):
        resources.requests = {**(resources.requests or {}), "cpu": limit}


def _set_guest_memory(spec: VirtualMachineInstanceSpec) -> None:
    domain = spec.domain
    if domain.memory is not None and domain.memory.guest is not None:
        return
    if domain.memory is None:
        domain.memory = Memory()
    resources = domain.resources
    request = (resources.requests or {}).get("memory") if resources else None
    limit = (resources.limits or {}).get("memory") if resources else None
    if request is not None and not request.is_zero():
        domain.memory.guest = request
    elif limit is not None and not limit.is_zero():
        domain.memory.guest = limit
    elif domain.memory.hugepages is not None and domain.memory.hugepages.page_size:
        with contextlib.suppress(ValueError):  # an unparsable page size is left for validation
            domain.memory.guest = Quantity(domain.memory.hugepages.page_size)


def _set_cpu_topology(spec: VirtualMachineInstanceSpec) -> None:
    domain = spec.domain
    cpu = domain.cpu
    if cpu is not None and (cpu.cores or cpu.sockets or cpu.threads):
        return
    if cpu is None:
        cpu = domain.cpu = CPU()
    sockets = 1
    resources = domain.resources
    limit = (resources.limits or {}).get("cpu") if resources else None
    request = (resources.requests or {}).get("cpu") if resources else None
    if limit is not None:
        sockets = limit.value() & _UINT32
    elif request is not None:
        sockets = request.value() & _UINT32
    cpu.sockets, cpu.cores, cpu.threads = sockets, 1, 1


def _set_default_network(spec: VirtualMachineInstanceSpec, cluster: ClusterConfig) -> None:
    devices = spec.domain.devices
    if devices.autoattach_pod_interface is False or spec.networks or devices.interfaces:
        return
    if DEFAULT_NETWORK_INTERFACE == "bridge":
        if not cluster.permit_bridge_interface_on_pod_network:
            raise DefaultingError(
                "spec.domain.devices.interfaces", "Bridge interface is not enabled in kubevirt-config"
            )
        devices.interfaces = [default_bridge_network_interface()]
    else:
        devices.interfaces = [default_masquerade_network_interface()]
    spec.networks = [default_pod_network()]


def _set_volume_disks(spec: VirtualMachineInstanceSpec) -> None:
    """A volume nobody uses as disk or filesystem becomes a disk of its own."""
    devices = spec.domain.devices
    used = {d.name for d in devices.disks or ()} | {f.name for f in devices.filesystems or ()}
    for volume in spec.volumes or ():
        if volume.name not in used:
            devices.disks = [*(devices.disks or []), Disk(name=volume.name)]
            used.add(volume.name)


def _set_amd64_defaults(spec: VirtualMachineInstanceSpec) -> None:
    devices = spec.domain.devices
    for disk in devices.disks or ():
        for target in (disk.disk, disk.cdrom, disk.lun):
            if target is not None and not target.bus:
                target.bus = "sata"
    watchdog = devices.watchdog
    if watchdog is not None:
        if watchdog.i6300esb is None and watchdog.diag288 is None:
            watchdog.i6300esb = I6300ESBWatchdog()
        if watchdog.i6300esb is not None and not watchdog.i6300esb.action:
            watchdog.i6300esb.action = "reset"


def _set_cpu_model(spec: VirtualMachineInstanceSpec) -> None:
    domain = spec.domain
    if domain.cpu is None:
        domain.cpu = CPU()
    if not domain.cpu.model:
        domain.cpu.model = DEFAULT_CPU_MODEL


def _set_mutator_metadata_and_status(
    vmi: VirtualMachineInstance, cluster: ClusterConfig, now: datetime
) -> None:
    meta = vmi.metadata or ObjectMeta()
    vmi.metadata = meta
    machine = vmi.spec.domain.machine.type if vmi.spec.domain.machine else None
    annotations = meta.annotations or {}
    if machine and "q35" in machine and PCI_TOPOLOGY_ANNOTATION not in annotations:
        meta.annotations = {**annotations, PCI_TOPOLOGY_ANNOTATION: PCI_TOPOLOGY_VERSION}
    finalizers = meta.finalizers or []
    if VMI_FINALIZER not in finalizers:
        meta.finalizers = [*finalizers, VMI_FINALIZER]
    status = vmi.status or VirtualMachineInstanceStatus()
    vmi.status = status
    status.phase = VirtualMachineInstancePhase.PENDING
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status.phase_transition_timestamps = [
        *(status.phase_transition_timestamps or []),
        VirtualMachineInstancePhaseTransitionTimestamp(
            phase=VirtualMachineInstancePhase.PENDING, phase_transition_timestamp=stamp
        ),
    ]
    if status.guest_os_info is None:
        status.guest_os_info = VirtualMachineInstanceGuestOSInfo()
    status.runtime_user = None if cluster.enabled(ROOT_FEATURE_GATE) else NON_ROOT_UID


def set_default_volume_disks(spec: VirtualMachineInstanceSpec) -> None:
    """KubeVirt's ``SetDefaultVolumeDisk``: every volume without a disk or filesystem gets a disk."""
    _set_volume_disks(spec)


def set_default_network_interface(spec: VirtualMachineInstanceSpec, cluster: ClusterConfig) -> None:
    """KubeVirt's ``SetDefaultNetworkInterface``: the pod network and its interface when none is given;
    raises :class:`DefaultingError` when the cluster forbids the default binding."""
    _set_default_network(spec, cluster)


def set_default_vmi_spec(spec: VirtualMachineInstanceSpec, cluster: ClusterConfig) -> None:
    """KubeVirt's ``SetDefaultVirtualMachineInstanceSpec``: the spec-only defaults (architecture,
    machine type, requests, guest memory, CPU topology, pull policies, eviction strategy, default
    network and disks), without the VMI mutator's metadata and status."""
    _set_spec_defaults(spec, cluster)
