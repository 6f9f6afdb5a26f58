"""What an instance type owns in a VMI spec: its sizing, devices and placement.

Each step either fills the spec from the instance type or, when the spec already sets the field,
reports a :class:`Conflict` at ``<base>.<field>``. The spec is changed in place.
"""

from __future__ import annotations

import copy
import struct
from typing import Final

from kubevirt.instancetype.conflict import Conflict
from kubevirt.instancetype.topology import guest_topology
from kubevirt_api.core.v1.domain import CPU, DomainSpec, Memory, ResourceRequirements
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
    domain, devices = spec.domain, spec.domain.devices
    conflicts: list[Conflict] = []
    conflicts += _take(base, instancetype.node_selector, spec, "node_selector", "nodeSelector")
    conflicts += _take(base, instancetype.scheduler_name, spec, "scheduler_name", "schedulerName")
    conflicts += _cpu(base, instancetype, preference, domain)
    conflicts += _memory(base, instancetype, domain)
    conflicts += _take(
        base, instancetype.io_threads_policy, domain, "io_threads_policy", "domain", "ioThreadsPolicy"
    )
    conflicts += _take(
        base, instancetype.launch_security, domain, "launch_security", "domain", "launchSecurity"
    )
    conflicts += _take(base, instancetype.gpus, devices, "gpus", "domain", "devices", "gpus")
    conflicts += _take(
        base, instancetype.host_devices, devices, "host_devices", "domain", "devices", "hostDevices"
    )
    conflicts += _annotations(instancetype.annotations, metadata)
    return conflicts


def _given(value: object) -> bool:
    # As KubeVirt tests them: strings and lists by length, maps and structs by presence.
    if isinstance(value, str | list):
        return len(value) > 0
    return value is not None


def _take(base: str, wanted: object, target: object, attribute: str, *path: str) -> list[Conflict]:
    """The instance type's value, if it has one; a conflict at ``path`` when the VM set it too."""
    if not _given(wanted):
        return []
    if _given(getattr(target, attribute)):
        return [Conflict.at(base, *path)]
    setattr(target, attribute, copy.deepcopy(wanted))
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
