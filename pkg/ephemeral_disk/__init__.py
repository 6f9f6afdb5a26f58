"""Disk images made with ``qemu-img``: qcow2 overlays over read-only images, and empty qcow2 disks.

An overlay is made once: a resync or a restarted launcher finds it in place and leaves it alone (a
running guest writes to it). Files are written under a staging name and renamed into place, so a
crash never leaves a half-made image where the domain looks for one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path

from kubevirt import childprocess

QEMU_IMG = "qemu-img"
PRLIMIT = "prlimit"  # util-linux
# KubeVirt's --disk-memory-limit default (virt-config's DefaultDiskVerificationMemoryLimitBytes)
DEFAULT_INFO_MEMORY_LIMIT = 2000 * 1024 * 1024
INFO_CPU_SECONDS = 10  # a crafted image must not keep qemu-img busy
SUPPORTED_FORMATS = ("raw", "qcow2")
_STAGING = ".staging"


class DiskImageError(Exception):
    """qemu-img failed, or an image is not one a guest may be given."""


@dataclasses.dataclass(frozen=True)
class DiskInfo:
    format: str
    virtual_size: int
    actual_size: int
    backing_file: str


def disk_info(path: Path, *, memory_limit: int = DEFAULT_INFO_MEMORY_LIMIT) -> DiskInfo:
    """``qemu-img info`` of ``path``, bounded in CPU time and memory as KubeVirt bounds it."""

    # prlimit, not a preexec_fn: code between fork and exec is unsafe in a process with threads.
    limits = [PRLIMIT, f"--cpu={INFO_CPU_SECONDS}", *([f"--as={memory_limit}"] if memory_limit > 0 else [])]
    output = _run([*limits, QEMU_IMG, "info", "--output", "json", str(path)])
    try:
        info = json.loads(output)
        return DiskInfo(
            format=str(info["format"]),
            virtual_size=int(info.get("virtual-size", 0)),
            actual_size=int(info.get("actual-size", 0)),
            backing_file=str(info.get("backing-filename", "")),
        )
    except (ValueError, KeyError, TypeError) as err:
        raise DiskImageError(f"cannot read qemu-img's description of {path}: {err}") from None


def verify_image(info: DiskInfo) -> None:
    """Only raw and qcow2 images without a backing file of their own may back a guest's disk."""
    if info.format not in SUPPORTED_FORMATS:
        raise DiskImageError(f"unsupported image format: {info.format}")
    if info.backing_file:
        raise DiskImageError(f"expected no backing file, but found {info.backing_file}")


def create_backed_image(overlay: Path, backing: Path, backing_format: str) -> bool:
    """A qcow2 ``overlay`` over ``backing`` unless one is there already; whether it was made now."""
    if backing_format not in SUPPORTED_FORMATS:
        raise DiskImageError(f"unsupported backing format: {backing_format}")
    backing = backing.absolute()  # qemu-img resolves a relative one against the overlay's directory
    return _create(overlay, lambda staging: ["-b", str(backing), "-F", backing_format, str(staging)])


def create_qcow2(path: Path, size: int) -> bool:
    """An empty (sparse) qcow2 image of ``size`` bytes unless one is there already."""
    return _create(path, lambda staging: [str(staging), str(size)])


def _create(path: Path, arguments: Callable[[Path], list[str]]) -> bool:
    if path.exists() or path.is_symlink():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(path.name + _STAGING)
    with contextlib.suppress(FileNotFoundError):
        staging.unlink()
    try:
        _run([QEMU_IMG, "create", "-f", "qcow2", *arguments(staging)])
        os.chmod(staging, 0o640)  # shared by the launcher and QEMU, nobody else
        os.rename(staging, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            staging.unlink()
        raise
    return True


def _run(command: list[str]) -> str:
    try:
        # An owned child: virt-launcher reaps every other one, and its status would be lost.
        result = childprocess.run(command)
    except OSError as err:
        raise DiskImageError(f"cannot run {' '.join(command[:2])}: {err}") from None
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip() or f"exit status {result.returncode}"
        tool = command.index(QEMU_IMG)
        raise DiskImageError(f"{QEMU_IMG} {command[tool + 1]} failed: {message}")
    return str(result.stdout)
