"""A host-disk image in its volume directory: checked, sized to the room there, made sparse.

Everything is reached from a descriptor of the ``vmi-disks`` directory with symlinks refused: the volume
directory and the image are used only as what they are. A ``DiskOrCreate`` image that is missing is made
when the directory has the room; KubeVirt tolerates up to ``lessPVCSpaceToleration`` percent less, once
``minimumReservePVCBytes`` are kept free, and then makes the image as large as the room.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator

from kubevirt import safepath
from kubevirt.host_disk.volumes import DISK, HostDiskError, HostDiskImage

TOLERATED_SMALL_PV_REASON = "ToleratedSmallPV"  # a Normal event on the VMI
_IMAGE_MODE = 0o660  # read and written by its owner, the qemu user (and its group)


class NotEnoughSpaceError(HostDiskError):
    """The directory cannot hold the image, even with the toleration; KubeVirt's words, which name the
    image's path rather than the field (they reach users as an event)."""


def require(base_fd: int, image: HostDiskImage) -> None:
    """The image must be in its directory, as a regular file or a block device."""
    with _volume_dir(base_fd, image) as directory:
        if not _existing_image(directory, image):
            raise _missing(image)


def plan(base_fd: int, image: HostDiskImage, *, toleration: int, reserve: int) -> int | None:
    """``None`` when the image is there, else the size to make it with (``DiskOrCreate`` only)."""
    with _volume_dir(base_fd, image) as directory:
        if _existing_image(directory, image):
            return None
        if not image.or_create:
            raise _missing(image)
        if image.capacity <= 0:
            raise HostDiskError(f"{image.source}.capacity: required to create {image.path}")
        return _fitting_size(directory, image, toleration, reserve)


def create(base_fd: int, image: HostDiskImage, size: int, *, owner: int) -> bool:
    """A sparse raw image of ``size`` bytes, given to ``owner`` (uid and gid), unless one appeared
    meanwhile; whether it was made now."""
    with _volume_dir(base_fd, image) as directory:
        return _create_sparse(directory, image.file_name, size, owner)


def tolerated_message(requested: int, available: int, toleration: int) -> str:
    """KubeVirt's ``ToleratedSmallPV`` event: the image was made smaller than asked, within the toleration."""
    return (
        f"PV size too small: expected {requested} B, found {available} B. "
        f"Using it anyway, it is within {toleration} % toleration"
    )


def _missing(image: HostDiskImage) -> HostDiskError:
    if image.or_create:
        return HostDiskError(
            f"{image.path_field}: {image.path} does not exist (virt-handler makes it before the sync)"
        )
    return HostDiskError(f"{image.path_field}: {image.path} does not exist (type {image.disk_type or DISK})")


@contextlib.contextmanager
def _volume_dir(base_fd: int, image: HostDiskImage) -> Iterator[int]:
    field, path = image.path_field, image.path
    try:
        directory = safepath.openat2(
            base_fd, image.volume, os.O_RDONLY | os.O_DIRECTORY, resolve=safepath.NO_SYMLINKS
        )
    except safepath.UnsafePathError as err:
        raise HostDiskError(
            f"{field}: {path} is reached through a symlink: refused ({err.strerror})"
        ) from None
    except FileNotFoundError:
        raise HostDiskError(f"{field}: the directory of {path} is not mounted in the pod") from None
    except OSError as err:
        raise HostDiskError(f"{field}: {path}: {err.strerror}") from None
    with safepath.closing(directory):
        yield directory


def _existing_image(directory: int, image: HostDiskImage) -> bool:
    try:
        fd = safepath.openat2(directory, image.file_name, os.O_PATH, resolve=safepath.NO_SYMLINKS)
    except FileNotFoundError:
        return False
    except safepath.UnsafePathError as err:
        raise HostDiskError(
            f"{image.path_field}: {image.path} is a symlink: refused ({err.strerror})"
        ) from None
    except OSError as err:
        raise HostDiskError(f"{image.path_field}: {image.path}: {err.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if not (stat.S_ISREG(mode) or stat.S_ISBLK(mode)):
        raise HostDiskError(f"{image.path_field}: {image.path} is neither a regular file nor a block device")
    return True


def _fitting_size(directory: int, image: HostDiskImage, toleration: int, reserve: int) -> int:
    info = os.fstatvfs(directory)
    available = max(info.f_bavail * info.f_frsize - reserve, 0)
    requested = image.capacity
    if requested <= available:
        return requested
    if available == 0 or requested * (100 - toleration) // 100 > available:
        raise NotEnoughSpaceError(
            f"unable to create {image.path}, not enough space, demanded size {requested} B is bigger than "
            f"available space {available} B, also after taking {toleration} % toleration into account"
        )
    return available


def _create_sparse(directory: int, name: str, size: int, owner: int) -> bool:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = safepath.openat2(directory, name, flags, resolve=safepath.NO_SYMLINKS, mode=_IMAGE_MODE)
    except FileExistsError:
        return False
    try:
        # The new file itself: no second lookup a link could redirect; its mode whatever the umask.
        os.fchown(fd, owner, owner)
        os.fchmod(fd, _IMAGE_MODE)
        os.ftruncate(fd, size)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=directory)
        raise
    finally:
        os.close(fd)
    return True
