"""Host-disk images: which volumes have one (KubeVirt's rule), Disk must exist, DiskOrCreate is made sparse
when it fits (within the toleration, keeping the reserve free), symlinks are refused."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kubevirt import host_disk
from kubevirt.host_disk import HostDiskImage
from kubevirt_api.view import VMIView

FIELD = "spec.volumes[0].hostDisk"
MIB = 1 << 20


def image(path: str = "/d/disk.img", disk_type: str = "DiskOrCreate", capacity: int = MIB) -> HostDiskImage:
    return HostDiskImage("host", path, disk_type, capacity, FIELD)


@pytest.fixture
def base(tmp_path: Path) -> Iterator[int]:
    (tmp_path / "vmi-disks" / "host").mkdir(parents=True)
    fd = os.open(tmp_path / "vmi-disks", os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


@pytest.fixture
def room(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Sets the free space the volume directory reports (in whole 4 KiB blocks)."""

    def set_room(free: int) -> None:
        monkeypatch.setattr(os, "fstatvfs", lambda _fd: SimpleNamespace(f_bavail=free // 4096, f_frsize=4096))

    return set_room


def prepare(base: int, wanted: HostDiskImage, *, toleration: int = 10, reserve: int = 0) -> int | None:
    size = host_disk.plan(base, wanted, toleration=toleration, reserve=reserve)
    if size is not None:
        assert host_disk.create(base, wanted, size, owner=os.geteuid())
    return size


def test_disk_or_create_makes_a_sparse_raw_file_once(base: int, tmp_path: Path) -> None:
    assert prepare(base, image(capacity=64 * MIB)) == 64 * MIB
    made = tmp_path / "vmi-disks" / "host" / "disk.img"
    assert made.stat().st_size == 64 * MIB
    assert made.stat().st_blocks == 0  # sparse
    assert made.stat().st_mode & 0o777 == 0o660
    made.write_bytes(b"guest data")
    assert prepare(base, image(capacity=64 * MIB)) is None
    assert not host_disk.create(base, image(), MIB, owner=os.geteuid())  # made meanwhile
    assert made.read_bytes() == b"guest data"  # kept
    host_disk.require(base, image())


def test_disk_must_exist(base: int, tmp_path: Path) -> None:
    missing = r"spec.volumes\[0\].hostDisk.path: /d/disk.img does not exist \(type Disk\)"
    with pytest.raises(host_disk.HostDiskError, match=missing):
        prepare(base, image(disk_type="Disk"))
    with pytest.raises(host_disk.HostDiskError, match=missing):
        host_disk.require(base, image(disk_type="Disk"))
    (tmp_path / "vmi-disks" / "host" / "disk.img").write_bytes(bytes(512))
    assert prepare(base, image(disk_type="Disk")) is None
    host_disk.require(base, image(disk_type="Disk"))


def test_a_missing_disk_or_create_image_is_virt_handlers_to_make(base: int) -> None:
    with pytest.raises(host_disk.HostDiskError, match=r"/d/disk.img does not exist \(virt-handler makes it"):
        host_disk.require(base, image())


def test_a_huge_capacity_is_refused_without_writing_in_kubevirts_words(
    base: int, tmp_path: Path, room: Callable[[int], None]
) -> None:
    room(100 * MIB)
    with pytest.raises(host_disk.NotEnoughSpaceError) as caught:
        prepare(base, image(capacity=1 << 62), toleration=25, reserve=MIB)
    assert str(caught.value) == (
        f"unable to create /d/disk.img, not enough space, demanded size {1 << 62} B is bigger than "
        f"available space {99 * MIB} B, also after taking 25 % toleration into account"
    )
    assert list((tmp_path / "vmi-disks" / "host").iterdir()) == []


@pytest.mark.parametrize(
    ("toleration", "made"),
    [(10, None), (20, 90 * MIB), (100, 90 * MIB)],  # 100 MiB asked, 90 MiB there: 10 % short
)
def test_the_toleration_decides_how_much_less_room_is_taken(
    base: int, room: Callable[[int], None], toleration: int, made: int | None
) -> None:
    room(90 * MIB + 4096)
    wanted = image(capacity=100 * MIB + 8192)  # a little more than 10 % short
    if made is None:
        with pytest.raises(host_disk.NotEnoughSpaceError, match="after taking 10 % toleration"):
            prepare(base, wanted, toleration=toleration, reserve=4096)
    else:
        assert prepare(base, wanted, toleration=toleration, reserve=4096) == made


def test_the_reserve_is_kept_free(base: int, room: Callable[[int], None]) -> None:
    room(64 * MIB)
    assert prepare(base, image("/d/a.img", capacity=60 * MIB), reserve=MIB) == 60 * MIB  # 63 MiB left
    # 56 MiB beyond the reserve: 60 MiB is within the 10 % toleration, the image takes what there is.
    assert prepare(base, image("/d/b.img", capacity=60 * MIB), reserve=8 * MIB) == 56 * MIB
    with pytest.raises(host_disk.NotEnoughSpaceError, match=f"available space {48 * MIB} B"):
        prepare(base, image("/d/c.img", capacity=60 * MIB), reserve=16 * MIB)


def test_no_room_beyond_the_reserve_is_never_tolerated(base: int, room: Callable[[int], None]) -> None:
    room(MIB)
    with pytest.raises(host_disk.NotEnoughSpaceError, match="available space 0 B"):
        prepare(base, image(capacity=MIB), toleration=100, reserve=2 * MIB)


def test_the_tolerated_small_pv_event_is_kubevirts() -> None:
    assert host_disk.TOLERATED_SMALL_PV_REASON == "ToleratedSmallPV"
    assert host_disk.tolerated_message(1073741824, 1000000000, 10) == (
        "PV size too small: expected 1073741824 B, found 1000000000 B. "
        "Using it anyway, it is within 10 % toleration"
    )


def test_capacity_is_required_to_create(base: int) -> None:
    with pytest.raises(host_disk.HostDiskError, match=r"hostDisk.capacity: required"):
        prepare(base, image(capacity=0))


def test_an_image_that_is_a_symlink_is_refused(base: int, tmp_path: Path) -> None:
    (tmp_path / "host-secret").write_bytes(b"root:x")
    (tmp_path / "vmi-disks" / "host" / "disk.img").symlink_to(tmp_path / "host-secret")
    for disk_type in ("Disk", "DiskOrCreate"):
        with pytest.raises(host_disk.HostDiskError, match="symlink: refused"):
            prepare(base, image(disk_type=disk_type))
        with pytest.raises(host_disk.HostDiskError, match="symlink: refused"):
            host_disk.require(base, image(disk_type=disk_type))
    assert (tmp_path / "host-secret").read_bytes() == b"root:x"


def test_a_volume_directory_that_is_a_symlink_is_refused(base: int, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "vmi-disks" / "linked").symlink_to(tmp_path / "elsewhere")
    linked = HostDiskImage("linked", "/d/disk.img", "DiskOrCreate", MIB, FIELD)
    with pytest.raises(host_disk.HostDiskError, match="symlink: refused"):
        prepare(base, linked)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_something_else_in_the_images_place_is_refused(base: int, tmp_path: Path) -> None:
    (tmp_path / "vmi-disks" / "host" / "disk.img").mkdir()
    with pytest.raises(host_disk.HostDiskError, match="neither a regular file nor a block device"):
        host_disk.require(base, image())


# -- which volumes have an image ----------------------------------------------------------------------


def vmi(
    volumes: list[dict[str, Any]], statuses: list[dict[str, Any]] | None = None, **devices: Any
) -> VMIView:
    return VMIView(
        {
            "spec": {"domain": {"devices": devices}, "volumes": volumes},
            "status": {"volumeStatus": statuses or []},
        }
    )


def claim(name: str, mode: str = "Filesystem", **info: Any) -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaimInfo": {"volumeMode": mode, **info}}


def test_host_disks_and_filesystem_claims_have_images_in_volume_order() -> None:
    found = host_disk.images(
        vmi(
            [
                {"name": "boot", "containerDisk": {"image": "example"}},
                {"name": "fs", "persistentVolumeClaim": {"claimName": "c1"}},
                {
                    "name": "host",
                    "hostDisk": {"path": "/srv/a.img", "type": "DiskOrCreate", "capacity": "8Mi"},
                },
                {"name": "dv", "dataVolume": {"name": "d1"}},
                {"name": "plain", "hostDisk": {"path": "/srv/b.img", "type": "Disk"}},
            ],
            [
                claim("fs", capacity={"storage": "20Mi"}, requests={"storage": "10.5Mi"}),  # asked: less
                claim("dv", capacity={"storage": "8Mi"}, requests={"storage": "16Mi"}),  # capacity: less
            ],
        )
    )
    assert found == [
        HostDiskImage(
            "fs",
            "/var/run/kubevirt-private/vmi-disks/fs/disk.img",
            "DiskOrCreate",
            10 * MIB,  # whole MiB
            "spec.volumes[1].persistentVolumeClaim",
            claim=True,
        ),
        HostDiskImage("host", "/srv/a.img", "DiskOrCreate", 8 * MIB, "spec.volumes[2].hostDisk"),
        HostDiskImage(
            "dv",
            "/var/run/kubevirt-private/vmi-disks/dv/disk.img",
            "DiskOrCreate",
            8 * MIB,
            "spec.volumes[3].dataVolume",
            claim=True,
        ),
        HostDiskImage("plain", "/srv/b.img", "Disk", 0, "spec.volumes[4].hostDisk"),
    ]
    assert found[0].path_field == "spec.volumes[1].persistentVolumeClaim"
    assert found[1].path_field == "spec.volumes[2].hostDisk.path"


def test_block_hotplugged_passthrough_and_unreported_claims_have_none() -> None:
    volumes = [
        {"name": name, "persistentVolumeClaim": {"claimName": name}}
        for name in ("block", "hotplugged", "shared", "unreported")
    ]
    volumes.append({"name": "hot-host", "hostDisk": {"path": "/srv/h.img", "type": "DiskOrCreate"}})
    statuses = [
        claim("block", "Block", capacity={"storage": "1Gi"}),
        {**claim("hotplugged", capacity={"storage": "1Gi"}), "hotplugVolume": {}},
        claim("shared", capacity={"storage": "1Gi"}),
        {"name": "hot-host", "hotplugVolume": {}},
    ]
    assert host_disk.images(vmi(volumes, statuses, filesystems=[{"name": "shared", "virtiofs": {}}])) == []


@pytest.mark.parametrize(
    ("info", "message"),
    [
        ({}, r"status.volumeStatus\[0\].persistentVolumeClaimInfo: unable to determine capacity"),
        ({"capacity": {"storage": "100Ki"}}, r"the size for volume fs is too low, must be at least 1MiB"),
        ({"capacity": {"storage": "lots"}}, r"persistentVolumeClaimInfo.capacity.storage: not a quantity"),
    ],
)
def test_a_claim_that_cannot_be_sized_names_its_status(info: dict[str, Any], message: str) -> None:
    with pytest.raises(host_disk.HostDiskError, match=message):
        host_disk.images(
            vmi([{"name": "fs", "persistentVolumeClaim": {"claimName": "c"}}], [claim("fs", **info)])
        )


@pytest.mark.parametrize("path", ["/d/..", "/", "/d/.", ""])
def test_paths_naming_no_file_are_refused(path: str) -> None:
    with pytest.raises(host_disk.HostDiskError, match=r"spec.volumes\[0\].hostDisk.path: "):
        host_disk.images(vmi([{"name": "h", "hostDisk": {"path": path, "type": "DiskOrCreate"}}]))


def test_a_climbing_volume_name_is_refused() -> None:
    with pytest.raises(host_disk.HostDiskError, match=r"spec.volumes\[0\].name: '..' is not a volume name"):
        host_disk.images(vmi([{"name": "..", "hostDisk": {"path": "/d/disk.img"}}]))
