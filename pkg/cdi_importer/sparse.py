"""Writing a stream to a file or block device, leaving holes where the data is zeros: a raw disk
image is mostly empty, and a sparse target costs neither the write nor the space."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import stat
from pathlib import Path
from typing import Final

from kubevirt.cdi_importer.errors import ImagePullFailedError, ImporterError, is_no_capacity, os_error_text
from kubevirt.cdi_importer.formats import Readable
from kubevirt.log import get_logger

READ_SIZE: Final = 1 << 20
BLOCK_SIZE: Final = 64 << 10  # the granularity holes are looked for at
_ZEROS: Final = bytes(READ_SIZE)
_ZERO_BLOCK: Final = bytes(BLOCK_SIZE)
_FALLOC_FL_KEEP_SIZE: Final = 0x01
_FALLOC_FL_PUNCH_HOLE: Final = 0x02


def is_device(path: Path) -> bool:
    try:
        return stat.S_ISBLK(path.stat().st_mode)
    except FileNotFoundError:
        return False


def stream_to_file(source: Readable, path: Path, *, preallocate: bool = False) -> int:
    """Copy ``source`` to ``path`` (created, or a block device written in place); the bytes copied.

    Zero blocks are skipped (a hole in a new file, a punched or zeroed range on a device) unless
    ``preallocate`` asks for every byte to be written. A full volume is a plain error; any other
    failure, reading included, is a failed pull, as CDI reports it.
    """
    device = is_device(path)
    try:
        fd = os.open(path, os.O_WRONLY | (0 if device else os.O_CREAT | os.O_TRUNC), 0o660)
    except OSError as err:
        raise ImporterError(f"could not open file: {os_error_text(err)}") from err
    try:
        return _copy(source, fd, device=device, sparse=not preallocate)
    except OSError as err:
        if not device:
            path.unlink(missing_ok=True)
        if is_no_capacity(err):
            raise ImporterError(f"unable to write to file: write {path}: {os_error_text(err)}") from err
        raise ImagePullFailedError(os_error_text(err)) from err
    except Exception as err:  # a decompressor's or the network's own error types
        if not device:
            path.unlink(missing_ok=True)
        raise ImagePullFailedError(err) from err
    finally:
        os.close(fd)


def _copy(source: Readable, fd: int, *, device: bool, sparse: bool) -> int:
    offset = 0
    hole_start = 0  # where the zeros not yet written begin
    while chunk := source.read(READ_SIZE):
        for start in range(0, len(chunk), BLOCK_SIZE):
            # A bytes slice compares with memcmp; a memoryview's comparison is item by item, far slower.
            block = chunk[start : start + BLOCK_SIZE]
            if sparse and block == (_ZERO_BLOCK if len(block) == BLOCK_SIZE else bytes(len(block))):
                offset += len(block)
                continue
            if hole_start < offset:
                _zero(fd, hole_start, offset - hole_start, device=device)
            os.pwrite(fd, block, offset)
            offset += len(block)
            hole_start = offset
    if hole_start < offset:
        _zero(fd, hole_start, offset - hole_start, device=device)
    if not device:
        os.ftruncate(fd, offset)  # a trailing hole still counts towards the size
    os.fsync(fd)
    return offset


def _zero(fd: int, start: int, length: int, *, device: bool) -> None:
    if not device:
        return  # a new file reads zeros wherever nothing was written
    # A device keeps what it held before: punch the range, or write zeros where that is unsupported.
    if _punch_hole(fd, start, length):
        return
    get_logger().info("writing zeros", offset=start, length=length)
    while length > 0:
        size = min(length, READ_SIZE)
        os.pwrite(fd, _ZEROS[:size], start)
        start += size
        length -= size


def _punch_hole(fd: int, start: int, length: int) -> bool:
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    flags = _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE
    result = libc.fallocate(fd, flags, ctypes.c_longlong(start), ctypes.c_longlong(length))
    return int(result) == 0
