"""Guest memory: size, hotplug ceiling, hugepage backing."""

from __future__ import annotations

from ..api import schema as api
from .conversion import Conversion, quantity_to_bytes, resource_quantity

MEMFD_ANNOTATION = "kubevirt.io/memfd"


def configure_memory(c: Conversion) -> None:
    """``<memory>`` from the guest memory (else requests, else limits) and ``<maxMemory>`` for hotplug."""
    memory = c.vmi.spec.domain.memory
    guest = memory.guest if memory else None
    field = "spec.domain.memory.guest"
    if guest is None:
        guest = resource_quantity(c.vmi, "requests", "memory")
        field = "spec.domain.resources.requests.memory"
    if guest is None:
        guest = resource_quantity(c.vmi, "limits", "memory")
        field = "spec.domain.resources.limits.memory"
    size = quantity_to_bytes(guest, field) if guest is not None else 0
    c.domain.memory = api.Memory(unit="b", value=size)
    max_guest = memory.max_guest if memory else None
    if max_guest is not None and (guest is None or max_guest != guest):
        c.domain.max_memory = api.MaxMemory(
            unit="b", slots=0, value=quantity_to_bytes(max_guest, "spec.domain.memory.maxGuest")
        )


def configure_memory_backing(c: Conversion) -> None:
    """Hugepages: a hugepage-backed memory (memfd unless disabled) and a NUMA cell holding all of it."""
    memory = c.vmi.spec.domain.memory
    if memory is None or memory.hugepages is None:
        return
    backing = api.MemoryBacking(hugepages=api.HugePages())
    annotations = (c.vmi.metadata.annotations if c.vmi.metadata else None) or {}
    if annotations.get(MEMFD_ANNOTATION) != "false":
        backing.source = api.MemoryBackingSource(type="memfd")
    c.domain.memory_backing = backing
    vcpus = c.domain.vcpu.cpus if c.domain.vcpu and c.domain.vcpu.cpus else c.requested_vcpus
    kib = (c.domain.memory.value or 0) // 1024
    c.domain.cpu.numa = api.NUMA(cells=[api.NUMACell(id="0", cpus=f"0-{vcpus - 1}", memory=kib, unit="KiB")])
