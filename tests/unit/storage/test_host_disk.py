"""hostDisk images: Disk must exist, DiskOrCreate makes a sparse file that fits, symlinks are refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubevirt import host_disk

FIELD = "spec.volumes[0].hostDisk"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    (tmp_path / "vmi-disks" / "host").mkdir(parents=True)
    return tmp_path / "vmi-disks"


def prepare(base: Path, volume: str, path: str, disk_type: str, capacity: int, field: str) -> int | None:
    size = host_disk.plan(base, volume, path, disk_type, capacity, field)
    if size is not None:
        assert host_disk.create(base, volume, path, size, field)
    return size


def test_disk_or_create_makes_a_sparse_raw_file_once(base: Path) -> None:
    size = prepare(base, "host", "/data/vm/disk.img", "DiskOrCreate", 64 << 20, FIELD)
    image = base / "host" / "disk.img"
    assert size == 64 << 20
    assert image.stat().st_size == 64 << 20
    assert image.stat().st_blocks == 0  # sparse
    image.write_bytes(b"guest data")
    assert prepare(base, "host", "/data/vm/disk.img", "DiskOrCreate", 64 << 20, FIELD) is None
    assert not host_disk.create(base, "host", "/data/vm/disk.img", 64 << 20, FIELD)  # made meanwhile
    assert image.read_bytes() == b"guest data"  # kept


def test_disk_must_exist(base: Path) -> None:
    with pytest.raises(
        host_disk.HostDiskError, match=r"spec.volumes\[0\].hostDisk.path: /d/disk.img does not exist"
    ):
        prepare(base, "host", "/d/disk.img", "Disk", 0, FIELD)
    (base / "host" / "disk.img").write_bytes(bytes(512))
    assert prepare(base, "host", "/d/disk.img", "Disk", 0, FIELD) is None


def _available(base: Path) -> int:
    info = os.statvfs(base / "host")
    return info.f_bavail * info.f_frsize - host_disk.MINIMUM_RESERVE_BYTES


def test_a_huge_capacity_is_refused_without_writing_in_kubevirts_words(base: Path) -> None:
    with pytest.raises(host_disk.NotEnoughSpaceError) as caught:
        prepare(base, "host", "/d/disk.img", "DiskOrCreate", 1 << 62, FIELD)
    assert str(caught.value) == (
        f"unable to create /d/disk.img, not enough space, demanded size {1 << 62} B is bigger than "
        f"available space {_available(base)} B, also after taking 10 % toleration into account"
    )
    assert list((base / "host").iterdir()) == []


def test_a_little_less_room_is_tolerated(base: Path) -> None:
    available = _available(base)
    requested = available + available // 20  # 5 % more than there is: within the 10 % toleration
    assert prepare(base, "host", "/d/disk.img", "DiskOrCreate", requested, FIELD) == available


def test_the_tolerated_small_pv_event_is_kubevirts() -> None:
    assert host_disk.TOLERATED_SMALL_PV_REASON == "ToleratedSmallPV"
    assert host_disk.tolerated_message(1073741824, 1000000000) == (
        "PV size too small: expected 1073741824 B, found 1000000000 B. "
        "Using it anyway, it is within 10 % toleration"
    )


def test_capacity_is_required_to_create(base: Path) -> None:
    with pytest.raises(host_disk.HostDiskError, match=r"hostDisk.capacity: required"):
        prepare(base, "host", "/d/disk.img", "DiskOrCreate", 0, FIELD)


def test_an_image_that_is_a_symlink_is_refused(base: Path, tmp_path: Path) -> None:
    (tmp_path / "host-secret").write_bytes(b"root:x")
    (base / "host" / "disk.img").symlink_to(tmp_path / "host-secret")
    for disk_type in ("Disk", "DiskOrCreate"):
        with pytest.raises(host_disk.HostDiskError, match="symlink: refused"):
            prepare(base, "host", "/d/disk.img", disk_type, 1 << 20, FIELD)
    assert (tmp_path / "host-secret").read_bytes() == b"root:x"


def test_a_volume_directory_that_is_a_symlink_is_refused(base: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (base / "linked").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(host_disk.HostDiskError, match="symlink: refused"):
        prepare(base, "linked", "/d/disk.img", "DiskOrCreate", 1 << 20, FIELD)
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize("path", ["/d/..", "/", "/d/.", ""])
def test_paths_naming_no_file_are_refused(base: Path, path: str) -> None:
    with pytest.raises(host_disk.HostDiskError, match=r"hostDisk.path: .* does not name a file"):
        prepare(base, "host", path, "DiskOrCreate", 1 << 20, FIELD)


def test_a_climbing_volume_name_is_refused(base: Path) -> None:
    with pytest.raises(host_disk.HostDiskError, match="is not a volume name"):
        prepare(base, "..", "/d/disk.img", "DiskOrCreate", 1 << 20, FIELD)
