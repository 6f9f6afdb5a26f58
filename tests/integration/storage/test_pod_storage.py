"""Every kind of disk a VMI can have in its pod, prepared together; bad input leaves nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kubevirt.podroot import PodRoot
from kubevirt.virt_handler.host_disks import HostDiskPreparationError, create_images, images_to_make
from kubevirt.virt_launcher.storage import PodStorage, StorageDirs
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError
from kubevirt_api.view import VMIView

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def dirs(tmp_path: Path) -> StorageDirs:
    result = StorageDirs(
        container_disk_dir=tmp_path / "container-disks",
        ephemeral_disk_dir=tmp_path / "ephemeral",
        private_dir=tmp_path / "pod/var/run/kubevirt-private",
        empty_disk_dir=tmp_path / "empty-disks",
        service_account_dir=tmp_path / "serviceaccount",
    )
    for directory in (
        result.container_disk_dir / "kernel-boot",
        result.host_disk_dir / "host",
        result.private_dir / "config-map" / "cm",
        result.private_dir / "secret" / "sec",
        result.private_dir / "downwardapi" / "labels",
        result.service_account_dir,
        result.private_dir / "sysprep" / "win",
    ):
        directory.mkdir(parents=True)
    (result.private_dir / "config-map" / "cm" / "option").write_text("on")
    (result.private_dir / "secret" / "sec" / "password").write_text("hunter2")
    (result.private_dir / "downwardapi" / "labels" / "labels").write_text('app="web"')
    (result.service_account_dir / "token").write_text("eyJ")
    (result.private_dir / "sysprep" / "win" / "Autounattend.xml").write_text("<unattend/>")
    (result.container_disk_dir / "kernel-boot" / "vmlinux").write_bytes(b"\x7fELF")
    return result


def handler_makes_images(dirs: StorageDirs, request: VMIView) -> None:
    """What virt-handler does in the pod before the sync: the DiskOrCreate images."""
    create_images(
        PodRoot(dirs.private_dir.parents[2]),
        images_to_make(request.data),
        toleration=10,
        reserve=131072,
        tolerated=lambda message: None,
        owner=os.geteuid(),
    )


def vmi(*volumes: dict[str, Any], kernel: str = "") -> VMIView:
    domain: dict[str, Any] = {"devices": {"disks": [{"name": v["name"]} for v in volumes]}}
    if kernel:
        domain["firmware"] = {"kernelBoot": {"container": {"image": "k:1", "kernelPath": kernel}}}
    document = {
        "metadata": {"name": "vm1", "namespace": "ns1"},
        "spec": {"domain": domain, "volumes": list(volumes)},
    }
    return VMIView(document)


EVERY_KIND = vmi(
    {"name": "scratch", "emptyDisk": {"capacity": "100Mi"}},
    {"name": "odd", "emptyDisk": {"capacity": "10.5Mi"}},
    {"name": "host", "hostDisk": {"path": "/srv/vm1/data.img", "type": "DiskOrCreate", "capacity": "8Mi"}},
    {"name": "cm", "configMap": {"name": "app", "volumeLabel": "APPCFG"}},
    {"name": "sec", "secret": {"secretName": "db"}},
    {"name": "labels", "downwardAPI": {"fields": []}},
    {"name": "sa", "serviceAccount": {"serviceAccountName": "default"}},
    {"name": "win", "sysprep": {"configMap": {"name": "unattend"}}},
    kernel="/boot/vmlinux",
)


def test_every_kind_is_prepared_and_a_resync_keeps_it(dirs: StorageDirs) -> None:
    handler_makes_images(dirs, EVERY_KIND)
    PodStorage(dirs).prepare(EVERY_KIND)

    for name, size in (("scratch", 100 << 20), ("odd", 10 << 20)):  # rounded down to a whole MiB
        info = json.loads(
            subprocess.run(
                ["qemu-img", "info", "--output", "json", str(dirs.empty_disk_dir / f"{name}.qcow2")],
                capture_output=True,
                check=True,
            ).stdout
        )
        assert (info["format"], info["virtual-size"]) == ("qcow2", size)
        assert info["actual-size"] < 1 << 20  # sparse
    assert (dirs.host_disk_dir / "host" / "data.img").stat().st_size == 8 << 20
    for iso in (
        "config-map-disks/cm.iso",
        "secret-disks/sec.iso",
        "downwardapi-disks/labels.iso",
        "service-account-disk/service-account.iso",
        "sysprep-disks/win.iso",
    ):
        assert (dirs.private_dir / iso).read_bytes()[0x8000:0x8006] == b"\x01CD001"  # an ISO 9660 volume

    scratch = dirs.empty_disk_dir / "scratch.qcow2"
    before = scratch.stat().st_mtime_ns, scratch.stat().st_ino
    PodStorage(dirs).prepare(EVERY_KIND)
    assert (scratch.stat().st_mtime_ns, scratch.stat().st_ino) == before


@pytest.mark.parametrize(
    ("volume", "message"),
    [
        (
            {"name": "e", "emptyDisk": {"capacity": "100Ki"}},
            r"spec.volumes\[1\].emptyDisk.capacity: the size for volume e is too low",
        ),
        (
            {"name": "e", "emptyDisk": {"capacity": "8Ei"}},
            r"spec.volumes\[1\].emptyDisk.capacity: .* more than a disk image can hold",
        ),
        (
            {"name": "e", "emptyDisk": {"capacity": "lots"}},
            r"spec.volumes\[1\].emptyDisk.capacity: not a quantity",
        ),
        ({"name": "e", "emptyDisk": "1Gi"}, r"spec.volumes\[1\].emptyDisk: must be an object"),
        (
            {"name": "h", "hostDisk": {"path": "/srv/../..", "type": "DiskOrCreate", "capacity": "1Mi"}},
            r"spec.volumes\[1\].hostDisk.path: '/srv/../..' does not name a file",
        ),
        (
            {"name": "h", "hostDisk": {"path": "/srv/x.img", "type": "Disk"}},
            r"spec.volumes\[1\].hostDisk.path: the directory",
        ),
        (
            {"name": "../h", "emptyDisk": {"capacity": "1Mi"}},
            r"spec.volumes\[1\].name: '../h' is not a volume name",
        ),
        (
            {"name": "cm", "configMap": {"name": "app", "volumeLabel": 7}},
            r"spec.volumes\[1\].configMap.volumeLabel: must be a string",
        ),
    ],
)
def test_bad_volumes_write_nothing(dirs: StorageDirs, volume: dict[str, Any], message: str) -> None:
    request = vmi({"name": "scratch", "emptyDisk": {"capacity": "1Mi"}}, volume)
    with pytest.raises(StoragePreparationError, match=message):
        PodStorage(dirs).prepare(request)
    assert not dirs.empty_disk_dir.exists()


def test_a_host_disk_bigger_than_the_disk_is_refused(dirs: StorageDirs) -> None:
    request = vmi(
        {"name": "host", "hostDisk": {"path": "/srv/big.img", "type": "DiskOrCreate", "capacity": "1Ei"}}
    )
    with pytest.raises(
        HostDiskPreparationError,
        match=r"^preparing host-disks failed: unable to create /srv/big.img, not enough",
    ):
        handler_makes_images(dirs, request)
    assert list((dirs.host_disk_dir / "host").iterdir()) == []


def test_a_kernel_that_is_a_symlink_is_refused(dirs: StorageDirs) -> None:
    kernel = dirs.container_disk_dir / "kernel-boot" / "vmlinuz"
    kernel.symlink_to("/etc/shadow")
    request = vmi({"name": "scratch", "emptyDisk": {"capacity": "1Mi"}}, kernel="/boot/vmlinuz")
    with pytest.raises(
        StoragePreparationError, match=r"spec.domain.firmware.kernelBoot.container.kernelPath: .*symlink"
    ):
        PodStorage(dirs).prepare(request)
    assert not dirs.empty_disk_dir.exists()


def test_a_sysprep_volume_needs_an_answer_file(dirs: StorageDirs) -> None:
    (dirs.private_dir / "sysprep" / "win" / "Autounattend.xml").rename(
        dirs.private_dir / "sysprep" / "win" / "x"
    )
    request = vmi({"name": "win", "sysprep": {"secret": {"name": "unattend"}}})
    with pytest.raises(
        StoragePreparationError, match=r"spec.volumes\[0\].sysprep: .*should contain autounattend"
    ):
        PodStorage(dirs).prepare(request)


def test_a_config_volume_linking_out_fails_with_its_field(dirs: StorageDirs, tmp_path: Path) -> None:
    (tmp_path / "host-only").write_text("secret")
    (dirs.private_dir / "config-map" / "cm" / "leak").symlink_to(tmp_path / "host-only")
    request = vmi(
        {"name": "scratch", "emptyDisk": {"capacity": "1Mi"}}, {"name": "cm", "configMap": {"name": "app"}}
    )
    with pytest.raises(
        StoragePreparationError, match=r"spec.volumes\[1\].configMap: creating the configMap disk failed"
    ):
        PodStorage(dirs).prepare(request)
    assert not (dirs.private_dir / "config-map-disks" / "cm.iso").exists()
    assert not dirs.empty_disk_dir.exists()  # checked before anything was written
