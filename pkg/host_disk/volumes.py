"""Which volumes of a VMI are disk images in ``<vmi-disks>/<volume>/``, and what each must be.

Two kinds, in ``spec.volumes`` order: each ``hostDisk`` (the image is the base name of its path, in the
directory virt-controller mounts), and each filesystem claim, which KubeVirt's ``ReplacePVCByHostDisk``
turns into a ``DiskOrCreate`` hostDisk ``disk.img`` sized from the claim. A claim counts when
``status.volumeStatus`` has its ``persistentVolumeClaimInfo`` and it is neither hotplugged, nor a
filesystem passed through to the guest, nor in Block mode. Hotplugged volumes are virt-handler's
hotplug business, never images here.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from kubevirt import pod_paths, safepath
from kubevirt.emptydisk import MIB
from kubevirt.view_quantity import quantity
from kubevirt_api.view import View, VMIView

DISK = "Disk"
DISK_OR_CREATE = "DiskOrCreate"
PVC_DISK_IMAGE = "disk.img"  # a filesystem claim's image, as the converter expects it
_CLAIMS = ("persistentVolumeClaim", "dataVolume")


class HostDiskError(ValueError):
    """The host disk cannot be used or made; the message names the field."""


@dataclass(frozen=True)
class HostDiskImage:
    """One volume's image: ``<vmi-disks>/<volume>/<file_name>``."""

    volume: str
    path: str  # hostDisk.path, or the claim's disk.img path in the pod
    disk_type: str  # DISK or DISK_OR_CREATE
    capacity: int  # bytes; 0 when none is given
    source: str  # the volume source's field path: spec.volumes[N].hostDisk / .persistentVolumeClaim / ...
    claim: bool = False

    @property
    def file_name(self) -> str:
        return posixpath.basename(self.path)

    @property
    def path_field(self) -> str:
        """The field an error about the image names."""
        return self.source if self.claim else f"{self.source}.path"

    @property
    def or_create(self) -> bool:
        return self.disk_type == DISK_OR_CREATE


def images(vmi: VMIView) -> list[HostDiskImage]:
    """The VMI's host-disk images; a field that cannot make one raises :class:`HostDiskError`."""
    vmi = VMIView(vmi.data, vmi.path, error=HostDiskError)
    statuses = {str(entry.get("name")): entry for entry in vmi.volume_statuses()}
    hotplugged = {name for name, entry in statuses.items() if entry.has("hotplugVolume")}
    passthrough = {str(item.get("name")) for item in vmi.devices.items("filesystems")}
    found: list[HostDiskImage] = []
    for volume in vmi.volumes():
        name = volume.get("name")
        if name in hotplugged or not (volume.has("hostDisk") or any(volume.has(k) for k in _CLAIMS)):
            continue
        if not isinstance(name, str) or not safepath.plain_name(name):
            raise volume.fail("name", f"{str(name)[:80]!r} is not a volume name")
        if volume.has("hostDisk"):
            found.append(_host_disk(name, volume.object("hostDisk")))
            continue
        key = next(k for k in _CLAIMS if volume.has(k))
        entry = statuses.get(name)
        if key == "dataVolume" and not volume.object(key).string("name"):
            continue
        if entry is None or not entry.has("persistentVolumeClaimInfo") or name in passthrough:
            continue
        info = entry.object("persistentVolumeClaimInfo")
        if info.get("volumeMode") == "Block":
            continue
        path = posixpath.join(pod_paths.VMI_DISKS_DIR, name, PVC_DISK_IMAGE)
        found.append(HostDiskImage(name, path, DISK_OR_CREATE, _claim_size(info, name), volume.at(key), True))
    return found


def _host_disk(name: str, source: View) -> HostDiskImage:
    path = source.string("path", required=True)
    if not safepath.plain_name(posixpath.basename(path)):
        raise source.fail("path", f"{path[:200]!r} does not name a file")
    disk_type = source.string("type") or DISK
    return HostDiskImage(name, path, disk_type, quantity(source, "capacity"), source.path)


def _claim_size(info: View, name: str) -> int:
    """KubeVirt's size for a claim's image: the requested size when the capacity is larger or unknown,
    else the capacity; rounded down to whole MiB."""
    capacity = quantity(info.object("capacity"), "storage")
    requested = quantity(info.object("requests"), "storage")
    if not capacity and not requested:
        raise HostDiskError(
            f"{info.path}: unable to determine capacity of HostDisk from PVC that provides no storage "
            "capacity or requests"
        )
    size = requested if requested and (not capacity or capacity > requested) else capacity
    size -= size % MIB
    if size <= 0:
        raise HostDiskError(f"{info.path}: the size for volume {name} is too low, must be at least 1MiB")
    return size
