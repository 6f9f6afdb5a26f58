"""Unpacking an archive upload or import into the claim's folder, refusing what could reach outside it.

Python's ``data`` extraction filter (3.11.4 and later) does this; the images run Debian bookworm's Python
3.11.2, which lacks it, so the same rules are applied here member by member when it is missing.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path, PurePosixPath

# What the data filter keeps of a member's mode: no set-id bits, nothing writable by group or others.
_KEPT_MODE = 0o755


class UnsafeMemberError(tarfile.TarError):
    """A member that would land outside the destination, or is no regular file, folder or inner link."""


def extract_all(archive: tarfile.TarFile, destination: Path) -> None:
    """Extracts every member of a (possibly streamed) archive under ``destination``."""
    if hasattr(tarfile, "data_filter"):
        archive.extractall(destination, filter="data")
        return
    for member in archive:
        member.name = member.name.lstrip("/")  # as the data filter does: absolute names land inside
        _check(member, destination)
        member.mode = member.mode & _KEPT_MODE if member.isreg() or member.isdir() else member.mode
        member.uid = member.gid = os.getuid()
        member.uname = member.gname = ""
        archive.extract(member, destination, set_attrs=not member.issym())


def _check(member: tarfile.TarInfo, destination: Path) -> None:
    name = PurePosixPath(member.name)
    if ".." in name.parts:
        raise UnsafeMemberError(f"{member.name!r} would be extracted outside the destination")
    if not (member.isreg() or member.isdir() or member.issym()):
        raise UnsafeMemberError(f"{member.name!r} is not a regular file, folder or symbolic link")
    if member.issym():
        target = PurePosixPath(member.linkname)
        resolved = os.path.normpath(destination / name.parent / target)
        if target.is_absolute() or not resolved.startswith(str(destination)):
            raise UnsafeMemberError(f"{member.name!r} links outside the destination")
