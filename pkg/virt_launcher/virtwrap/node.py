"""What only the node knows, as one value (:class:`NodeFacts`), and the steps that fit a domain to it.

The converter is pure and node-agnostic. virt-launcher decides once whether QEMU's TCG emulation is
used (:func:`decide_emulation`), learns from libvirt whether it takes memory hotplug room without slots,
and, once the domain is built, probes the few device facts the node holds: whether each disk image
opens with O_DIRECT (cache ``none`` needs it) and is preallocated (``io=native`` suits it), and the MTU
of each tap device the pod network prepared (:func:`probe_devices`); the pod network's taps come in as
facts too (:class:`PodTap`). The steps in
:data:`NODE_STEPS` then change the domain model, never its XML.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubevirt.libvirt_units import unit_bytes
from kubevirt.virt_launcher.virtwrap import api

# Host CPU models cannot be emulated faithfully by TCG; QEMU's own maximal model stands in for them.
_HOST_CPU_MODES = {"host-model", "host-passthrough"}
# libvirt 10.0 is the first to accept <maxMemory> without a slot count (KubeVirt's virtio-mem room).
SLOTLESS_MAX_MEMORY_SINCE = 10_000_000
SYS_CLASS_NET = Path("/sys/class/net")
_QCOW2_MAGIC = b"QFI\xfb"
_QCOW2_HEADER = 32  # through the virtual size (bytes 24-31, big-endian)


@dataclasses.dataclass(frozen=True, slots=True)
class PodTap:
    """A tap device the pod network prepared for the domain interface ``name`` (phase 2 of the pod
    network): the ``<target>`` libvirt opens (never creates), the MAC and the MTU."""

    name: str
    target: str
    mac: str
    mtu: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NodeFacts:
    """The node's answers the domain depends on.

    ``emulation``: QEMU's TCG instead of KVM (domain type ``qemu``, an emulated CPU model).
    ``slotless_max_memory``: whether libvirt accepts ``<maxMemory>`` without memory slots; where it
    does not, the hotplug room gets a slot and a guest NUMA cell (:func:`slot_memory_hotplug_room`).
    ``ovmf_dir``: where the EFI firmware is on this node (empty: the converter's default).
    ``direct_io``: for each disk image that exists, whether it opens with O_DIRECT.
    ``preallocated``: for each disk image file that exists, whether all of it is allocated.
    ``tap_mtus``: the MTU of each tap device the domain's interfaces use, where it is known.
    ``block_volumes``: the PVC and DataVolume volumes the pod has as block devices (``/dev/<volume>``, or
    for a hotplugged volume a device node in the hotplug directory).
    ``pod_taps``: the tap devices the pod network prepared for the domain's interfaces.
    """

    emulation: bool = False
    slotless_max_memory: bool = True
    ovmf_dir: str = ""
    direct_io: Mapping[str, bool] = dataclasses.field(default_factory=dict)
    preallocated: Mapping[str, bool] = dataclasses.field(default_factory=dict)
    tap_mtus: Mapping[str, int] = dataclasses.field(default_factory=dict)
    block_volumes: frozenset[str] = frozenset()
    pod_taps: tuple[PodTap, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "emulation": self.emulation,
            "slotless_max_memory": self.slotless_max_memory,
            "ovmf_dir": self.ovmf_dir,
            "direct_io": dict(self.direct_io),
            "preallocated": dict(self.preallocated),
            "tap_mtus": dict(self.tap_mtus),
            "block_volumes": sorted(self.block_volumes),
            "pod_taps": [dataclasses.asdict(tap) for tap in self.pod_taps],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NodeFacts:
        return cls(
            emulation=bool(data.get("emulation")),
            slotless_max_memory=bool(data.get("slotless_max_memory", True)),
            ovmf_dir=str(data.get("ovmf_dir") or ""),
            direct_io={str(k): bool(v) for k, v in (data.get("direct_io") or {}).items()},
            preallocated={str(k): bool(v) for k, v in (data.get("preallocated") or {}).items()},
            tap_mtus={str(k): int(v) for k, v in (data.get("tap_mtus") or {}).items()},
            block_volumes=frozenset(str(v) for v in data.get("block_volumes") or ()),
            pod_taps=tuple(PodTap(**tap) for tap in data.get("pod_taps") or ()),
        )


def kvm_usable(device: Path = Path("/dev/kvm")) -> bool:
    """Whether /dev/kvm can be opened for read and write (a pod without the device cannot)."""
    try:
        fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    os.close(fd)
    return True


def decide_emulation(*, force: bool, allow: bool, kvm: Callable[[], bool] = kvm_usable) -> bool:
    """The one place emulation is decided: when forced, or when allowed and /dev/kvm cannot be used."""
    return force or (allow and not kvm())


def accepts_slotless_max_memory(libvirt_version: int) -> bool:
    """Whether a libvirt of this version (``major * 1_000_000 + minor * 1000 + micro``) takes
    ``<maxMemory>`` without slots."""
    return libvirt_version >= SLOTLESS_MAX_MEMORY_SINCE


def supports_direct_io(path: str) -> bool:
    flags = os.O_RDONLY | getattr(os, "O_DIRECT", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    os.close(fd)
    return True


def is_preallocated(path: str) -> bool:
    """KubeVirt's ``IsPreAllocated``: the image's virtual size fits in what the file occupies on disk (a
    qcow2 image's virtual size is in its header, a raw image's is the file's size)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return False
        header = os.read(fd, _QCOW2_HEADER)
    except OSError:
        return False
    finally:
        os.close(fd)
    virtual = info.st_size
    if len(header) == _QCOW2_HEADER and header.startswith(_QCOW2_MAGIC):
        virtual = int.from_bytes(header[24:32], "big")
    return virtual <= info.st_blocks * 512


def _disk_path(disk: api.Disk) -> str | None:
    return disk.source.file or disk.source.dev


def probe_devices(
    domain: api.Domain,
    node: NodeFacts,
    *,
    sys_class_net: Path = SYS_CLASS_NET,
    direct_io: Callable[[str], bool] = supports_direct_io,
    preallocated: Callable[[str], bool] = is_preallocated,
) -> NodeFacts:
    """``node`` with the facts about the domain's disk images and tap devices read from this node."""
    disks: dict[str, bool] = dict(node.direct_io)
    allocated: dict[str, bool] = dict(node.preallocated)
    for disk in domain.devices.disks:
        path = _disk_path(disk)
        if path and path not in disks and os.path.exists(path):
            disks[path] = direct_io(path)
        file = disk.source.file
        if file and file not in allocated and file in disks:
            allocated[file] = preallocated(file)
    mtus: dict[str, int] = dict(node.tap_mtus)
    for interface in domain.devices.interfaces:
        device = interface.target.dev if interface.target is not None else None
        if not device or device in mtus:
            continue
        text = ""
        with contextlib.suppress(OSError):
            text = (sys_class_net / device / "mtu").read_text().strip()
        if text.isdigit():
            mtus[device] = int(text)
    return dataclasses.replace(node, direct_io=disks, preallocated=allocated, tap_mtus=mtus)


# -- the steps: each fits one part of the domain model to the node -----------------------------------


def attach_pod_taps(domain: api.Domain, node: NodeFacts) -> None:
    """Each interface the pod network prepared a tap for opens that tap (``managed="no"``), with the
    pod's MAC and MTU; the converter leaves these pod-dependent parts out."""
    taps = {api.Alias.user_defined(tap.name).name: tap for tap in node.pod_taps}
    for interface in domain.devices.interfaces:
        tap = taps.get(interface.alias.name if interface.alias else None)
        if tap is None:
            continue
        interface.target = api.InterfaceTarget(dev=tap.target, managed="no")
        interface.mac = api.MAC(address=tap.mac)
        interface.mtu = api.MTU(size=str(tap.mtu))


def emulate_cpu(domain: api.Domain, node: NodeFacts) -> None:
    """Under TCG, a host CPU model becomes QEMU's maximal emulated one."""
    if node.emulation and domain.cpu.mode in _HOST_CPU_MODES:
        domain.cpu.mode = "maximum"
        domain.cpu.model = None


def choose_disk_cache_modes(domain: api.Domain, node: NodeFacts) -> None:
    """cache=none opens with O_DIRECT, which tmpfs and some overlay set-ups refuse: writethrough there."""
    for disk in domain.devices.disks:
        path = _disk_path(disk)
        driver = disk.driver
        if driver is None or path is None or path not in node.direct_io:
            continue
        if driver.cache in (None, "none") and not node.direct_io[path]:
            driver.cache = "writethrough"
            if driver.io == "native":
                driver.io = None
        elif driver.cache is None:
            driver.cache = "none"


def choose_disk_io_modes(domain: api.Domain, node: NodeFacts) -> None:
    """Linux native AIO for a block device or a preallocated image opened with O_DIRECT (cache ``none``)
    whose IO mode the VMI leaves open, as KubeVirt's ``SetOptimalIOMode``."""
    for disk in domain.devices.disks:
        driver = disk.driver
        if driver is None or driver.io or driver.cache != "none":
            continue
        file = disk.source.file
        if (not file and disk.source.dev) or (file and node.preallocated.get(file)):
            driver.io = "native"


def adopt_tap_mtus(domain: api.Domain, node: NodeFacts) -> None:
    """An interface without an MTU of its own takes its tap device's."""
    for interface in domain.devices.interfaces:
        device = interface.target.dev if interface.target is not None else None
        if interface.mtu is None and device and device in node.tap_mtus:
            interface.mtu = api.MTU(size=str(node.tap_mtus[device]))


def slot_memory_hotplug_room(domain: api.Domain, node: NodeFacts) -> None:
    """Where libvirt wants memory slots with ``<maxMemory>`` ("both maximum memory size and memory slot
    count must be specified"), the converter's slotless hotplug room gets the one slot the virtio-mem
    device takes, and, unless the domain has guest NUMA cells already, the single cell holding all vCPUs
    and the boot memory that memory hotplug needs there ("At least one numa node has to be configured
    when enabling memory hotplug")."""
    room = domain.max_memory
    if node.slotless_max_memory or room is None or room.slots:
        return
    room.slots = 1
    if domain.cpu.numa is not None and domain.cpu.numa.cells:
        return
    vcpus = domain.vcpu.cpus if domain.vcpu is not None and domain.vcpu.cpus else 1
    kib = (domain.memory.value or 0) * (unit_bytes(domain.memory.unit) or 1024) // 1024
    cell = api.NUMACell(id="0", cpus=f"0-{vcpus - 1}", memory=kib, unit="KiB")
    domain.cpu.numa = api.NUMA(cells=[cell])


NodeStep = Callable[[api.Domain, NodeFacts], None]
NODE_STEPS: tuple[NodeStep, ...] = (
    attach_pod_taps,
    emulate_cpu,
    choose_disk_cache_modes,
    choose_disk_io_modes,
    adopt_tap_mtus,
    slot_memory_hotplug_room,
)


def fit_to_node(domain: api.Domain, node: NodeFacts) -> None:
    """Run every node step on the domain."""
    for step in NODE_STEPS:
        step(domain, node)
