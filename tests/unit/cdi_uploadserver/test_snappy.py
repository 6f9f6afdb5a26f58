"""Reading snappy's framing format as it arrives, whatever the pieces it arrives in."""

from __future__ import annotations

import io
import os

import cramjam
import pytest

from kubevirt.cdi_uploadserver.snappy import FramedReader, SnappyError

MIB = 1 << 20


class Trickle:
    """A stream handing out at most ``step`` bytes a read, as a socket may."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data = io.BytesIO(data)
        self._step = step

    def read(self, size: int = -1, /) -> bytes:
        return self._data.read(self._step if size < 0 else min(size, self._step))


def framed(data: bytes) -> bytes:
    return bytes(cramjam.snappy.compress(data))


def read_all(reader: FramedReader, size: int = 100_000) -> bytes:
    return b"".join(iter(lambda: reader.read(size), b""))


@pytest.mark.parametrize("step", [1, 7, 4096, 1 << 20])
def test_any_cut_of_the_body_reads_back_whole(step: int) -> None:
    data = os.urandom(200_000) + bytes(300_000) + b"end"
    assert read_all(FramedReader(Trickle(framed(data), step))) == data


def test_concatenated_streams_read_as_one() -> None:
    assert read_all(FramedReader(io.BytesIO(framed(b"one") + framed(b"two")))) == b"onetwo"


def test_read_without_a_size_takes_the_rest() -> None:
    data = os.urandom(3 * MIB)
    reader = FramedReader(io.BytesIO(framed(data)))
    assert reader.read(10) == data[:10]
    assert reader.read() == data[10:]


def test_empty_body_is_empty() -> None:
    assert FramedReader(io.BytesIO(b"")).read(10) == b""


def test_a_stream_without_identifier_is_refused() -> None:
    raw = bytes(cramjam.snappy.compress_raw(b"x" * 100))
    with pytest.raises(SnappyError, match="no stream identifier"):
        read_all(FramedReader(io.BytesIO(raw + bytes(16))))


def test_a_cut_stream_is_refused() -> None:
    body = framed(os.urandom(100_000))
    with pytest.raises(SnappyError, match="unexpected end"):
        read_all(FramedReader(io.BytesIO(body[:-10])))


def test_a_bad_checksum_is_refused() -> None:
    body = bytearray(framed(b"checked data" * 100))
    body[14] ^= 0xFF  # the first data chunk's checksum
    with pytest.raises(SnappyError, match="corrupt"):
        read_all(FramedReader(io.BytesIO(bytes(body))))


def test_a_reserved_chunk_type_is_refused() -> None:
    body = framed(b"x") + b"\x02\x01\x00\x00z"
    with pytest.raises(SnappyError, match="unsupported chunk type 0x2"):
        read_all(FramedReader(io.BytesIO(body)))


def test_skippable_chunks_are_skipped() -> None:
    body = framed(b"before") + b"\xfe\x03\x00\x00pad" + framed(b"after")
    assert read_all(FramedReader(io.BytesIO(body))) == b"beforeafter"
