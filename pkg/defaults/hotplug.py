"""CPU and memory hotplug ceilings, filled in when the rollout strategy is LiveUpdate."""

from __future__ import annotations

from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.resource import BINARY_SI, Quantity

from .settings import MAX_HOTPLUG_RATIO, MAX_HOTPLUG_VCPUS

_UINT32 = 0xFFFFFFFF
GIB = 1 << 30
HOTPLUG_ALIGNMENT = 2 << 20


def set_cpu_hotplug_defaults(vmi: VirtualMachineInstance) -> None:
    """``maxSockets`` = sockets * ratio, lowered so that the guest never exceeds 512 vCPUs."""
    cpu = vmi.spec.domain.cpu
    if cpu is None or cpu.max_sockets:
        return
    sockets = cpu.sockets or 0
    cores = cpu.cores or 0
    threads = cpu.threads or 0
    max_sockets = (sockets * MAX_HOTPLUG_RATIO) & _UINT32  # KubeVirt computes in uint32
    if (max_sockets * cores * threads) & _UINT32 > MAX_HOTPLUG_VCPUS:
        max_sockets = max(MAX_HOTPLUG_VCPUS // (cores * threads), sockets)
    cpu.max_sockets = max_sockets or None


def supports_memory_hotplug(vmi: VirtualMachineInstance) -> bool:
    """KubeVirt's live-update memory rules: amd64, ≥ 1Gi, aligned, no realtime/NUMA passthrough/SEV."""
    spec = vmi.spec
    domain = spec.domain
    if spec.architecture != "amd64" or domain.launch_security is not None:
        return False
    cpu = domain.cpu
    if cpu is not None and (cpu.realtime is not None or (cpu.numa and cpu.numa.guest_mapping_passthrough)):
        return False
    memory = domain.memory
    if memory is None or memory.guest is None:
        return False
    guest = memory.guest.value()
    alignment = HOTPLUG_ALIGNMENT
    if memory.hugepages is not None and memory.hugepages.page_size == "1Gi":
        alignment = GIB
    return guest >= GIB and guest % alignment == 0


def set_memory_hotplug_defaults(vmi: VirtualMachineInstance) -> None:
    memory = vmi.spec.domain.memory
    if memory is None or memory.guest is None or memory.max_guest is not None:
        return
    if supports_memory_hotplug(vmi):
        memory.max_guest = Quantity.from_int(memory.guest.value() * MAX_HOTPLUG_RATIO, BINARY_SI)
