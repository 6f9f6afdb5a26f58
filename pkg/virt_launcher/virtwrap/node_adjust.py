"""What the converter leaves to the node: virt-launcher's adjustments to the domain XML before defining it.

The converter is pure and node-agnostic; here we apply facts only the node knows: whether KVM can be used
(otherwise QEMU's TCG emulation, domain type ``qemu``), whether a disk's file system takes O_DIRECT (cache
``none`` needs it), and the MTU of a tap device the pod network prepared.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from lxml import etree

# Host CPU models cannot be emulated faithfully by TCG; QEMU's own maximal model stands in for them.
_HOST_CPU_MODES = {"host-model", "host-passthrough"}


def supports_direct_io(path: str) -> bool:
    flags = os.O_RDONLY | getattr(os, "O_DIRECT", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    os.close(fd)
    return True


@dataclasses.dataclass(frozen=True)
class NodeFacts:
    use_emulation: bool = False
    sys_class_net: Path = Path("/sys/class/net")
    direct_io: Callable[[str], bool] = supports_direct_io


def kvm_usable(device: Path = Path("/dev/kvm")) -> bool:
    """Whether /dev/kvm can be opened for read and write (a pod without the device cannot)."""
    try:
        fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    os.close(fd)
    return True


def adjust_domain_xml(xml: str, facts: NodeFacts) -> str:
    root = etree.fromstring(xml.encode())
    if facts.use_emulation:
        _use_emulation(root)
    for disk in root.iterfind("devices/disk"):
        _choose_cache_mode(disk, facts.direct_io)
    for interface in root.iterfind("devices/interface"):
        _adopt_tap_mtu(interface, facts.sys_class_net)
    return etree.tostring(root, encoding="unicode")


def _use_emulation(root: etree._Element) -> None:
    root.set("type", "qemu")
    cpu = root.find("cpu")
    if cpu is not None and cpu.get("mode") in _HOST_CPU_MODES:
        cpu.set("mode", "maximum")
        if "check" in cpu.attrib:
            del cpu.attrib["check"]
        for model in cpu.findall("model"):
            cpu.remove(model)


def _choose_cache_mode(disk: etree._Element, direct_io: Callable[[str], bool]) -> None:
    source = disk.find("source")
    driver = disk.find("driver")
    if source is None or driver is None:
        return
    path = source.get("file") or source.get("dev")
    if path is None or not os.path.exists(path):
        return
    if driver.get("cache") in (None, "none") and not direct_io(path):
        # cache=none opens with O_DIRECT, which tmpfs and some overlay set-ups refuse.
        driver.set("cache", "writethrough")
        if driver.get("io") == "native":
            del driver.attrib["io"]
    elif driver.get("cache") is None:
        driver.set("cache", "none")


def _adopt_tap_mtu(interface: etree._Element, sys_class_net: Path) -> None:
    target = interface.find("target")
    if target is None or interface.find("mtu") is not None:
        return
    device = target.get("dev")
    if not device:
        return
    mtu = ""
    with contextlib.suppress(OSError):
        mtu = (sys_class_net / device / "mtu").read_text().strip()
    if mtu.isdigit():
        etree.SubElement(interface, "mtu", size=mtu)


def without_slotless_max_memory(xml: str) -> str | None:
    """The domain without ``<maxMemory slots="0">``, or None if it has none.

    KubeVirt declares virtio-mem hotplug room as a slotless maximum; libvirt before 10 refuses that
    ("both maximum memory size and memory slot count must be specified"). Such a libvirt runs the guest
    without memory hotplug rather than not at all.
    """
    root = etree.fromstring(xml.encode())
    found = [element for element in root.findall("maxMemory") if element.get("slots") in (None, "0")]
    if not found:
        return None
    for element in found:
        root.remove(element)
    return etree.tostring(root, encoding="unicode")
