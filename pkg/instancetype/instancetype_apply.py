"""What an instance type owns in a VMI spec: its sizing, devices and placement.

Each step either fills the spec from the instance type or, when the spec already sets the field,
reports a :class:`Conflict` at ``<base>.<field>``. The spec is changed in place.
"""

from __future__ import annotations

import struct
from typing import Final

from kubevirt.instancetype.conflict import Conflict
from kubevirt.instancetype.topology import guest_topology
from kubevirt_api.core.v1.domain import CPU, Devices, DomainSpec, Memory, ResourceRequirements
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceSpec
from kubevirt_api.instancetype.v1beta1 import VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec
from kubevirt_api.k8s import meta_v1
from kubevirt_api.resource import Quantity

__all__ = ["apply_instancetype"]

_CPU: Final = "cpu"
_MEMORY: Final = "memory"


def apply_instancetype(
    base: str,
    instancetype: VirtualMachineInstancetypeSpec,
    preference: VirtualMachinePreferenceSpec | None,
    spec: VirtualMachineInstanceSpec,
    metadata: meta_v1.ObjectMeta,
) -> list[Conflict]:
    """Applies every part of the instance type; returns all conflicts found (none: fully applied)."""
    conflicts: list[Conflict] = []
    conflicts += _node_selector(base, instancetype, spec)
    conflicts += _scheduler_name(base, instancetype, spec)
    conflicts += _cpu(base, instancetype, preference, spec.domain)
    conflicts += _memory(base, instancetype, spec.domain)
    conflicts += _io_threads_policy(base, instancetype, spec.domain)
    conflicts += _launch_security(base, instancetype, spec.domain)
    conflicts += _gpus(base, instancetype, spec.domain.devices)
    conflicts += _host_devices(base, instancetype, spec.domain.devices)
    conflicts += _annotations(instancetype.annotations, metadata)
    return conflicts


def _node_selector(
    base: str, instancetype: VirtualMachineInstancetypeSpec, spec: VirtualMachineInstanceSpec
) -> list[Conflict]:
    if instancetype.node_selector is None:
        return []
    if spec.node_selector is not None:
        return [Conflict.at(base, "nodeSelector")]
    spec.node_selector = dict(instancetype.node_selector)
    return []


def _scheduler_name(
    base: str, instancetype: VirtualMachineInstancetypeSpec, spec: VirtualMachineInstanceSpec
) -> list[Conflict]:
    if not instancetype.scheduler_name:
        return []
    if spec.scheduler_name:
        return [Conflict.at(base, "schedulerName")]
    spec.scheduler_name = instancetype.scheduler_name
    return []


def _resource_names(resources: dict[str, Quantity] | None) -> set[str]:
    return set(resources or {})


def _cpu_conflicts(
    base: str, instancetype: VirtualMachineInstancetypeSpec, domain: DomainSpec
) -> list[Conflict]:
    cpu = domain.cpu or CPU()
    wanted = instancetype.cpu
    resources = domain.resources or ResourceRequirements()
    checks = (
        (_CPU in _resource_names(resources.requests), ("resources", "requests", _CPU)),
        (_CPU in _resource_names(resources.limits), ("resources", "limits", _CPU)),
        (bool(cpu.sockets), ("cpu", "sockets")),
        (bool(cpu.cores), ("cpu", "cores")),
        (bool(cpu.threads), ("cpu", "threads")),
        (bool(cpu.model) and wanted.model is not None, ("cpu", "model")),
        (
            bool(cpu.dedicated_cpu_placement) and wanted.dedicated_cpu_placement is not None,
            ("cpu", "dedicatedCPUPlacement"),
        ),
        (
            bool(cpu.isolate_emulator_thread) and wanted.isolate_emulator_thread is not None,
            ("cpu", "isolateEmulatorThread"),
        ),
        (cpu.numa is not None and wanted.numa is not None, ("cpu", "numa")),
        (cpu.realtime is not None and wanted.realtime is not None, ("cpu", "realtime")),
    )
    return [Conflict.at(base, "domain", *names) for clash, names in checks if clash]


def _cpu(
    base: str,
    instancetype: VirtualMachineInstancetypeSpec,
    preference: VirtualMachinePreferenceSpec | None,
    domain: DomainSpec,
) -> list[Conflict]:
    conflicts = _cpu_conflicts(base, instancetype, domain)
    if conflicts:
        return conflicts
    wanted = instancetype.cpu
    cpu = domain.cpu = domain.cpu or CPU()
    if not cpu.model and wanted.model is not None:
        cpu.model = wanted.model
    if wanted.dedicated_cpu_placement is not None:
        cpu.dedicated_cpu_placement = wanted.dedicated_cpu_placement
    if wanted.isolate_emulator_thread is not None:
        cpu.isolate_emulator_thread = wanted.isolate_emulator_thread
    if cpu.numa is None and wanted.numa is not None:
        cpu.numa = wanted.numa.model_copy(deep=True)
    if cpu.realtime is None and wanted.realtime is not None:
        cpu.realtime = wanted.realtime.model_copy(deep=True)
    if wanted.max_sockets is not None:
        cpu.max_sockets = wanted.max_sockets
    cpu.sockets, cpu.cores, cpu.threads = guest_topology(wanted.guest, preference)
    return []


def _float32(value: float) -> float:
    # KubeVirt computes the overcommitted request in float32; each step rounds to single precision.
    rounded: float = struct.unpack("f", struct.pack("f", value))[0]
    return rounded


def _overcommitted_request(guest: Quantity, percent: int) -> Quantity:
    kept = _float32(1 - _float32(_float32(percent) / 100))
    return Quantity.from_int(int(_float32(_float32(guest.value()) * kept)), guest.format)


def _memory(base: str, instancetype: VirtualMachineInstancetypeSpec, domain: DomainSpec) -> list[Conflict]:
    resources = domain.resources or ResourceRequirements()
    if domain.memory is not None:
        return [Conflict.at(base, "domain", "memory")]
    if _MEMORY in _resource_names(resources.requests):
        return [Conflict.at(base, "domain", "resources", "requests", _MEMORY)]
    if _MEMORY in _resource_names(resources.limits):
        return [Conflict.at(base, "domain", "resources", "limits", _MEMORY)]
    wanted = instancetype.memory
    domain.memory = Memory(guest=wanted.guest)
    if wanted.overcommit_percent:
        domain.resources = resources
        resources.requests = dict(resources.requests or {})
        resources.requests[_MEMORY] = _overcommitted_request(wanted.guest, wanted.overcommit_percent)
    if wanted.hugepages is not None:
        domain.memory.hugepages = wanted.hugepages.model_copy(deep=True)
    if wanted.max_guest is not None:
        domain.memory.max_guest = wanted.max_guest
    return []


def _io_threads_policy(
    base: str, instancetype: VirtualMachineInstancetypeSpec, domain: DomainSpec
) -> list[Conflict]:
    if instancetype.io_threads_policy is None:
        return []
    if domain.io_threads_policy is not None:
        return [Conflict.at(base, "domain", "ioThreadsPolicy")]
    domain.io_threads_policy = instancetype.io_threads_policy
    return []


def _launch_security(
    base: str, instancetype: VirtualMachineInstancetypeSpec, domain: DomainSpec
) -> list[Conflict]:
    if instancetype.launch_security is None:
        return []
    if domain.launch_security is not None:
        return [Conflict.at(base, "domain", "launchSecurity")]
    domain.launch_security = instancetype.launch_security.model_copy(deep=True)
    return []


def _gpus(base: str, instancetype: VirtualMachineInstancetypeSpec, devices: Devices) -> list[Conflict]:
    if not instancetype.gpus:
        return []
    if devices.gpus:
        return [Conflict.at(base, "domain", "devices", "gpus")]
    devices.gpus = [gpu.model_copy(deep=True) for gpu in instancetype.gpus]
    return []


def _host_devices(
    base: str, instancetype: VirtualMachineInstancetypeSpec, devices: Devices
) -> list[Conflict]:
    if not instancetype.host_devices:
        return []
    if devices.host_devices:
        return [Conflict.at(base, "domain", "devices", "hostDevices")]
    devices.host_devices = [device.model_copy(deep=True) for device in instancetype.host_devices]
    return []


def _annotations(wanted: dict[str, str] | None, metadata: meta_v1.ObjectMeta) -> list[Conflict]:
    """Copies the instance type's annotations; a different value already there is a conflict."""
    if metadata.annotations is None:
        metadata.annotations = {}
    conflicts = []
    for key, value in (wanted or {}).items():
        if key not in metadata.annotations:
            metadata.annotations[key] = value
        elif metadata.annotations[key] != value:
            # KubeVirt names these paths from the annotations map itself, without the metadata prefix.
            conflicts.append(Conflict.at("annotations", key))
    return conflicts
