"""containerDisk overlays and cloud-init images made by the launcher's storage preparation (real qemu-img)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kubevirt.ephemeral_disk import disk_info
from kubevirt.virt_launcher.storage import PodStorage, StorageDirs
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError
from kubevirt_api.view import VMIView

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def dirs(tmp_path: Path) -> StorageDirs:
    result = StorageDirs(tmp_path / "container-disks", tmp_path / "ephemeral", tmp_path / "private")
    result.container_disk_dir.mkdir()
    return result


def qemu_img(*args: str) -> str:
    return subprocess.run(["qemu-img", *args], capture_output=True, text=True, check=True).stdout


def vmi(*volumes: dict[str, Any]) -> VMIView:
    document = {
        "metadata": {"name": "vm1", "namespace": "ns1"},
        "spec": {
            "domain": {"firmware": {"uuid": "0cde1b8c-0000-4000-8000-000000000001"}},
            "volumes": list(volumes),
        },
    }
    return VMIView(document)


def link_out(directory: Path) -> None:
    (directory / "elsewhere.img").write_bytes(bytes(1024))
    (directory / "disk_1.img").symlink_to(directory / "elsewhere.img")


CONTAINER_DISKS = vmi(
    {"name": "cloudinit", "cloudInitNoCloud": {"userData": "#cloud-config\n"}},
    {"name": "root", "containerDisk": {"image": "example/raw:1"}},
    {"name": "data", "containerDisk": {"image": "example/qcow2:1"}},
)


def test_overlays_over_raw_and_qcow2_images(dirs: StorageDirs) -> None:
    qemu_img("create", "-f", "raw", str(dirs.container_disk_dir / "disk_1.img"), "16M")
    qemu_img("create", "-f", "qcow2", str(dirs.container_disk_dir / "disk_2.img"), "32M")
    storage = PodStorage(dirs)

    infos = storage.disks_info(CONTAINER_DISKS)
    assert {name: info.format for name, info in infos.items()} == {"root": "raw", "data": "qcow2"}
    storage.prepare(CONTAINER_DISKS)

    for name, index, image_format, size in (("root", 1, "raw", 16), ("data", 2, "qcow2", 32)):
        overlay = dirs.ephemeral_disk_dir / "disk-data" / name / "disk.qcow2"
        info = json.loads(qemu_img("info", "--output", "json", str(overlay)))
        assert info["format"] == "qcow2"
        assert info["backing-filename"] == str(dirs.container_disk_dir / f"disk_{index}.img")
        assert info["backing-filename-format"] == image_format
        assert info["virtual-size"] == size * 1024 * 1024
        assert overlay.stat().st_mode & 0o777 == 0o640
    assert (dirs.ephemeral_disk_dir / "cloud-init-data/ns1/vm1/noCloud.iso").is_file()


def test_a_resync_keeps_what_the_guest_wrote(dirs: StorageDirs) -> None:
    qemu_img("create", "-f", "raw", str(dirs.container_disk_dir / "disk_1.img"), "16M")
    qemu_img("create", "-f", "qcow2", str(dirs.container_disk_dir / "disk_2.img"), "16M")
    PodStorage(dirs).prepare(CONTAINER_DISKS)
    overlay = dirs.ephemeral_disk_dir / "disk-data" / "root" / "disk.qcow2"
    pattern = dirs.ephemeral_disk_dir / "written"
    pattern.write_bytes(b"guest data" * 100)
    qemu_img("dd", "-f", "raw", "-O", "qcow2", f"if={pattern}", f"of={overlay}", "bs=1000", "count=1")
    # qemu-img dd makes a new image; put back the backing file as the guest's overlay would have it.
    qemu_img(
        "rebase",
        "-u",
        "-f",
        "qcow2",
        "-b",
        str(dirs.container_disk_dir / "disk_1.img"),
        "-F",
        "raw",
        str(overlay),
    )
    before = overlay.read_bytes()

    PodStorage(dirs).prepare(CONTAINER_DISKS)  # a restarted launcher

    assert overlay.read_bytes() == before


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda d: None,
            r"spec.volumes\[1\].containerDisk: invalid image in containerDisk root: no disk found",
        ),
        (
            link_out,
            r"spec.volumes\[1\].containerDisk: .*symlink",
        ),
        (lambda d: (d / "disk_1.img").mkdir(), r"spec.volumes\[1\].containerDisk: .* not a regular file"),
        (
            lambda d: qemu_img(
                "create", "-f", "qcow2", "-b", "/etc/hostname", "-F", "raw", str(d / "disk_1.img"), "1M"
            ),
            r"spec.volumes\[1\].containerDisk: .*expected no backing file, but found /etc/hostname",
        ),
        (
            lambda d: qemu_img("create", "-f", "vmdk", str(d / "disk_1.img"), "1M"),
            r"spec.volumes\[1\].containerDisk: .*unsupported image format: vmdk",
        ),
    ],
)
def test_unusable_images_are_refused_and_nothing_is_written(
    dirs: StorageDirs, make: Any, message: str
) -> None:
    make(dirs.container_disk_dir)
    qemu_img("create", "-f", "raw", str(dirs.container_disk_dir / "disk_2.img"), "1M")
    storage = PodStorage(dirs)
    with pytest.raises(StoragePreparationError, match=message):
        storage.disks_info(CONTAINER_DISKS)
    with pytest.raises(StoragePreparationError, match=message):
        storage.prepare(CONTAINER_DISKS)
    assert not dirs.ephemeral_disk_dir.exists()


def test_bad_cloud_init_data_writes_nothing(dirs: StorageDirs) -> None:
    qemu_img("create", "-f", "raw", str(dirs.container_disk_dir / "disk_0.img"), "1M")
    bad = vmi(
        {"name": "root", "containerDisk": {"image": "example/raw:1"}},
        {"name": "ci", "cloudInitConfigDrive": {"userDataBase64": "%%%"}},
    )
    with pytest.raises(
        StoragePreparationError, match=r"spec.volumes\[1\].cloudInitConfigDrive.userDataBase64"
    ):
        PodStorage(dirs).prepare(bad)
    assert not dirs.ephemeral_disk_dir.exists()


def test_the_image_is_described_within_bounds(dirs: StorageDirs) -> None:
    qemu_img("create", "-f", "qcow2", str(dirs.container_disk_dir / "disk_0.img"), "1G")
    info = disk_info(dirs.container_disk_dir / "disk_0.img", memory_limit=512 * 1024 * 1024)
    assert (info.format, info.virtual_size, info.backing_file) == ("qcow2", 1 << 30, "")
