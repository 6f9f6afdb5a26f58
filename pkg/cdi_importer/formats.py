"""What a stream holds, told by its magic bytes as CDI tells it: compression layers (gzip, xz, zstd)
are peeled off in-stream; qcow2, vmdk, vdi, vhd and vhdx need converting; anything else (raw disks,
ISOs, even text) is written as it is."""

from __future__ import annotations

import dataclasses
import gzip
import importlib
import lzma
from typing import Any, Final, Protocol

HEADER_SIZE: Final = 512  # CDI reads this much to match headers; a shorter source is refused
COMPRESSIONS: Final = frozenset({"gz", "xz", "zst"})
NEEDS_CONVERT: Final = frozenset({"qcow2", "vmdk", "vdi", "vhd", "vhdx"})


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class FormatError(Exception):
    """The stream's header could not be read or decoded."""


@dataclasses.dataclass(frozen=True)
class _Magic:
    format: str
    magic: bytes
    offset: int = 0

    def matches(self, header: bytes) -> bool:
        return header[self.offset : self.offset + len(self.magic)] == self.magic


MAGICS: Final = (
    _Magic("gz", b"\x1f\x8b"),
    _Magic("zst", b"\x28\xb5\x2f\xfd"),
    _Magic("qcow2", b"QFI\xfb"),
    _Magic("tar", b"ustar", 0x101),
    _Magic("xz", b"\xfd7zXZ\x00"),
    _Magic("vmdk", b"KDMV"),
    _Magic("vdi", b"\x7f\x10\xda\xbe", 0x40),
    _Magic("vhd", b"conectix"),
    _Magic("vhdx", b"vhdxfile"),
)


def sniff(header: bytes, exclude: frozenset[str] = frozenset()) -> str | None:
    """The format whose magic ``header`` starts with, None for raw data."""
    return next((m.format for m in MAGICS if m.format not in exclude and m.matches(header)), None)


def qcow2_virtual_size(header: bytes) -> int:
    """The disk size a qcow2 header declares (big-endian, at byte 24)."""
    return int.from_bytes(header[24:32], "big")


class Prefixed:
    """A stream with bytes already read from it put back in front."""

    def __init__(self, prefix: bytes, rest: Readable) -> None:
        self._prefix = memoryview(prefix)
        self._rest = rest

    def read(self, size: int = -1, /) -> bytes:
        if not self._prefix:
            return self._rest.read(size)
        if size < 0:
            data = bytes(self._prefix) + self._rest.read()
            self._prefix = memoryview(b"")
            return data
        data = bytes(self._prefix[:size])
        self._prefix = self._prefix[size:]
        return data


@dataclasses.dataclass(frozen=True)
class Readers:
    """The innermost stream and what was found on the way to it."""

    top: Readable
    formats: tuple[str, ...]  # outermost first; empty for raw data
    header: bytes  # the first HEADER_SIZE bytes of ``top``

    @property
    def convert(self) -> bool:
        return bool(self.formats) and self.formats[-1] in NEEDS_CONVERT

    @property
    def image_format(self) -> str:
        """The image's own format once compression is peeled off ("raw" when none was recognised)."""
        inner = [f for f in self.formats if f not in COMPRESSIONS]
        return inner[-1] if inner else "raw"


def read_full(stream: Readable, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = stream.read(left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def open_readers(stream: Readable) -> Readers:
    """Peel compression layers off ``stream`` until an image format, or raw data, shows."""
    top: Readable = stream
    found: list[str] = []
    while True:
        header = _read_header(top)
        top = Prefixed(header, top)
        fmt = sniff(header, frozenset(found))
        if fmt is None:
            return Readers(top, tuple(found), header)
        found.append(fmt)
        if fmt not in COMPRESSIONS:
            return Readers(top, tuple(found), header)
        top = decompressor(fmt, top)


def _read_header(stream: Readable) -> bytes:
    try:
        header = read_full(stream, HEADER_SIZE)
    except (OSError, EOFError, lzma.LZMAError) as err:
        raise FormatError(f"could not process image header: {err}") from err
    if not header:
        raise FormatError("could not process image header: EOF")
    if len(header) < HEADER_SIZE:
        raise FormatError("could not process image header: unexpected EOF")
    return header


def decompressor(fmt: str, stream: Readable) -> Readable:
    if fmt == "gz":
        gz: Readable = gzip.GzipFile(fileobj=stream, mode="rb")  # type: ignore[call-overload]
        return gz
    if fmt == "xz":
        return lzma.LZMAFile(stream)  # type: ignore[arg-type]
    return _zstd_reader(stream)


def _zstd_reader(stream: Readable) -> Readable:
    # zstandard is an optional dependency: without it a zstd stream is refused with a clear reason.
    try:
        zstandard: Any = importlib.import_module("zstandard")
    except ImportError:
        raise FormatError("could not create zst reader: zstd decompression is not available") from None
    reader: Readable = zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True)
    return reader
