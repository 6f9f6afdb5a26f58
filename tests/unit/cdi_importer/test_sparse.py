"""Raw data is written with holes where it is zero, and write failures read as CDI reports them."""

from __future__ import annotations

import errno
import io
from pathlib import Path

import pytest

from kubevirt.cdi_importer.errors import ImporterError, os_error_text
from kubevirt.cdi_importer.sparse import BLOCK_SIZE, stream_to_file

MIB = 1 << 20


def test_zero_blocks_become_holes_and_the_content_is_unchanged(tmp_path: Path) -> None:
    data = b"head" + bytes(8 * MIB) + b"middle" + bytes(4 * MIB)  # ends in zeros: the size must still hold
    target = tmp_path / "disk.img"
    assert stream_to_file(io.BytesIO(data), target) == len(data)
    assert target.read_bytes() == data
    assert target.stat().st_blocks * 512 < 2 * MIB
    assert oct(target.stat().st_mode & 0o777) != "0o0"


def test_preallocation_writes_every_byte(tmp_path: Path) -> None:
    data = bytes(4 * MIB)
    target = tmp_path / "disk.img"
    stream_to_file(io.BytesIO(data), target, preallocate=True)
    assert target.read_bytes() == data
    assert target.stat().st_blocks * 512 >= 4 * MIB


def test_an_existing_file_is_replaced_not_merged(tmp_path: Path) -> None:
    target = tmp_path / "disk.img"
    target.write_bytes(b"\xff" * (3 * BLOCK_SIZE))
    stream_to_file(io.BytesIO(bytes(BLOCK_SIZE) + b"x"), target)
    assert target.read_bytes() == bytes(BLOCK_SIZE) + b"x"


class _Failing:
    def __init__(self, after: bytes) -> None:
        self._data = io.BytesIO(after)

    def read(self, size: int = -1, /) -> bytes:
        chunk = self._data.read(size)
        if not chunk:
            raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
        return chunk


def test_a_read_failure_part_way_is_a_failed_pull_and_leaves_no_file(tmp_path: Path) -> None:
    target = tmp_path / "disk.img"
    with pytest.raises(ImporterError, match=r"^failed to pull image: connection reset by peer$"):
        stream_to_file(_Failing(b"abc" * 1000), target)
    assert not target.exists()


def test_os_errors_read_as_go_writes_them() -> None:
    err = OSError(errno.ENOSPC, "No space left on device", "/data/disk.img")
    assert os_error_text(err) == "/data/disk.img: no space left on device"
    assert os_error_text(OSError(errno.EDQUOT, "x")) == "disk quota exceeded"
