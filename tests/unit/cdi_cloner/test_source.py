"""The stream a clone sends before compression, and its expected size."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from kubevirt.cdi_cloner import source
from kubevirt.cdi_cloner.config import BLOCKDEVICE_CLONE, FILESYSTEM_CLONE, ClonerConfig
from kubevirt.cdi_cloner.source import SourceError, disk_usage, open_source, upload_bytes

MIB = 1 << 20


def config(mount: Path, content_type: str = FILESYSTEM_CLONE, *, preallocation: bool = False) -> ClonerConfig:
    return ClonerConfig(
        content_type, mount, "uid", "key", "cert", "ca", "https://h/v1beta1/upload", preallocation
    )


def read_all(mount: Path, *, preallocation: bool = False) -> bytes:
    reader = open_source(config(mount, preallocation=preallocation))
    try:
        return b"".join(iter(lambda: reader.read(64 << 10), b""))
    finally:
        reader.close()


def sparse_image(path: Path, size: int = 8 * MIB) -> bytes:
    with path.open("wb") as handle:
        handle.seek(3 * MIB)
        handle.write(b"data" * 1024)
        handle.truncate(size)
    return path.read_bytes()


def test_tar_of_the_mount_leaves_lost_and_found_out(tmp_path: Path) -> None:
    image = sparse_image(tmp_path / "disk.img")
    (tmp_path / "lost+found").mkdir()
    (tmp_path / "lost+found" / "x").write_bytes(b"fsck")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "file").write_bytes(b"nested")
    with tarfile.open(fileobj=io.BytesIO(read_all(tmp_path))) as archive:
        names = sorted(archive.getnames())
        assert names == ["disk.img", "sub", "sub/file"]
        disk = archive.extractfile("disk.img")
        assert disk is not None
        assert disk.read() == image


def test_without_preallocation_holes_stay_holes(tmp_path: Path) -> None:
    sparse_image(tmp_path / "disk.img", 64 * MIB)
    assert len(read_all(tmp_path)) < 2 * MIB
    assert len(read_all(tmp_path, preallocation=True)) > 64 * MIB


def test_an_empty_mount_is_an_empty_archive(tmp_path: Path) -> None:
    (tmp_path / "lost+found").mkdir()
    with tarfile.open(fileobj=io.BytesIO(read_all(tmp_path))) as archive:
        assert archive.getnames() == []


def test_a_failing_tar_is_an_error_with_its_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "tar"
    fake.write_text("#!/bin/sh\nprintf partial\necho 'tar: disk.img: Cannot open' >&2\nexit 2\n")
    fake.chmod(0o755)
    monkeypatch.setattr(source, "TAR", str(fake))
    mount = tmp_path / "mount"
    mount.mkdir()
    with pytest.raises(SourceError) as caught:
        read_all(mount)
    assert str(caught.value) == (
        "Subprocess did not execute successfully, result is: 2 tar: disk.img: Cannot open"
    )


def test_a_missing_mount_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="Error creating tar reader for"):
        open_source(config(tmp_path / "absent"))
    with pytest.raises(SourceError, match="Error opening block device"):
        open_source(config(tmp_path / "absent", BLOCKDEVICE_CLONE))


def test_a_device_is_read_as_it_is(tmp_path: Path) -> None:
    device = tmp_path / "device"
    data = sparse_image(device, 2 * MIB)
    reader = open_source(config(device, BLOCKDEVICE_CLONE))
    try:
        assert reader.read(4 * MIB) == data
    finally:
        reader.close()
    assert upload_bytes(config(device, BLOCKDEVICE_CLONE)) == 2 * MIB


def test_upload_bytes_is_du(tmp_path: Path) -> None:
    sparse_image(tmp_path / "disk.img", 16 * MIB)
    os.link(tmp_path / "disk.img", tmp_path / "again")  # one inode, counted once
    apparent = upload_bytes(config(tmp_path, preallocation=True))
    used = upload_bytes(config(tmp_path))
    assert 16 * MIB <= apparent < 16 * MIB + 64 * 1024
    assert used < MIB
    assert used == disk_usage(tmp_path, apparent=False)
