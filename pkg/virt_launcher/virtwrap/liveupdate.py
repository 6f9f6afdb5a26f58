"""What a running domain is changed to when a VMI's CPUs or memory are hotplugged (KubeVirt's
``pkg/liveupdate/memory`` and the vCPU count of ``UpdateVCPUs``), read from the request's VMI.

Memory beyond what the guest booted with comes from one virtio-mem device on guest NUMA node 0: its
size is the room up to ``maxGuest``, its requested size what ``guest`` asks for beyond the boot memory.
"""

from __future__ import annotations

from kubevirt.view_quantity import quantity
from kubevirt.virt_launcher.virtwrap import api
from kubevirt.virt_launcher.virtwrap.errors import InvalidRequestError
from kubevirt_api.view import View, VMIView

# virtio-mem plugs memory in blocks of at least a transparent hugepage (2MiB on x86_64), the size QEMU
# recommends; a guest backed by 1Gi hugepages plugs whole pages.
HOTPLUG_BLOCK_BYTES = 0x200000
HOTPLUG_1G_HUGEPAGES_BLOCK_BYTES = 0x40000000
VIRTIO_MEM = "virtio-mem"


def _topology_part(cpu: View, key: str) -> int:
    return cpu.integer(key, minimum=0)


def requested_vcpus(vmi: VMIView) -> int:
    """The vCPUs the guest is to have: sockets x cores x threads, a part left out counting as 1; without
    any topology, the CPU limit (else the request) as sockets, as KubeVirt's ``GetCPUTopology``."""
    cpu = vmi.spec.object("domain").object("cpu")
    sockets, cores, threads = (_topology_part(cpu, key) for key in ("sockets", "cores", "threads"))
    if not (sockets or cores or threads):
        resources = vmi.spec.object("domain").object("resources")
        limits = resources.object("limits")
        source = limits if limits.has("cpu") else resources.object("requests")
        sockets = quantity(source, "cpu")
    return max(sockets, 1) * max(cores, 1) * max(threads, 1)


def _bytes(value: int) -> api.Memory:
    return api.Memory(unit="b", value=value)


def block_size(vmi: VMIView) -> int:
    """The virtio-mem block: a 1Gi hugepage for a guest backed by them, else 2MiB."""
    hugepages = vmi.spec.object("domain").object("memory").object("hugepages")
    return HOTPLUG_1G_HUGEPAGES_BLOCK_BYTES if hugepages.string("pageSize") == "1Gi" else HOTPLUG_BLOCK_BYTES


def memory_device(vmi: VMIView) -> api.MemoryDevice:
    """The virtio-mem device for the VMI's guest memory (KubeVirt's ``BuildMemoryDevice``)."""
    memory = vmi.spec.object("domain").object("memory")
    status = vmi.status.object("memory")
    for parent, key in ((memory, "guest"), (memory, "maxGuest"), (status, "guestAtBoot")):
        if not parent.has(key):
            raise InvalidRequestError(f"{parent.at(key)}: required for memory hotplug")
    guest, max_guest = quantity(memory, "guest"), quantity(memory, "maxGuest")
    at_boot = quantity(status, "guestAtBoot")
    if not at_boot <= guest <= max_guest:
        raise InvalidRequestError(
            f"memory hotplug needs guestAtBoot ({at_boot}) <= guest ({guest}) <= maxGuest ({max_guest})"
        )
    return api.MemoryDevice(
        model=VIRTIO_MEM,
        target=api.MemoryTarget(
            size=_bytes(max_guest - at_boot),
            node="0",
            block=_bytes(block_size(vmi)),
            requested=_bytes(guest - at_boot),
        ),
    )
