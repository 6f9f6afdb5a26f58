"""Telling a stream's format by its magic bytes, and peeling compression off in-stream, as CDI does."""

from __future__ import annotations

import gzip
import io
import lzma
import os
import sys

import pytest

from kubevirt.cdi_importer import formats
from kubevirt.cdi_importer.formats import FormatError, open_readers, sniff

QCOW2_HEADER = b"QFI\xfb\x00\x00\x00\x03" + bytes(16) + (64 << 20).to_bytes(8, "big") + bytes(480)


def _padded(prefix: bytes, offset: int = 0) -> bytes:
    return bytes(offset) + prefix + bytes(600)


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        (_padded(b"\x1f\x8b"), "gz"),
        (_padded(b"\xfd7zXZ\x00"), "xz"),
        (_padded(b"\x28\xb5\x2f\xfd"), "zst"),
        (_padded(b"QFI\xfb"), "qcow2"),
        (_padded(b"KDMV"), "vmdk"),
        (_padded(b"\x7f\x10\xda\xbe", 0x40), "vdi"),
        (_padded(b"conectix"), "vhd"),
        (_padded(b"vhdxfile"), "vhdx"),
        (_padded(b"ustar", 0x101), "tar"),
        (_padded(b"CD001", 0x8001), None),  # an ISO is raw data
        (b"just some text " * 100, None),
    ],
)
def test_magic_bytes_name_the_format(data: bytes, fmt: str | None) -> None:
    assert sniff(data[: formats.HEADER_SIZE]) == fmt


def test_raw_data_passes_through_unchanged() -> None:
    data = bytes(range(256)) * 10
    readers = open_readers(io.BytesIO(data))
    assert readers.formats == ()
    assert not readers.convert
    assert readers.image_format == "raw"
    assert readers.top.read() == data


def test_gzip_then_xz_layers_are_peeled_to_the_image_inside() -> None:
    image = QCOW2_HEADER + os.urandom(4096)  # incompressible: each layer is longer than a header
    readers = open_readers(io.BytesIO(gzip.compress(lzma.compress(image))))
    assert readers.formats == ("gz", "xz", "qcow2")
    assert readers.convert
    assert readers.image_format == "qcow2"
    assert formats.qcow2_virtual_size(readers.header) == 64 << 20
    assert readers.top.read() == image


def test_a_compressed_raw_image_needs_no_conversion() -> None:
    data = b"\x00" * 4096 + os.urandom(1024)
    readers = open_readers(io.BytesIO(lzma.compress(data)))
    assert (readers.formats, readers.convert) == (("xz",), False)
    assert readers.top.read() == data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "could not process image header: EOF"),
        (b"short", "could not process image header: unexpected EOF"),
    ],
)
def test_a_source_shorter_than_a_header_is_refused_in_cdis_words(data: bytes, message: str) -> None:
    with pytest.raises(FormatError, match=f"^{message}$"):
        open_readers(io.BytesIO(data))


def test_zstd_without_its_library_is_refused_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # an import of it now fails
    with pytest.raises(FormatError, match="zstd decompression is not available"):
        open_readers(io.BytesIO(_padded(b"\x28\xb5\x2f\xfd")))
