"""Reading snappy's framing format as it arrives (CDI's upload server reads a clone's body with Go's
snappy Reader). The library decodes whole frames only, so the stream is cut here at chunk boundaries
and each run of whole chunks is decoded (and its checksums checked) by it; a partial chunk waits for
the rest. Memory stays bounded: a chunk holds at most 64 KiB of data."""

from __future__ import annotations

from typing import Final

import cramjam

from kubevirt.cdi_importer.formats import Readable

READ_SIZE: Final = 256 << 10  # compressed bytes taken at a time (zeros expand about 20 times)
STREAM_IDENTIFIER: Final = b"\xff\x06\x00\x00sNaPpY"  # the chunk every framed stream starts with
_HEADER: Final = 4  # chunk type, then its length in 3 little-endian bytes
_RESERVED_UNSKIPPABLE: Final = range(0x02, 0x80)


class SnappyError(ValueError):
    """The body is not a whole, intact snappy framed stream."""


class FramedReader:
    """The decompressed data of a framed stream read from ``stream``."""

    def __init__(self, stream: Readable) -> None:
        self._stream = stream
        self._pending = bytearray()  # compressed bytes not yet making a whole chunk
        self._out = memoryview(b"")
        self._started = False
        self._eof = False

    def read(self, size: int = -1, /) -> bytes:
        while not self._out and not self._eof:
            self._fill()
        if size < 0:
            parts = [bytes(self._out)]
            self._out = memoryview(b"")
            parts += iter(lambda: self.read(READ_SIZE), b"")
            return b"".join(parts)
        data = bytes(self._out[:size])
        self._out = self._out[size:]
        return data

    def _fill(self) -> None:
        data = self._stream.read(READ_SIZE)
        if not data:
            self._eof = True
            if self._pending:
                raise SnappyError("snappy: unexpected end of stream in a chunk")
            return
        self._pending += data
        if not self._started:
            if len(self._pending) < len(STREAM_IDENTIFIER):
                return
            if not self._pending.startswith(STREAM_IDENTIFIER):
                raise SnappyError("snappy: corrupt input (no stream identifier)")
            self._started = True
        end = self._whole_chunks()
        if end == 0:
            return
        frames = STREAM_IDENTIFIER + bytes(self._pending[:end])  # each run decoded as a stream of its own
        del self._pending[:end]
        try:
            self._out = memoryview(bytes(cramjam.snappy.decompress(frames)))
        except Exception as err:  # cramjam's decompression error has no public type
            raise SnappyError(f"snappy: corrupt input: {err}") from err

    def _whole_chunks(self) -> int:
        """The length of the longest run of whole chunks at the start of the pending bytes."""
        pending = self._pending
        position = 0
        while position + _HEADER <= len(pending):
            kind = pending[position]
            length = int.from_bytes(pending[position + 1 : position + _HEADER], "little")
            if kind in _RESERVED_UNSKIPPABLE:
                raise SnappyError(f"snappy: unsupported chunk type {kind:#x}")
            if position + _HEADER + length > len(pending):
                break
            position += _HEADER + length
        return position
