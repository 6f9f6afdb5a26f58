"""Disk images in the pod: containerDisk overlays, empty disks, host disks, PVC disk.img, kernel boot.

Each ``*_steps`` function checks its volumes and returns the steps that make the missing images; an
image that exists is never replaced (a guest may be writing to it). Host disks and filesystem claims'
``disk.img`` are virt-handler's to make (as in KubeVirt): here they are only checked.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Mapping
from typing import Any

from kubevirt import emptydisk, host_disk, safepath
from kubevirt.container_disk import images as container_disk
from kubevirt.ephemeral_disk import DiskImageError
from kubevirt.virt_launcher.storage.request import (
    Step,
    StorageDirs,
    hotplugged,
    quantity,
    sources,
)
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError
from kubevirt_api.view import VMIView

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


def check_host_disks(dirs: StorageDirs, vmi: VMIView) -> None:
    """Each hostDisk's image and each filesystem claim's ``disk.img`` must be in its directory, a regular
    file or a block device reached through no symlink: virt-handler made the missing ``DiskOrCreate`` ones
    before the sync, as in KubeVirt. A claim the pod has as a block device needs none."""
    try:
        wanted = host_disk.images(vmi)
    except host_disk.HostDiskError as err:
        raise StoragePreparationError(str(err)) from None
    if not wanted:
        return
    with _host_disk_base(dirs, wanted[0]) as base:
        for image in wanted:
            if image.claim and _is_block(dirs, image.volume):
                continue
            try:
                host_disk.require(base, image)
            except host_disk.HostDiskError as err:
                raise StoragePreparationError(str(err)) from None


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


@contextlib.contextmanager
def _host_disk_base(dirs: StorageDirs, first: host_disk.HostDiskImage) -> Iterator[int]:
    try:
        base = os.open(dirs.host_disk_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        raise StoragePreparationError(
            f"{first.path_field}: the directory of {first.path} is not mounted in the pod"
        ) from None
    with safepath.closing(base):
        yield base


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
