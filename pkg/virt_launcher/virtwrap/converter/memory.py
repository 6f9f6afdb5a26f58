"""Guest memory: size, hotplug ceiling, hugepage backing."""

from __future__ import annotations

from kubevirt_api.resource import Quantity

from .. import api
from .conversion import Conversion, quantity_to_bytes, resource_quantity

MEMFD_ANNOTATION = "kubevirt.io/memfd"


def configure_memory(c: Conversion) -> None:
    """``<memory>`` from the guest memory (else requests, else limits) and ``<maxMemory>`` for hotplug."""
    memory = c.vmi.spec.domain.memory
    guest, field = virtual_memory(c)
    max_guest = memory.max_guest if memory else None
    if (
        max_guest is not None
        and memory is not None
        and memory.guest is not None
        and max_guest != memory.guest
    ):
        c.domain.max_memory = api.MaxMemory(
            unit="b", slots=0, value=quantity_to_bytes(max_guest, "spec.domain.memory.maxGuest")
        )
    c.domain.memory = api.Memory(unit="b", value=quantity_to_bytes(guest, field) if guest is not None else 0)


def virtual_memory(c: Conversion) -> tuple[Quantity | None, str]:
    """The memory the guest sees and the field it comes from: guest, else requests, else limits."""
    memory = c.vmi.spec.domain.memory
    guest = memory.guest if memory else None
    field = "spec.domain.memory.guest"
    if guest is None:
        guest = resource_quantity(c.vmi, "requests", "memory")
        field = "spec.domain.resources.requests.memory"
    if guest is None:
        guest = resource_quantity(c.vmi, "limits", "memory")
        field = "spec.domain.resources.limits.memory"
    return guest, field


def configure_memory_backing(c: Conversion) -> None:
    """Hugepages and virtiofs: memfd-backed memory (hugepages may opt out) and a NUMA cell holding
    all of it, which memfd needs; virtiofs also needs the memory shared with its daemon."""
    domain_spec = c.vmi.spec.domain
    backing: api.MemoryBacking | None = None
    memfd = False
    if domain_spec.memory is not None and domain_spec.memory.hugepages is not None:
        backing = api.MemoryBacking(hugepages=api.HugePages())
        annotations = (c.vmi.metadata.annotations if c.vmi.metadata else None) or {}
        memfd = annotations.get(MEMFD_ANNOTATION) != "false"
    if any(fs.virtiofs is not None for fs in domain_spec.devices.filesystems or []):
        backing = backing or api.MemoryBacking()
        backing.access = api.MemoryBackingAccess(mode="shared")
        memfd = True
    c.domain.memory_backing = backing
    if backing is None or not memfd:
        return
    backing.source = api.MemoryBackingSource(type="memfd")
    if c.domain.cpu.numa is None:
        vcpus = c.domain.vcpu.cpus if c.domain.vcpu and c.domain.vcpu.cpus else c.requested_vcpus
        guest = virtual_memory(c)[0]
        kib = (guest.value() if guest is not None else 0) // 1024
        cell = api.NUMACell(id="0", cpus=f"0-{vcpus - 1}", memory=kib, unit="KiB")
        c.domain.cpu.numa = api.NUMA(cells=[cell])
