"""How a preference spreads an instance type's vCPUs over sockets, cores and threads."""

from __future__ import annotations

from typing import Final

from kubevirt.instancetype.conflict import Conflict
from kubevirt_api.instancetype.v1beta1 import (
    PreferredCPUTopology,
    SpreadAcross,
    VirtualMachineInstancetypeSpec,
    VirtualMachinePreferenceSpec,
)

__all__ = [
    "SPREAD_TOPOLOGIES",
    "THREADS_PER_CORE",
    "check_spread_topology",
    "guest_topology",
    "preferred_topology",
    "spread_options",
]

DEFAULT_SPREAD_RATIO: Final = 2
# Spreading across sockets, cores and threads always uses two threads per core.
THREADS_PER_CORE: Final = 2

_CORES: Final = frozenset({PreferredCPUTopology.CORES, PreferredCPUTopology.DEPRECATED_PREFER_CORES})
_THREADS: Final = frozenset({PreferredCPUTopology.THREADS, PreferredCPUTopology.DEPRECATED_PREFER_THREADS})
SPREAD_TOPOLOGIES: Final = frozenset(
    {PreferredCPUTopology.SPREAD, PreferredCPUTopology.DEPRECATED_PREFER_SPREAD}
)
_SOCKETS: Final = frozenset(
    {
        PreferredCPUTopology.SOCKETS,
        PreferredCPUTopology.DEPRECATED_PREFER_SOCKETS,
        PreferredCPUTopology.ANY,
        PreferredCPUTopology.DEPRECATED_PREFER_ANY,
    }
)

_GUEST_PATH: Final = "instancetype.spec.cpu.guest"
_NOT_DIVISIBLE_BY_RATIO: Final = (
    "{} vCPUs provided by the instance type are not divisible by the "
    "Spec.PreferSpreadSocketToCoreRatio or Spec.CPU.PreferSpreadOptions.Ratio of {} "
    "provided by the preference"
)
_NOT_DIVISIBLE_BY_THREADS: Final = (
    "{} vCPUs provided by the instance type are not divisible by the number of threads per core {}"
)
_NOT_DIVISIBLE_BY_THREADS_AND_RATIO: Final = (
    "{} vCPUs provided by the instance type are not divisible by the number of threads per core "
    "{} and Spec.PreferSpreadSocketToCoreRatio or Spec.CPU.PreferSpreadOptions.Ratio of {}"
)


def preferred_topology(preference: VirtualMachinePreferenceSpec | None) -> str:
    """The preference's CPU topology; ``sockets`` when it names none."""
    if preference is not None and preference.cpu is not None and preference.cpu.preferred_cpu_topology:
        return preference.cpu.preferred_cpu_topology
    return PreferredCPUTopology.SOCKETS


def spread_options(preference: VirtualMachinePreferenceSpec) -> tuple[int, str]:
    """``(ratio, across)`` of a spread preference, with KubeVirt's defaults (2, SocketsCores)."""
    ratio = preference.prefer_spread_socket_to_core_ratio or DEFAULT_SPREAD_RATIO
    across = SpreadAcross.SOCKETS_CORES
    options = preference.cpu.spread_options if preference.cpu is not None else None
    if options is not None:
        if options.across is not None:
            across = options.across
        if options.ratio is not None:
            ratio = options.ratio
    return ratio, across


def guest_topology(vcpus: int, preference: VirtualMachinePreferenceSpec | None) -> tuple[int, int, int]:
    """``(sockets, cores, threads)`` for ``vcpus`` guest CPUs under the preference's topology."""
    if vcpus == 1:
        return 1, 1, 1
    topology = preferred_topology(preference)
    if topology in _CORES:
        return 1, vcpus, 1
    if topology in _SOCKETS:
        return vcpus, 1, 1
    if topology in _THREADS:
        return 1, 1, vcpus
    if topology in SPREAD_TOPOLOGIES and preference is not None:
        ratio, across = spread_options(preference)
        if ratio == 0:
            return 1, 1, 1
        if across == SpreadAcross.SOCKETS_CORES:
            return vcpus // ratio, ratio, 1
        if across == SpreadAcross.CORES_THREADS:
            return 1, vcpus // ratio, ratio
        if across == SpreadAcross.SOCKETS_CORES_THREADS:
            return vcpus // THREADS_PER_CORE // ratio, ratio, THREADS_PER_CORE
    return 1, 1, 1


def check_spread_topology(
    instancetype: VirtualMachineInstancetypeSpec | None, preference: VirtualMachinePreferenceSpec | None
) -> Conflict | None:
    """A ``spread`` preference must split the instance type's vCPUs evenly; None when it does."""
    if instancetype is None or preference is None or preferred_topology(preference) not in SPREAD_TOPOLOGIES:
        return None
    guest = instancetype.cpu.guest
    ratio, across = spread_options(preference)
    if across == SpreadAcross.SOCKETS_CORES and _remainder(guest, ratio):
        return Conflict(_GUEST_PATH, _NOT_DIVISIBLE_BY_RATIO.format(guest, ratio))
    if across == SpreadAcross.CORES_THREADS and _remainder(guest, ratio):
        return Conflict(_GUEST_PATH, _NOT_DIVISIBLE_BY_THREADS.format(guest, ratio))
    if across == SpreadAcross.SOCKETS_CORES_THREADS and (
        guest % THREADS_PER_CORE or _remainder(guest // THREADS_PER_CORE, ratio)
    ):
        return Conflict(
            _GUEST_PATH, _NOT_DIVISIBLE_BY_THREADS_AND_RATIO.format(guest, THREADS_PER_CORE, ratio)
        )
    return None


def _remainder(value: int, divisor: int) -> bool:
    # A zero ratio divides nothing evenly.
    return divisor == 0 or value % divisor > 0
