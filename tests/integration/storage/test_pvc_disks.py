"""PVC and DataVolume volumes: block devices for the converter, disk.img made in filesystem claims."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from kubevirt import host_disk
from kubevirt.virt_launcher.storage import PodStorage, StorageDirs
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError
from kubevirt_api.view import VMIView


@pytest.fixture
def dirs(tmp_path: Path) -> StorageDirs:
    result = StorageDirs(
        container_disk_dir=tmp_path / "container-disks",
        ephemeral_disk_dir=tmp_path / "ephemeral",
        private_dir=tmp_path / "private",
        block_device_dir=tmp_path / "dev",
        hotplug_disk_dir=tmp_path / "hotplug-disks",
    )
    result.block_device_dir.mkdir()
    result.hotplug_disk_dir.mkdir()
    for name in ("fs", "dv"):
        (result.host_disk_dir / name).mkdir(parents=True)
    return result


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


def test_a_filesystem_claim_gets_a_sparse_disk_img_once(dirs: StorageDirs) -> None:
    claims = {
        "fs": {"capacity": {"storage": "20Mi"}, "requests": {"storage": "10.5Mi"}},  # requested: less
        "dv": {"capacity": {"storage": "8Mi"}, "requests": {"storage": "16Mi"}},  # capacity: less
    }
    PodStorage(dirs).prepare(vmi(claims))
    assert (dirs.host_disk_dir / "fs" / "disk.img").stat().st_size == 10 << 20  # whole MiB
    assert (dirs.host_disk_dir / "dv" / "disk.img").stat().st_size == 8 << 20
    (dirs.host_disk_dir / "fs" / "disk.img").write_bytes(b"data")
    PodStorage(dirs).prepare(vmi(claims))
    assert (dirs.host_disk_dir / "fs" / "disk.img").read_bytes() == b"data"


def test_block_hotplugged_and_unreported_claims_are_left_alone(dirs: StorageDirs) -> None:
    document = dict(vmi({"fs": {"capacity": {"storage": "8Mi"}, "volumeMode": "Block"}}).data)
    document["status"]["volumeStatus"].append(
        {"name": "dv", "hotplugVolume": {}, "persistentVolumeClaimInfo": {"capacity": {"storage": "8Mi"}}}
    )
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


def test_nothing_is_made_for_hotplugged_volumes(dirs: StorageDirs) -> None:
    document = dict(hotplugged("fs", "dv", "host").data)
    document["spec"]["volumes"].append(
        {"name": "host", "hostDisk": {"path": "/data/host.img", "type": "DiskOrCreate", "capacity": "1Mi"}}
    )
    for entry in document["status"]["volumeStatus"]:
        entry["persistentVolumeClaimInfo"] = {"capacity": {"storage": "8Mi"}}
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
def test_unusable_claims_write_nothing(dirs: StorageDirs, info: dict[str, Any], message: str) -> None:
    with pytest.raises(StoragePreparationError, match=message):
        PodStorage(dirs).prepare(vmi({"fs": info, "dv": {"capacity": {"storage": "1Mi"}}}))
    assert list(dirs.host_disk_dir.rglob("disk.img")) == []


def test_a_claim_a_little_smaller_than_asked_is_used_and_the_vmi_is_told(dirs: StorageDirs) -> None:
    """KubeVirt's lessPVCSpaceToleration: up to 10 % less room than the claim's size is used as it is,
    with a ToleratedSmallPV event on the VMI."""
    info = os.statvfs(dirs.host_disk_dir / "fs")
    available = info.f_bavail * info.f_frsize - host_disk.MINIMUM_RESERVE_BYTES
    requested = (available + available // 20) >> 20 << 20  # about 5 % more than there is, whole MiB
    events: list[tuple[str, str, str]] = []
    claims = {"fs": {"capacity": {"storage": str(requested)}}, "dv": {"capacity": {"storage": "1Mi"}}}
    PodStorage(dirs).prepare(vmi(claims), record=lambda *event: events.append(event))
    made = (dirs.host_disk_dir / "fs" / "disk.img").stat().st_size
    assert made < requested
    assert events == [("Normal", "ToleratedSmallPV", host_disk.tolerated_message(requested, made))]
    assert events[0][2].startswith(f"PV size too small: expected {requested} B, found {made} B. ")
