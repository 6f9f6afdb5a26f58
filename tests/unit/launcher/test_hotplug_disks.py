"""Which hotplugged disks a running domain gains, loses or gets a new medium for, and how it is done."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import libvirt
import pytest

from kubevirt.log import get_logger
from kubevirt.virt_launcher.virtwrap import api, hotplug_disks
from kubevirt.virt_launcher.virtwrap.errors import LibvirtCallError
from kubevirt.virt_launcher.virtwrap.hotplug_disks import (
    LIVE_AND_CONFIG,
    attached_disks,
    detached_disks,
    disk_ready,
    sync_disks,
    sync_key,
    updated_disks,
)
from kubevirt_api.view import VMIView

HP = "/var/run/kubevirt/hotplug-disks"


def disk(name: str, dev: str, *, source: str = "", bus: str = "scsi", device: str = "disk") -> api.Disk:
    """A domain disk as the converter or libvirt gives it."""
    block = source.startswith("/dev") or (source.startswith(HP) and not source.endswith(".img"))
    return api.Disk(
        device=device,
        type="block" if block or not source else "file",
        source=api.DiskSource(dev=source) if block else api.DiskSource(file=source or None),
        target=api.DiskTarget(bus=bus, dev=dev),
        driver=api.DiskDriver(name="qemu", type="raw"),
        alias=api.Alias.user_defined(name),
    )


ROOT = disk("root", "vda", source="/var/run/kubevirt-ephemeral-disks/disk-data/root/disk.qcow2", bus="virtio")


def test_a_wanted_hotplugged_disk_the_domain_lacks_is_attached() -> None:
    data = disk("data", "sda", source=f"{HP}/data.img")
    assert attached_disks([ROOT], [ROOT, data]) == [data]
    assert attached_disks([ROOT, data], [ROOT, data]) == []  # there already: nothing to do
    assert detached_disks([ROOT, data], [ROOT, data]) == []


def test_a_hotplugged_disk_no_longer_wanted_is_detached() -> None:
    data = disk("data", "sda", source=f"{HP}/data")
    assert detached_disks([ROOT, data], [ROOT]) == [data]
    assert attached_disks([ROOT, data], [ROOT]) == []


def test_only_hotplugged_disks_on_live_buses_change() -> None:
    # A permanent disk is never touched, nor a SATA or USB disk (they cannot be plugged live).
    pvc = disk("pvc", "sda", source="/var/run/kubevirt-private/vmi-disks/pvc/disk.img")
    sata = disk("sata", "sdb", source=f"{HP}/sata.img", bus="sata")
    virtio = disk("virt", "vdb", source=f"{HP}/virt.img", bus="virtio")
    assert attached_disks([ROOT], [ROOT, pvc, sata, virtio]) == [virtio]
    assert detached_disks([ROOT, pvc, sata, virtio], [ROOT]) == [virtio]


def test_disks_are_matched_by_their_guest_device() -> None:
    old = disk("old", "sda", source=f"{HP}/old.img")
    new = disk("new", "sdb", source=f"{HP}/new.img")
    assert detached_disks([ROOT, old], [ROOT, new]) == [old]
    assert attached_disks([ROOT, old], [ROOT, new]) == [new]


def test_a_cdrom_gets_its_hotplugged_medium_and_loses_it_again() -> None:
    empty = disk("cd", "sda", bus="sata", device="cdrom")
    loaded = disk("cd", "sda", source=f"{HP}/cd.img", bus="sata", device="cdrom")
    (inserted,) = updated_disks([ROOT, empty], [ROOT, loaded])
    assert (inserted.type, inserted.source.file, inserted.target.dev) == ("file", f"{HP}/cd.img", "sda")
    assert attached_disks([ROOT, empty], [ROOT, loaded]) == []  # the device is there: a new medium only
    (ejected,) = updated_disks([ROOT, loaded], [ROOT, empty])
    assert (ejected.type, ejected.source) == ("block", api.DiskSource())
    (gone,) = updated_disks([ROOT, loaded], [ROOT])  # the CD-ROM left the VMI: its medium goes
    assert gone.source == api.DiskSource()
    assert updated_disks([ROOT, loaded], [ROOT, loaded]) == []
    permanent = disk("cd", "sda", source="/var/run/kubevirt-private/vmi-disks/cd/disk.img", device="cdrom")
    assert updated_disks([ROOT, permanent], [ROOT, loaded]) == []  # a permanent medium stays


def test_readiness_is_an_image_that_opens_for_writing_or_a_device(tmp_path: Path) -> None:
    image = tmp_path / "data.img"
    assert not disk_ready(str(image))
    image.write_bytes(b"")
    assert disk_ready(str(image))
    image.chmod(0o400)
    if os.geteuid() != 0:  # root opens it anyway
        assert not disk_ready(str(image))
    node = tmp_path / "block"
    os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers: opens read-only
    assert disk_ready(str(node))


class FakeDomain:
    """Records the device calls; a call named in ``fail`` raises as libvirt does."""

    def __init__(self, fail: str = "") -> None:
        self.calls: list[tuple[str, str, int]] = []
        self._fail = fail

    def _record(self, name: str, xml: str, flags: int) -> int:
        if name == self._fail:
            raise libvirt.libvirtError(f"{name} refused")
        self.calls.append((name, xml, flags))
        return 0

    def attachDeviceFlags(self, xml: str, flags: int) -> int:  # noqa: N802
        return self._record("attach", xml, flags)

    def detachDeviceFlags(self, xml: str, flags: int) -> int:  # noqa: N802
        return self._record("detach", xml, flags)

    def updateDeviceFlags(self, xml: str, flags: int) -> int:  # noqa: N802
        return self._record("update", xml, flags)


@pytest.fixture
def hotplug_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(hotplug_disks, "HOTPLUG_DISK_DIR", f"{tmp_path}/")
    return tmp_path


def test_detaches_then_attaches_the_ready_disks_live_and_in_the_definition(hotplug_dir: Path) -> None:
    (hotplug_dir / "ready.img").write_bytes(b"\0" * 4096)
    gone = disk("gone", "sda", source=f"{hotplug_dir}/gone.img")
    ready = disk("ready", "sdb", source=f"{hotplug_dir}/ready.img")
    waiting = disk("waiting", "sdc", source=f"{hotplug_dir}/waiting.img")
    dom: Any = FakeDomain()
    result = sync_disks(dom, [ROOT, gone], [ROOT, ready, waiting], get_logger(), unplugging=set())
    assert [(name, flags) for name, _, flags in dom.calls] == [
        ("detach", LIVE_AND_CONFIG),
        ("attach", LIVE_AND_CONFIG),
    ]
    assert 'dev="sda"' in dom.calls[0][1]
    attached = api.Disk.from_xml(dom.calls[1][1])
    assert attached.source.file == f"{hotplug_dir}/ready.img"
    assert attached.alias == api.Alias.user_defined("ready")
    assert attached.driver is not None
    assert attached.driver.cache in ("none", "writethrough")  # fitted to the image before attaching
    assert (result.changed, result.waiting) == (True, True)


def test_a_refused_attach_names_the_disk(hotplug_dir: Path) -> None:
    (hotplug_dir / "data.img").write_bytes(b"")
    data = disk("data", "sda", source=f"{hotplug_dir}/data.img")
    with pytest.raises(LibvirtCallError, match=r"^attaching disk data \(target sda\): attach refused$"):
        sync_disks(FakeDomain(fail="attach"), [ROOT], [ROOT, data], get_logger(), unplugging=set())  # type: ignore[arg-type]


def test_nothing_to_do_makes_no_call(hotplug_dir: Path) -> None:
    data = disk("data", "sda", source=f"{hotplug_dir}/data.img")
    dom = FakeDomain()
    result = sync_disks(dom, [ROOT, data], [ROOT, data], get_logger(), unplugging=set())  # type: ignore[arg-type]
    assert dom.calls == []
    assert (result.changed, result.waiting) == (False, False)


def test_a_disk_the_guest_has_not_let_go_of_is_not_detached_again(hotplug_dir: Path) -> None:
    data = disk("data", "vdb", source=f"{hotplug_dir}/data.img", bus="virtio")
    unplugging: set[str] = set()
    dom = FakeDomain()
    first = sync_disks(dom, [ROOT, data], [ROOT], get_logger(), unplugging=unplugging)  # type: ignore[arg-type]
    assert (first.changed, unplugging) == (True, {"vdb"})
    # Still in the domain on the next pass: libvirt would refuse a second detach.
    second = sync_disks(dom, [ROOT, data], [ROOT], get_logger(), unplugging=unplugging)  # type: ignore[arg-type]
    assert (second.changed, second.waiting) == (False, True)
    assert [name for name, _, _ in dom.calls] == ["detach"]
    # Gone: forgotten, so a disk later plugged at the same device is detached again when it goes.
    sync_disks(dom, [ROOT], [ROOT], get_logger(), unplugging=unplugging)  # type: ignore[arg-type]
    assert unplugging == set()


def vmi_view(phase: str, *, spec_extra: dict[str, Any] | None = None) -> VMIView:
    return VMIView(
        {
            "metadata": {"name": "vm", "namespace": "ns"},
            "spec": {
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "c"}}],
                **(spec_extra or {}),
            },
            "status": {
                "volumeStatus": [{"name": "data", "target": "", "phase": phase, "hotplugVolume": {}}],
                "conditions": [{"type": "Ready", "lastProbeTime": phase}],
            },
        }
    )


def test_the_sync_key_follows_what_the_disks_depend_on(hotplug_dir: Path) -> None:
    key = sync_key(vmi_view("AttachedToNode"), None, [ROOT])
    assert sync_key(vmi_view("AttachedToNode"), None, [ROOT]) == key
    assert sync_key(vmi_view("MountedToPod"), None, [ROOT]) != key  # the volume's phase
    assert sync_key(vmi_view("AttachedToNode", spec_extra={"hostname": "h"}), None, [ROOT]) != key
    data = disk("data", "sda", source=f"{hotplug_dir}/data.img")
    assert sync_key(vmi_view("AttachedToNode"), None, [ROOT, data]) != key  # the live domain's disks
    (hotplug_dir / "data.img").write_bytes(b"")
    assert sync_key(vmi_view("AttachedToNode"), None, [ROOT]) != key  # the image appeared in the pod
