"""Opening what a served volume holds without ever leaving it, and KubeVirt's readability checks.

Every path below a volume is resolved by ``openat2`` with the volume as the root
(:mod:`kubevirt.safepath`): ``..`` stops at the volume's top and a symlink, absolute or relative, is
followed as if the volume were the whole file system, so no request reaches a file outside it.
Opens never block: a FIFO planted in a volume opens at once and is then refused as not a file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from kubevirt import safepath
from kubevirt.log import get_logger

OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY
# Entries KubeVirt leaves out of a volume's archive and its readability check.
EXCLUDED = frozenset({"lost+found"})


def open_below(root: Path, relative: str) -> int:
    """A read-only descriptor of ``relative`` inside the directory ``root``."""
    if "\0" in relative:
        raise safepath.UnsafePathError(errno.EINVAL, "a NUL byte in a path", relative)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return safepath.openat2(root_fd, relative.lstrip("/") or ".", OPEN_FLAGS, resolve=safepath.IN_ROOT)
    finally:
        os.close(root_fd)


def readable_tree(directory: Path) -> bool:
    """KubeVirt's ``checkDirectoryPermissions``: the directory's entries (but ``lost+found``) can be
    read. Only the files and directories an archive reads are opened; symlinks are archived as links."""
    log = get_logger(path=str(directory))
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        log.error("cannot open the volume", reason=str(err))
        return False
    try:
        with os.scandir(dir_fd) as entries:
            for entry in entries:
                if entry.name in EXCLUDED or not _read_when_archived(entry):
                    continue
                os.close(os.open(entry.name, OPEN_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd))
    except OSError as err:
        log.error("the volume's contents may lack read permissions", reason=str(err), entry=err.filename)
        return False
    finally:
        os.close(dir_fd)
    return True


def _read_when_archived(entry: os.DirEntry[str]) -> bool:
    return entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False)


def readable_volume(path: Path) -> bool:
    """KubeVirt's ``checkVolumePermissions``: a directory's entries, or the device or file itself."""
    log = get_logger(path=str(path))
    try:
        mode = path.stat().st_mode
    except OSError as err:
        log.error("cannot stat the volume", reason=str(err))
        return False
    if stat.S_ISDIR(mode):
        return readable_tree(path)
    try:
        os.close(os.open(path, OPEN_FLAGS | os.O_CLOEXEC))
    except OSError as err:
        log.error("cannot open the volume", reason=str(err))
        return False
    return True
