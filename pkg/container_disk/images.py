"""The launcher's side of containerDisks: the images virt-handler mounts, and the guest's overlays on them.

virt-handler bind-mounts each containerDisk's image file read-only at ``<container-disks>/disk_<N>.img``
(N: the volume's index in ``spec.volumes``) and a kernel-boot image's kernel and initrd below
``<container-disks>/kernel-boot/``. The guest never writes to an image: it gets a qcow2 overlay at
``<ephemeral-disks>/disk-data/<volume>/disk.qcow2`` backed by it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kubevirt import pod_paths, safepath
from kubevirt.ephemeral_disk import (
    DEFAULT_INFO_MEMORY_LIMIT,
    DiskImageError,
    DiskInfo,
    create_backed_image,
    disk_info,
    verify_image,
)

OVERLAY_NAME = "disk.qcow2"


def disk_target_name(volume_index: int) -> str:
    return f"disk_{volume_index}.img"


def overlay_path(ephemeral_disk_dir: Path, volume_name: str) -> Path:
    return ephemeral_disk_dir / pod_paths.DISK_DATA / volume_name / OVERLAY_NAME


def kernel_boot_artifact_path(container_disk_dir: Path, artifact: str) -> Path:
    """Where a kernel-boot image's ``kernelPath``/``initrdPath`` is found (by its base name)."""
    return container_disk_dir / pod_paths.KERNEL_BOOT / os.path.basename(artifact)


def image_info(
    container_disk_dir: Path, volume_index: int, *, memory_limit: int = DEFAULT_INFO_MEMORY_LIMIT
) -> DiskInfo:
    """The checked description of the image mounted for the volume at ``volume_index``."""
    name = disk_target_name(volume_index)
    require_regular_file(container_disk_dir, name)
    info = disk_info(container_disk_dir / name, memory_limit=memory_limit)
    verify_image(info)
    return info


def create_overlay(
    ephemeral_disk_dir: Path, container_disk_dir: Path, volume_name: str, volume_index: int, image_format: str
) -> bool:
    """The volume's overlay unless it exists (a running guest writes to it); whether it was made now."""
    if not safepath.plain_name(volume_name):
        raise DiskImageError(f"{volume_name[:80]!r} is not a volume name")
    backing = container_disk_dir / disk_target_name(volume_index)
    require_regular_file(container_disk_dir, backing.name)
    return create_backed_image(overlay_path(ephemeral_disk_dir, volume_name), backing, image_format)


def require_regular_file(directory: Path, name: str) -> None:
    """``directory/name`` is a regular file reached without any symlink; else :class:`DiskImageError`."""
    try:
        with safepath.opened(
            directory, name, os.O_RDONLY | os.O_NONBLOCK, resolve=safepath.NO_SYMLINKS
        ) as fd:
            mode = os.fstat(fd).st_mode
    except FileNotFoundError:
        raise DiskImageError(f"no disk found at {directory / name}") from None
    except OSError as err:
        raise DiskImageError(f"{directory / name}: {err.strerror}") from None
    if not stat.S_ISREG(mode):
        raise DiskImageError(f"{directory / name} is not a regular file")
