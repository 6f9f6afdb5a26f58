"""The instance type and preference admitters (KubeVirt's ``pkg/instancetype/webhooks`` and
``pkg/instancetype/preference/webhooks``): the few rules beyond the CRD schema."""

from __future__ import annotations

from typing import Final

from kubevirt.admission import causes as c
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.instancetype.topology import SPREAD_TOPOLOGIES, spread_options
from kubevirt_api.instancetype.v1beta1 import (
    PreferredCPUTopology,
    SpreadAcross,
    VirtualMachineInstancetypeSpec,
    VirtualMachinePreferenceSpec,
)

__all__ = ["deprecation_warnings", "instancetype_spec_causes", "preference_spec_causes"]

_SPEC: Final = Path("spec")
_DEPRECATED: Final = {
    PreferredCPUTopology.DEPRECATED_PREFER_SOCKETS: PreferredCPUTopology.SOCKETS,
    PreferredCPUTopology.DEPRECATED_PREFER_CORES: PreferredCPUTopology.CORES,
    PreferredCPUTopology.DEPRECATED_PREFER_THREADS: PreferredCPUTopology.THREADS,
    PreferredCPUTopology.DEPRECATED_PREFER_SPREAD: PreferredCPUTopology.SPREAD,
    PreferredCPUTopology.DEPRECATED_PREFER_ANY: PreferredCPUTopology.ANY,
}
_TOPOLOGIES: Final = frozenset({*_DEPRECATED, *_DEPRECATED.values()})
_ACROSS: Final = (SpreadAcross.CORES_THREADS, SpreadAcross.SOCKETS_CORES, SpreadAcross.SOCKETS_CORES_THREADS)


def instancetype_spec_causes(spec: VirtualMachineInstancetypeSpec) -> list[StatusCause]:
    """Overcommit between 0 and 100 percent, and never together with hugepages."""
    overcommit = _SPEC.child("memory", "overcommitPercent")
    percent = spec.memory.overcommit_percent or 0
    out: list[StatusCause] = []
    if not 0 <= percent <= 100:
        out.append(c.invalid(overcommit, f"{overcommit} '{percent}': must be in range between 0 and 100."))
    if percent and spec.memory.hugepages is not None:
        hugepages = _SPEC.child("memory", "hugepages")
        out.append(c.invalid(overcommit, f"{overcommit} and {hugepages} should not be requested together."))
    return out


def preference_spec_causes(spec: VirtualMachinePreferenceSpec) -> list[StatusCause]:
    """A known CPU topology; for ``spread``, a known ``across`` and the only ratio cores/threads allow."""
    topology = spec.cpu.preferred_cpu_topology if spec.cpu is not None else None
    if topology is None:
        return []
    cpu = _SPEC.child("cpu")
    if topology not in _TOPOLOGIES:
        return [c.invalid(cpu.child("preferredCPUTopology"), f"unknown preferredCPUTopology {topology}")]
    if topology not in SPREAD_TOPOLOGIES:
        return []
    ratio, across = spread_options(spec)
    if across not in _ACROSS:
        return [c.invalid(cpu.child("spreadOptions", "across"), f"across {across} is not supported")]
    if across == SpreadAcross.CORES_THREADS and ratio != 2:
        message = (
            "only a ratio of 2 (1 core 2 threads) is allowed when spreading vCPUs over cores and threads"
        )
        return [c.invalid(cpu.child("spreadOptions", "ratio"), message)]
    return []


def deprecation_warnings(spec: VirtualMachinePreferenceSpec) -> list[str]:
    """The warning an accepted preference with a ``prefer*`` topology gets."""
    topology = spec.cpu.preferred_cpu_topology if spec.cpu is not None else None
    if topology not in _DEPRECATED:
        return []
    return [
        f"PreferredCPUTopology {topology} is deprecated for removal in a future release, "
        f"please use {_DEPRECATED[topology]} instead"
    ]
