"""hostDisk volumes and filesystem claims: a disk image in a directory mounted into the launcher pod.

The directory is mounted at ``<vmi-disks>/<volume>/``; which volumes have an image there, and its name,
type and size, is :mod:`.volumes` (KubeVirt's rule). As in KubeVirt, virt-handler makes the missing
``DiskOrCreate`` images through the pod's root before the VMI reaches its launcher, with the cluster
configuration's toleration and reserve; the launcher then only checks they are there (:mod:`.files`).
"""

from kubevirt.host_disk.files import (
    TOLERATED_SMALL_PV_REASON,
    NotEnoughSpaceError,
    create,
    plan,
    require,
    tolerated_message,
)
from kubevirt.host_disk.volumes import (
    DISK,
    DISK_OR_CREATE,
    PVC_DISK_IMAGE,
    HostDiskError,
    HostDiskImage,
    images,
)

__all__ = [
    "DISK",
    "DISK_OR_CREATE",
    "PVC_DISK_IMAGE",
    "TOLERATED_SMALL_PV_REASON",
    "HostDiskError",
    "HostDiskImage",
    "NotEnoughSpaceError",
    "create",
    "images",
    "plan",
    "require",
    "tolerated_message",
]
