"""emptyDisk volumes: a sparse qcow2 image of the requested capacity, made once per pod.

The image lives in the pod's ephemeral storage (KubeVirt: ``/var/run/libvirt/empty-disks/<volume>.qcow2``)
and goes with the pod; an image already there (a resync, a restarted launcher) is kept as the guest left it.
"""

from __future__ import annotations

from pathlib import Path

from kubevirt import safepath
from kubevirt.ephemeral_disk import create_qcow2

MIB = 1024 * 1024
# qcow2's own limit on a virtual size (QCOW_MAX_L1_SIZE with the default cluster size): 32 PiB.
MAX_SIZE = 1 << 55


class EmptyDiskError(ValueError):
    """The volume's capacity cannot become a disk; the message names the field."""


def disk_path(base_dir: Path, volume_name: str) -> Path:
    return base_dir / f"{volume_name}.qcow2"


def image_size(capacity_bytes: int, volume_name: str, field: str) -> int:
    """The capacity rounded down to a whole MiB, as KubeVirt sizes the image."""
    size = capacity_bytes - capacity_bytes % MIB
    if size <= 0:
        raise EmptyDiskError(f"{field}: the size for volume {volume_name} is too low")
    if size > MAX_SIZE:
        raise EmptyDiskError(
            f"{field}: {capacity_bytes} bytes is more than a disk image can hold ({MAX_SIZE})"
        )
    return size


def create(base_dir: Path, volume_name: str, size: int) -> bool:
    """The volume's image unless it exists; whether it was made now."""
    if not safepath.plain_name(volume_name):
        raise EmptyDiskError(f"{volume_name[:80]!r} is not a volume name")
    return create_qcow2(disk_path(base_dir, volume_name), size)
