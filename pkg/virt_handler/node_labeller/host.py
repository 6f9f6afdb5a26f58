"""Host facts the labels need beyond libvirt's XML: realtime scheduling, and Hyper-V support in KVM.

The Hyper-V capabilities come from ``/dev/kvm``: ``KVM_CHECK_EXTENSION`` for the capabilities KVM
announces, ``KVM_GET_MSR_INDEX_LIST`` for those known by the MSRs KVM emulates (KubeVirt's table).
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from pathlib import Path

from kubevirt.log import get_logger

KVM_PATH = Path("/dev/kvm")
SCHED_RT_RUNTIME = Path("/proc/sys/kernel/sched_rt_runtime_us")

_KVM_CHECK_EXTENSION = 0xAE03  # _IO(KVMIO, 0x03)
_KVM_GET_MSR_INDEX_LIST = 0xC004AE02  # _IOWR(KVMIO, 0x02, struct kvm_msr_list)

# (label name, KVM capability or 0, MSR or 0): a capability, when given, decides alone.
HYPERV_CAPABILITIES: tuple[tuple[str, int, int], ...] = (
    ("base", 44, 0),
    ("time", 96, 0),
    ("vpindex", 149, 0x40000002),
    ("tlbflush", 155, 0),
    ("ipi", 161, 0),
    ("synic", 123, 0x40000080),
    ("synic2", 148, 0x40000080),
    ("frequencies", 0, 0x40000022),
    ("reset", 0, 0x40000003),
    ("runtime", 0, 0x40000010),
    ("synictimer", 0, 0x400000B0),
    ("reenlightenment", 0, 0x40000106),
)


def realtime_capable(path: Path = SCHED_RT_RUNTIME) -> bool:
    """Whether realtime tasks may use the CPU without limit (``kernel.sched_rt_runtime_us = -1``)."""
    try:
        return path.read_text().strip() == "-1"
    except OSError:
        return False


def _msr_indices(fd: int) -> set[int]:
    probe = bytearray(struct.pack("I", 0))
    try:
        fcntl.ioctl(fd, _KVM_GET_MSR_INDEX_LIST, probe)
    except OSError as err:
        if err.errno != errno.E2BIG:
            raise
    (count,) = struct.unpack_from("I", probe)
    listing = bytearray(struct.pack("I", count) + bytes(4 * count))
    fcntl.ioctl(fd, _KVM_GET_MSR_INDEX_LIST, listing)
    (count,) = struct.unpack_from("I", listing)
    return set(struct.unpack_from(f"{count}I", listing, 4))


def hyperv_capabilities(path: Path = KVM_PATH) -> list[str]:
    """The Hyper-V enlightenments this node's KVM offers; none without a usable ``/dev/kvm``."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError as err:
        get_logger().info(
            "no Hyper-V labels: cannot open the KVM device", path=str(path), reason=err.strerror
        )
        return []
    try:
        msrs = _msr_indices(fd)
        found = []
        for name, capability, msr in HYPERV_CAPABILITIES:
            exposed = msr in msrs if msr else False
            if capability:
                exposed = fcntl.ioctl(fd, _KVM_CHECK_EXTENSION, capability) > 0
            if exposed:
                found.append(name)
        return found
    except OSError as err:
        get_logger().warning("no Hyper-V labels: the KVM device did not answer", reason=err.strerror)
        return []
    finally:
        os.close(fd)
