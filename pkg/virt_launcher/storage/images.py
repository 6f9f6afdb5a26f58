"""Disk images in the pod: containerDisk overlays, empty disks, host disks, PVC disk.img, kernel boot.

Each ``*_steps`` function checks its volumes and returns the steps that make the missing images; an
image that exists is never replaced (a guest may be writing to it).
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Callable, Mapping
from typing import Any

from kubevirt import emptydisk, host_disk, pod_paths
from kubevirt.container_disk import images as container_disk
from kubevirt.ephemeral_disk import DiskImageError
from kubevirt.virt_launcher.storage.request import (
    Step,
    StorageDirs,
    hotplugged,
    names,
    quantity,
    sources,
)
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError
from kubevirt_api.view import View, VMIView

PVC_DISK_IMAGE = "disk.img"  # a filesystem PVC's image, as the converter expects it
# Records a Kubernetes event on the VMI: type, reason, message.
EventRecorder = Callable[[str, str, str], None]
_CLAIMS = ("persistentVolumeClaim", "dataVolume")


def overlay_steps(dirs: StorageDirs, vmi: VMIView, formats: Mapping[str, str], log: Any) -> list[Step]:
    """A qcow2 overlay for each containerDisk over the image virt-handler mounted (``formats``: probed)."""

    def step(index: int, name: str) -> Step:
        def make() -> None:
            try:
                made = container_disk.create_overlay(
                    dirs.ephemeral_disk_dir, dirs.container_disk_dir, name, index, formats[name]
                )
            except DiskImageError as err:
                raise StoragePreparationError(
                    f"spec.volumes[{index}].containerDisk: preparing ephemeral container disk images "
                    f"failed: {err}"
                ) from None
            if made:
                log.info("containerDisk overlay created", volume=name, backing_format=formats[name])

        return make

    return [step(index, name) for index, name, _ in sources(vmi, "containerDisk")]


def empty_disk_steps(dirs: StorageDirs, vmi: VMIView, log: Any) -> list[Step]:
    def step(name: str, size: int, field: str) -> Step:
        def make() -> None:
            try:
                made = emptydisk.create(dirs.empty_disk_dir, name, size)
            except (ValueError, DiskImageError, OSError) as err:
                raise StoragePreparationError(f"{field}: creating empty disks failed: {err}") from None
            if made:
                log.info("empty disk created", volume=name, size=size)

        return make

    steps: list[Step] = []
    for _, name, source in sources(vmi, "emptyDisk"):
        capacity = quantity(source, "capacity")
        try:
            size = emptydisk.image_size(capacity, name, source.at("capacity"))
        except emptydisk.EmptyDiskError as err:
            raise StoragePreparationError(str(err)) from None
        steps.append(step(name, size, source.path))
    return steps


def host_disk_steps(dirs: StorageDirs, vmi: VMIView, log: Any, record: EventRecorder) -> list[Step]:
    steps: list[Step] = []
    hotplug = hotplugged(vmi)
    for _, name, source in sources(vmi, "hostDisk"):
        if name in hotplug:
            continue
        path = source.string("path", required=True)
        capacity = quantity(source, "capacity")
        disk_type = source.string("type")
        steps += _host_disk_plan(dirs, name, path, disk_type, capacity, source.path, log, record)
    return steps


def block_volumes(dirs: StorageDirs, vmi: VMIView) -> frozenset[str]:
    """The PVC and DataVolume volumes the pod has as block devices: ``/dev/<volume>``, and for a
    hotplugged volume ``<hotplug disk dir>/<volume>`` once virt-handler made its node (until then, and
    for a filesystem volume's ``<volume>.img``, it counts as a filesystem volume, as in KubeVirt)."""
    hotplug = hotplugged(vmi)
    return frozenset(
        name
        for key in _CLAIMS
        for _, name, _ in sources(vmi, key)
        if (_is_hotplug_block(dirs, name) if name in hotplug else _is_block(dirs, name))
    )


def pvc_disk_steps(dirs: StorageDirs, vmi: VMIView, log: Any, record: EventRecorder) -> list[Step]:
    """``disk.img`` in each filesystem claim that has none yet, sized from the claim (KubeVirt replaces
    such a PVC by a DiskOrCreate hostDisk at ``<vmi-disks>/<volume>/disk.img``, the path its errors
    name). An image already there is used whatever its size, as in KubeVirt."""
    claims = {
        str(entry.get("name")): entry
        for entry in vmi.volume_statuses()
        if entry.has("persistentVolumeClaimInfo")
    }
    passthrough = names(vmi.devices.items("filesystems"))
    steps: list[Step] = []
    for key in _CLAIMS:
        for _, name, source in sources(vmi, key):
            entry = claims.get(name)
            if entry is None or entry.has("hotplugVolume") or name in passthrough:
                continue
            info = entry.object("persistentVolumeClaimInfo")
            if info.get("volumeMode") == "Block" or _is_block(dirs, name):
                continue
            size = _claim_size(info, name)
            path = posixpath.join(pod_paths.VMI_DISKS_DIR, name, PVC_DISK_IMAGE)
            steps += _host_disk_plan(
                dirs, name, path, host_disk.DISK_OR_CREATE, size, source.path, log, record
            )
    return steps


def check_kernel_boot(dirs: StorageDirs, vmi: VMIView) -> None:
    """The kernel and initrd virt-handler mounted must be plain files (missing ones QEMU reports)."""
    container = vmi.spec.object("domain").object("firmware").object("kernelBoot").object("container")
    for key in ("kernelPath", "initrdPath"):
        artifact = container.string(key)
        if not artifact:
            continue
        path = container_disk.kernel_boot_artifact_path(dirs.container_disk_dir, artifact)
        if not path.parent.is_dir():
            continue  # not mounted here (yet): QEMU names the missing file
        try:
            container_disk.require_regular_file(path.parent, path.name)
        except DiskImageError as err:
            raise container.fail(key, str(err)) from None


def _host_disk_plan(
    dirs: StorageDirs,
    name: str,
    path: str,
    disk_type: str,
    capacity: int,
    field: str,
    log: Any,
    record: EventRecorder,
) -> list[Step]:
    try:
        size = host_disk.plan(dirs.host_disk_dir, name, path, disk_type, capacity, field)
    except host_disk.NotEnoughSpaceError as err:
        # KubeVirt's virt-handler words (it makes these images there): they reach the SyncFailed event.
        raise StoragePreparationError(f"preparing host-disks failed: {err}") from None
    except host_disk.HostDiskError as err:
        raise StoragePreparationError(str(err)) from None
    if size is None:
        return []

    def make() -> None:
        try:
            made = host_disk.create(dirs.host_disk_dir, name, path, size, field)
        except (host_disk.HostDiskError, OSError) as err:
            raise StoragePreparationError(f"{field}: creating the host disk failed: {err}") from None
        if made and size < capacity:
            message = host_disk.tolerated_message(capacity, size)
            log.info(message, volume=name)
            record("Normal", host_disk.TOLERATED_SMALL_PV_REASON, message)
        elif made:
            log.info("host disk created", volume=name, size=size)

    return [make]


def _is_block(dirs: StorageDirs, name: str) -> bool:
    """Whether ``/dev/<volume>`` is the volume's block device (absent: a filesystem volume)."""
    path = dirs.block_device_dir / name
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as err:
        raise StoragePreparationError(f"volume {name}: cannot check for its block device: {err}") from None
    if not stat.S_ISBLK(mode):
        raise StoragePreparationError(f"volume {name}: found {path}, but it's not a block device")
    return True


def _is_hotplug_block(dirs: StorageDirs, name: str) -> bool:
    """Whether virt-handler made a block device node for the hotplugged volume (anything else, or nothing
    yet, is no block device: KubeVirt's ``isHotplugBlockDeviceVolume`` reports no error)."""
    try:
        return stat.S_ISBLK(os.lstat(dirs.hotplug_disk_dir / name).st_mode)
    except OSError:
        return False


def _claim_size(info: View, name: str) -> int:
    """The requested size when the capacity is larger or unknown, else the capacity; whole MiB."""
    field = info.path
    capacity = quantity(info.object("capacity"), "storage")
    requested = quantity(info.object("requests"), "storage")
    if not capacity and not requested:
        raise StoragePreparationError(
            f"{field}: unable to determine capacity of HostDisk from PVC that provides no storage "
            "capacity or requests"
        )
    size = requested if requested and (not capacity or capacity > requested) else capacity
    size -= size % emptydisk.MIB
    if size <= 0:
        raise StoragePreparationError(
            f"{field}: the size for volume {name} is too low, must be at least 1MiB"
        )
    return size
