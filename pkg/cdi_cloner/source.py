"""What a clone sends before compression: a tar of the source claim's files (GNU tar, as CDI runs it,
so that a sparse disk image keeps its holes unless preallocation asks for every byte), or the bytes
of the source block device; and how many bytes that is expected to be, for the progress."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Final

from kubevirt.cdi_cloner.config import ClonerConfig
from kubevirt.log import get_logger

TAR: Final = "/usr/bin/tar"
EXCLUDED: Final = frozenset({"lost+found"})  # the filesystem's own, not the claim's data
_STDERR_KEPT: Final = 4096  # of tar's complaints, what the failure message carries


class SourceError(Exception):
    """The source could not be opened or read to its end."""


class TarReader:
    """The standard output of ``tar``, which must exit 0 once it is read to its end."""

    def __init__(self, process: subprocess.Popen[bytes], stderr: IO[bytes]) -> None:
        self._process = process
        self._stderr = stderr
        if process.stdout is None:
            raise SourceError("tar has no standard output")
        self._stdout = process.stdout

    def read(self, size: int = -1, /) -> bytes:
        data = self._stdout.read(size)
        if data or size == 0:
            return data
        code = self._process.wait()
        if code != 0:
            self._stderr.seek(0)
            complaint = self._stderr.read(_STDERR_KEPT).decode(errors="replace").strip()
            raise SourceError(f"Subprocess did not execute successfully, result is: {code} {complaint}")
        return b""

    def close(self) -> None:
        """Stop tar if the upload ended before the archive did."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._stdout.close()
        self._stderr.close()


class DeviceReader:
    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle

    def read(self, size: int = -1, /) -> bytes:
        return self._handle.read(size)

    def close(self) -> None:
        self._handle.close()


Source = TarReader | DeviceReader


def open_source(config: ClonerConfig) -> Source:
    """The stream to send. Raises SourceError with CDI's words."""
    if config.block:
        try:
            return DeviceReader(config.mount_point.open("rb"))
        except OSError as err:
            raise SourceError(f"Error opening block device {str(config.mount_point)!r}: {err}") from err
    try:
        return _tar(config.mount_point, sparse=not config.preallocation)
    except OSError as err:
        raise SourceError(f"Error creating tar reader for {str(config.mount_point)!r}: {err}") from err


def _tar(mount: Path, *, sparse: bool) -> TarReader:
    args = [TAR, "-c", "-f", "-"]
    if sparse:
        args.append("-S")  # holes are sent as such: only without preallocation, as in CDI
    names = sorted(entry.name for entry in os.scandir(mount) if entry.name not in EXCLUDED)
    args += ["--", *names] if names else ["--files-from", "/dev/null"]
    get_logger().info("Executing tar", args=args, directory=str(mount))
    # Never a pipe: tar would block on it with nobody reading. The reader closes it.
    stderr = tempfile.TemporaryFile()  # noqa: SIM115
    try:
        process = subprocess.Popen(args, cwd=mount, stdout=subprocess.PIPE, stderr=stderr)
    except OSError:
        stderr.close()
        raise
    return TarReader(process, stderr)


def upload_bytes(config: ClonerConfig) -> int:
    """About how many bytes the source holds, as the startup script measures it: the device's size;
    or the files' size (``du -sb``) when preallocating, else the space they take (``du -s``), which
    is about what a sparse tar carries."""
    if config.block:
        with config.mount_point.open("rb") as device:
            return device.seek(0, os.SEEK_END)
    return disk_usage(config.mount_point, apparent=config.preallocation)


def disk_usage(root: Path, *, apparent: bool) -> int:
    """``du -s`` of ``root`` in bytes (each inode once, folders included); apparent sizes or blocks."""
    seen: set[tuple[int, int]] = set()
    total = 0

    def count(stat: os.stat_result) -> None:
        nonlocal total
        if (stat.st_dev, stat.st_ino) in seen:
            return
        seen.add((stat.st_dev, stat.st_ino))
        total += stat.st_size if apparent else stat.st_blocks * 512

    count(root.lstat())
    for directory, folders, files in os.walk(root):
        for name in folders + files:
            try:
                count(os.lstat(os.path.join(directory, name)))
            except OSError:
                continue  # gone since it was listed
    return total
