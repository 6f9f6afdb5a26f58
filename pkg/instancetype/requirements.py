"""A preference's minimum guest CPUs and memory, checked against what the VM ends up with."""

from __future__ import annotations

from typing import Final

from kubevirt.instancetype.conflict import Conflict
from kubevirt.instancetype.topology import SPREAD_TOPOLOGIES, preferred_topology, spread_options
from kubevirt_api.core.v1.domain import CPU
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceSpec
from kubevirt_api.instancetype.v1beta1 import (
    PreferredCPUTopology,
    SpreadAcross,
    VirtualMachineInstancetypeSpec,
    VirtualMachinePreferenceSpec,
)
from kubevirt_api.resource import Quantity

__all__ = ["RequirementError", "check_requirements"]

_CPU_PATH: Final = "spec.template.spec.domain.cpu"
_MEMORY_PATH: Final = "spec.template.spec.domain.memory"
_INSTANCETYPE_PATH: Final = "spec.instancetype"

_INSTANCETYPE_CPU: Final = (
    "insufficient CPU resources of {} vCPU provided by instance type, preference requires {} vCPU"
)
_VM_CPU: Final = (
    "insufficient CPU resources of {} vCPU provided by VirtualMachine, "
    "preference requires {} vCPU provided as {}"
)
_NO_VM_CPU: Final = "no CPU resources provided by VirtualMachine, preference requires {} vCPU"
_INSTANCETYPE_MEMORY: Final = (
    "insufficient Memory resources of {} provided by instance type, preference requires {}"
)
_VM_MEMORY: Final = "insufficient Memory resources of {} provided by VirtualMachine, preference requires {}"

# topology → the CPU fields that must provide the vCPUs, and how KubeVirt names them in the message.
_SINGLE_FIELD: Final = {
    PreferredCPUTopology.THREADS: "threads",
    PreferredCPUTopology.DEPRECATED_PREFER_THREADS: "threads",
    PreferredCPUTopology.CORES: "cores",
    PreferredCPUTopology.DEPRECATED_PREFER_CORES: "cores",
    PreferredCPUTopology.SOCKETS: "sockets",
    PreferredCPUTopology.DEPRECATED_PREFER_SOCKETS: "sockets",
}
_ANY: Final = frozenset({PreferredCPUTopology.ANY, PreferredCPUTopology.DEPRECATED_PREFER_ANY})
_SPREAD_FIELDS: Final = {
    SpreadAcross.SOCKETS_CORES: ("sockets", "cores"),
    SpreadAcross.CORES_THREADS: ("cores", "threads"),
    SpreadAcross.SOCKETS_CORES_THREADS: ("sockets", "cores", "threads"),
}


class RequirementError(ValueError):
    """The VM does not meet its preference's requirements; ``conflicts`` name the fields short of it."""

    def __init__(self, message: str, conflicts: list[Conflict]) -> None:
        super().__init__(message)
        self.conflicts = conflicts

    @property
    def field(self) -> str:
        return ", ".join(conflict.path for conflict in self.conflicts)


def check_requirements(
    instancetype: VirtualMachineInstancetypeSpec | None,
    preference: VirtualMachinePreferenceSpec | None,
    spec: VirtualMachineInstanceSpec,
) -> None:
    """Raises :class:`RequirementError` for the first unmet requirement (CPU before memory)."""
    if preference is None or preference.requirements is None:
        return
    if preference.requirements.cpu is not None:
        _check_cpu(instancetype, preference, preference.requirements.cpu.guest, spec)
    if preference.requirements.memory is not None:
        _check_memory(instancetype, preference.requirements.memory.guest, spec)


def _check_cpu(
    instancetype: VirtualMachineInstancetypeSpec | None,
    preference: VirtualMachinePreferenceSpec,
    required: int,
    spec: VirtualMachineInstanceSpec,
) -> None:
    if instancetype is not None:
        if instancetype.cpu.guest < required:
            raise RequirementError(
                _INSTANCETYPE_CPU.format(instancetype.cpu.guest, required), [Conflict(_INSTANCETYPE_PATH)]
            )
        return
    cpu = spec.domain.cpu
    if cpu is None:
        raise RequirementError(_NO_VM_CPU.format(required), [Conflict(_CPU_PATH)])
    topology = preferred_topology(preference)
    if topology in _SINGLE_FIELD:
        fields: tuple[str, ...] = (_SINGLE_FIELD[topology],)
        described = fields[0]
    elif topology in _ANY:
        fields = ("cores", "sockets", "threads")
        described = "cores, sockets and threads"
    elif topology in SPREAD_TOPOLOGIES:
        _, across = spread_options(preference)
        fields = _SPREAD_FIELDS.get(across, ())
        described = across
    else:
        return
    provided = _product(cpu, fields) if fields else 0
    if provided < required:
        raise RequirementError(
            _VM_CPU.format(provided, required, described),
            [Conflict(f"{_CPU_PATH}.{name}") for name in fields],
        )


def _product(cpu: CPU, fields: tuple[str, ...]) -> int:
    result = 1
    for name in fields:
        result *= getattr(cpu, name) or 0
    return result


def _check_memory(
    instancetype: VirtualMachineInstancetypeSpec | None, required: Quantity, spec: VirtualMachineInstanceSpec
) -> None:
    message, path = _VM_MEMORY, _MEMORY_PATH
    provided = Quantity("0Mi")
    if instancetype is not None:
        message, path = _INSTANCETYPE_MEMORY, _INSTANCETYPE_PATH
        provided = instancetype.memory.guest
    memory = spec.domain.memory
    if memory is not None and memory.guest is not None:
        provided = memory.guest
    if provided.cmp(required) < 0:
        raise RequirementError(message.format(provided, required), [Conflict(path)])
