"""PVC and DataVolume volumes: block devices for the converter; a filesystem claim's disk.img, which
virt-handler makes through the pod's root before the sync (as in KubeVirt), checked by the launcher."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kubevirt import host_disk
from kubevirt.podroot import PodRoot
from kubevirt.virt_handler.host_disks import HostDiskPreparationError, create_images, images_to_make
from kubevirt.virt_launcher.storage import PodStorage, StorageDirs
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError
from kubevirt_api.view import VMIView

MIB = 1 << 20


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The launcher pod's root, as virt-handler reaches it."""
    return tmp_path / "pod"


@pytest.fixture
def dirs(tmp_path: Path, root: Path) -> StorageDirs:
    result = StorageDirs(
        container_disk_dir=tmp_path / "container-disks",
        ephemeral_disk_dir=tmp_path / "ephemeral",
        private_dir=root / "var/run/kubevirt-private",
        block_device_dir=tmp_path / "dev",
        hotplug_disk_dir=tmp_path / "hotplug-disks",
    )
    result.block_device_dir.mkdir()
    result.hotplug_disk_dir.mkdir()
    for name in ("fs", "dv"):
        (result.host_disk_dir / name).mkdir(parents=True)
    return result


def handler_makes_images(root: Path, vmi: VMIView, *, toleration: int = 10) -> list[str]:
    """What virt-handler does before the sync; the ToleratedSmallPV messages it would record."""
    told: list[str] = []
    create_images(
        PodRoot(root),
        images_to_make(vmi.data),
        toleration=toleration,
        reserve=131072,
        tolerated=told.append,
        owner=os.geteuid(),
    )
    return told


def vmi(claims: dict[str, dict[str, Any]], **spec: Any) -> VMIView:
    volumes = [
        {"name": "fs", "persistentVolumeClaim": {"claimName": "c1"}},
        {"name": "dv", "dataVolume": {"name": "d1"}},
    ]
    status = [{"name": name, "persistentVolumeClaimInfo": info} for name, info in claims.items()]
    document = {
        "metadata": {"name": "vm1", "namespace": "ns1"},
        "spec": {"domain": {"devices": {}}, "volumes": volumes, **spec},
        "status": {"volumeStatus": status},
    }
    return VMIView(document)


def test_block_devices_are_found_for_the_converter(dirs: StorageDirs) -> None:
    os.mknod(dirs.block_device_dir / "dv", stat.S_IFBLK | 0o600, os.makedev(7, 0))
    assert PodStorage(dirs).block_volumes(vmi({})) == frozenset({"dv"})


def test_something_else_where_the_device_should_be_is_refused(dirs: StorageDirs) -> None:
    (dirs.block_device_dir / "dv").symlink_to("/dev/sda")
    with pytest.raises(StoragePreparationError, match=r"found .*/dv, but it's not a block device"):
        PodStorage(dirs).block_volumes(vmi({}))


def test_a_filesystem_claim_gets_a_sparse_disk_img_once(root: Path, dirs: StorageDirs) -> None:
    claims = {
        "fs": {"capacity": {"storage": "20Mi"}, "requests": {"storage": "10.5Mi"}},  # requested: less
        "dv": {"capacity": {"storage": "8Mi"}, "requests": {"storage": "16Mi"}},  # capacity: less
    }
    with pytest.raises(
        StoragePreparationError,
        match=r"^spec.volumes\[0\].persistentVolumeClaim: /var/run/kubevirt-private/vmi-disks/fs/disk.img "
        r"does not exist \(virt-handler makes it before the sync\)$",
    ):
        PodStorage(dirs).prepare(vmi(claims))  # the launcher makes none itself
    assert handler_makes_images(root, vmi(claims)) == []
    PodStorage(dirs).prepare(vmi(claims))
    assert (dirs.host_disk_dir / "fs" / "disk.img").stat().st_size == 10 << 20  # whole MiB
    assert (dirs.host_disk_dir / "dv" / "disk.img").stat().st_size == 8 << 20
    (dirs.host_disk_dir / "fs" / "disk.img").write_bytes(b"data")
    handler_makes_images(root, vmi(claims))
    PodStorage(dirs).prepare(vmi(claims))
    assert (dirs.host_disk_dir / "fs" / "disk.img").read_bytes() == b"data"


def test_a_disk_img_that_is_a_symlink_is_refused_by_both(
    root: Path, dirs: StorageDirs, tmp_path: Path
) -> None:
    (tmp_path / "host-file").write_bytes(b"host")
    (dirs.host_disk_dir / "fs" / "disk.img").symlink_to(tmp_path / "host-file")
    claims = {"fs": {"capacity": {"storage": "8Mi"}}}
    with pytest.raises(HostDiskPreparationError, match=r"^preparing host-disks failed: .*symlink: refused"):
        handler_makes_images(root, vmi(claims))
    with pytest.raises(StoragePreparationError, match=r"persistentVolumeClaim: .*symlink: refused"):
        PodStorage(dirs).prepare(vmi(claims))
    assert (tmp_path / "host-file").read_bytes() == b"host"


def test_a_claim_the_pod_has_as_a_block_device_needs_no_image(dirs: StorageDirs) -> None:
    os.mknod(dirs.block_device_dir / "fs", stat.S_IFBLK | 0o600, os.makedev(7, 0))
    claims = {
        "fs": {"capacity": {"storage": "8Mi"}},
        "dv": {"capacity": {"storage": "8Mi"}, "volumeMode": "Block"},
    }
    PodStorage(dirs).prepare(vmi(claims))


def test_block_hotplugged_and_unreported_claims_are_left_alone(root: Path, dirs: StorageDirs) -> None:
    document = dict(vmi({"fs": {"capacity": {"storage": "8Mi"}, "volumeMode": "Block"}}).data)
    document["status"]["volumeStatus"].append(
        {"name": "dv", "hotplugVolume": {}, "persistentVolumeClaimInfo": {"capacity": {"storage": "8Mi"}}}
    )
    handler_makes_images(root, VMIView(document))
    PodStorage(dirs).prepare(VMIView(document))
    assert list(dirs.host_disk_dir.rglob("disk.img")) == []


def hotplugged(*names: str) -> VMIView:
    """The claims with their status as virt-controller writes it for hotplugged volumes."""
    document = dict(vmi({}).data)
    document["status"]["volumeStatus"] = [
        {"name": name, "phase": "MountedToPod", "hotplugVolume": {"attachPodName": f"hp-volume-{name}"}}
        for name in names
    ]
    return VMIView(document)


def test_hotplugged_block_devices_are_the_nodes_virt_handler_makes(dirs: StorageDirs) -> None:
    storage = PodStorage(dirs)
    assert storage.block_volumes(hotplugged("fs", "dv")) == frozenset()  # nothing there yet: no error
    os.mknod(dirs.hotplug_disk_dir / "dv", stat.S_IFBLK | 0o600, os.makedev(7, 0))
    (dirs.hotplug_disk_dir / "fs.img").write_bytes(b"")
    (dirs.hotplug_disk_dir / "fs").mkdir()  # not a device: a filesystem volume, as in KubeVirt
    assert storage.block_volumes(hotplugged("fs", "dv")) == frozenset({"dv"})
    # A hotplugged volume is never looked for under /dev, whatever is there.
    (dirs.block_device_dir / "fs").symlink_to("/dev/sda")
    assert storage.block_volumes(hotplugged("fs", "dv")) == frozenset({"dv"})


def test_nothing_is_made_for_hotplugged_volumes(root: Path, dirs: StorageDirs) -> None:
    document = dict(hotplugged("fs", "dv", "host").data)
    document["spec"]["volumes"].append(
        {"name": "host", "hostDisk": {"path": "/data/host.img", "type": "DiskOrCreate", "capacity": "1Mi"}}
    )
    for entry in document["status"]["volumeStatus"]:
        entry["persistentVolumeClaimInfo"] = {"capacity": {"storage": "8Mi"}}
    handler_makes_images(root, VMIView(document))
    PodStorage(dirs).prepare(VMIView(document))
    assert list(dirs.host_disk_dir.rglob("*.img")) == []
    assert list(dirs.hotplug_disk_dir.iterdir()) == []


@pytest.mark.parametrize(
    ("info", "message"),
    [
        ({}, r"status.volumeStatus\[0\].persistentVolumeClaimInfo: unable to determine capacity"),
        ({"capacity": {"storage": "100Ki"}}, r"the size for volume fs is too low, must be at least 1MiB"),
        (
            {"capacity": {"storage": "1Ei"}},
            r"^preparing host-disks failed: unable to create "
            r"/var/run/kubevirt-private/vmi-disks/fs/disk.img, "
            r"not enough space, demanded size 1152921504606846976 B is bigger than available space \d+ B, "
            r"also after taking 10 % toleration into account$",
        ),
    ],
)
def test_unusable_claims_write_nothing(
    root: Path, dirs: StorageDirs, info: dict[str, Any], message: str
) -> None:
    with pytest.raises(HostDiskPreparationError, match=message):
        handler_makes_images(root, vmi({"fs": info, "dv": {"capacity": {"storage": "1Mi"}}}))
    assert list(dirs.host_disk_dir.rglob("disk.img")) == []


@pytest.fixture
def room(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    def set_room(free: int) -> None:
        monkeypatch.setattr(os, "fstatvfs", lambda _fd: SimpleNamespace(f_bavail=free // 4096, f_frsize=4096))

    return set_room


def test_a_claim_a_little_smaller_than_asked_is_used_and_the_vmi_is_told(
    root: Path, dirs: StorageDirs, room: Callable[[int], None]
) -> None:
    """KubeVirt's lessPVCSpaceToleration: up to that much less room than the claim's size is used as it
    is, with a ToleratedSmallPV event on the VMI; the launcher takes the image as it was made."""
    room(95 * MIB + 131072)  # 5 % less than the claim's 100 MiB beyond the reserve
    claims = {"fs": {"capacity": {"storage": "100Mi"}}, "dv": {"capacity": {"storage": "1Mi"}}}
    told = handler_makes_images(root, vmi(claims))
    made = (dirs.host_disk_dir / "fs" / "disk.img").stat().st_size
    assert made == 95 * MIB
    assert told == [host_disk.tolerated_message(100 * MIB, made, 10)]
    assert told[0].startswith(f"PV size too small: expected {100 * MIB} B, found {made} B. ")
    PodStorage(dirs).prepare(vmi(claims))
