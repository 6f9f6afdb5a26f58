"""hostDisk volumes: a disk image in a host directory that virt-controller mounts into the pod.

The directory of ``hostDisk.path`` is mounted at ``<vmi-disks>/<volume>/`` and the image is its base name.
``Disk`` needs the image there; ``DiskOrCreate`` makes a sparse raw file of ``capacity`` when it is
missing, if the directory has the room (KubeVirt tolerates 10 % less, keeping a small reserve free;
the image is then made as large as the room, and KubeVirt's ``ToleratedSmallPV`` event says so).
Every lookup refuses symlinks: the image and its directory are reached only as what they are.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from kubevirt import safepath

DISK = "Disk"
DISK_OR_CREATE = "DiskOrCreate"
# KubeVirt's developerConfiguration defaults: lessPVCSpaceToleration and minimumReservePVCBytes.
SPACE_TOLERATION_PERCENT = 10
MINIMUM_RESERVE_BYTES = 131072
TOLERATED_SMALL_PV_REASON = "ToleratedSmallPV"  # a Normal event on the VMI


class HostDiskError(ValueError):
    """The host disk cannot be used or made; the message names the field."""


class NotEnoughSpaceError(HostDiskError):
    """The directory cannot hold the image, even with the toleration; KubeVirt's words, which name the
    image's path rather than the field (they reach users as an event)."""


def image_name(path: str, field: str) -> str:
    """The image's file name in its mounted directory: the base name of ``hostDisk.path``."""
    name = os.path.basename(path)
    if not safepath.plain_name(name):
        raise HostDiskError(f"{field}: {path[:200]!r} does not name a file")
    return name


def disk_path(base_dir: Path, volume_name: str, path: str) -> Path:
    return base_dir / volume_name / os.path.basename(path)


def plan(
    base_dir: Path,
    volume_name: str,
    path: str,
    disk_type: str,
    capacity: int,
    field: str,
    *,
    toleration_percent: int = SPACE_TOLERATION_PERCENT,
    reserve: int = MINIMUM_RESERVE_BYTES,
) -> int | None:
    """Check the image: ``None`` when it is there, else the size to create it with (DiskOrCreate)."""
    name = image_name(path, f"{field}.path")
    with _volume_dir(base_dir, volume_name, path, field) as directory:
        if _existing_image(directory, name, f"{field}.path"):
            return None
        if disk_type != DISK_OR_CREATE:
            raise HostDiskError(f"{field}.path: {path} does not exist (type {disk_type or DISK})")
        if capacity <= 0:
            raise HostDiskError(f"{field}.capacity: required to create {path}")
        return _fitting_size(directory, capacity, path, toleration_percent, reserve)


def create(base_dir: Path, volume_name: str, path: str, size: int, field: str) -> bool:
    """A sparse raw image of ``size`` bytes unless one appeared meanwhile; whether it was made now."""
    with _volume_dir(base_dir, volume_name, path, field) as directory:
        return _create_sparse(directory, image_name(path, f"{field}.path"), size)


@contextlib.contextmanager
def _volume_dir(base_dir: Path, volume_name: str, path: str, field: str) -> Iterator[int]:
    if not safepath.plain_name(volume_name):
        raise HostDiskError(f"{field}: {volume_name[:80]!r} is not a volume name")
    try:
        with safepath.opened(
            base_dir, volume_name, os.O_RDONLY | os.O_DIRECTORY, resolve=safepath.NO_SYMLINKS
        ) as directory:
            yield directory
    except safepath.UnsafePathError as err:
        raise HostDiskError(
            f"{field}.path: {path} is reached through a symlink: refused ({err.strerror})"
        ) from None
    except FileNotFoundError:
        raise HostDiskError(f"{field}.path: the directory of {path} is not mounted in the pod") from None
    except OSError as err:
        raise HostDiskError(f"{field}.path: {path}: {err.strerror}") from None


def _existing_image(directory: int, name: str, field: str) -> bool:
    try:
        fd = safepath.openat2(directory, name, os.O_RDONLY | os.O_NONBLOCK, resolve=safepath.NO_SYMLINKS)
    except FileNotFoundError:
        return False
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if not (stat.S_ISREG(mode) or stat.S_ISBLK(mode)):
        raise HostDiskError(f"{field}: {name} is neither a regular file nor a block device")
    return True


def _fitting_size(directory: int, requested: int, path: str, toleration: int, reserve: int) -> int:
    info = os.fstatvfs(directory)
    available = max(info.f_bavail * info.f_frsize - reserve, 0)
    if requested <= available:
        return requested
    if requested * (100 - toleration) // 100 > available:
        raise NotEnoughSpaceError(
            f"unable to create {path}, not enough space, demanded size {requested} B is bigger than "
            f"available space {available} B, also after taking {toleration} % toleration into account"
        )
    return available


def tolerated_message(requested: int, available: int, toleration: int = SPACE_TOLERATION_PERCENT) -> str:
    """KubeVirt's ``ToleratedSmallPV`` event: the image was made smaller than asked, within the toleration."""
    return (
        f"PV size too small: expected {requested} B, found {available} B. "
        f"Using it anyway, it is within {toleration} % toleration"
    )


def _create_sparse(directory: int, name: str, size: int) -> bool:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = safepath.openat2(directory, name, flags, resolve=safepath.NO_SYMLINKS, mode=0o660)
    except FileExistsError:
        return False
    try:
        os.ftruncate(fd, size)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=directory)
        raise
    finally:
        os.close(fd)
    return True
