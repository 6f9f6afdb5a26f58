"""Hotplugged volumes in the domain: when their disk joins it, where it points, which device it keeps."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.virt_launcher.virtwrap import api
from kubevirt.virt_launcher.virtwrap.converter import ConversionError, ConverterContext, convert_vmi_to_domain
from kubevirt_api.core.v1 import VirtualMachineInstance

ROOT_DISK = {"name": "root", "disk": {"bus": "virtio"}}
ROOT_VOLUME = {"name": "root", "containerDisk": {"image": "example/img:1"}}
ROOT_STATUS = {"name": "root", "target": "vda"}


def hotplug_status(name: str, phase: str, target: str = "") -> dict[str, Any]:
    """A volume status as virt-controller and virt-handler write it for a hotplugged claim."""
    return {
        "name": name,
        "target": target,
        "phase": phase,
        "hotplugVolume": {"attachPodName": f"hp-volume-{name}", "attachPodUID": "pod-uid"},
        "persistentVolumeClaimInfo": {"capacity": {"storage": "1Gi"}, "volumeMode": "Filesystem"},
    }


def vmi(
    disks: list[dict[str, Any]], volumes: list[dict[str, Any]], statuses: list[dict[str, Any]], **devices: Any
) -> VirtualMachineInstance:
    return VirtualMachineInstance.from_dict(
        {
            "metadata": {"name": "vm", "namespace": "ns", "uid": "u-1"},
            "spec": {
                "domain": {
                    "resources": {"requests": {"memory": "128Mi"}},
                    "devices": {"disks": copy.deepcopy(disks), **devices},
                },
                "volumes": copy.deepcopy(volumes),
            },
            "status": {"phase": "Running", "volumeStatus": copy.deepcopy(statuses)},
        }
    )


def one_hotplug(
    phase: str, *, bus: str = "scsi", source: dict[str, Any] | None = None
) -> VirtualMachineInstance:
    return vmi(
        [ROOT_DISK, {"name": "data", "disk": {"bus": bus}}],
        [ROOT_VOLUME, {"name": "data", **(source or {"persistentVolumeClaim": {"claimName": "claim-1"}})}],
        [ROOT_STATUS, hotplug_status("data", phase)],
    )


def disks_by_alias(domain: api.Domain) -> dict[str, api.Disk]:
    return {disk.alias.name: disk for disk in domain.devices.disks if disk.alias and disk.alias.name}


@pytest.mark.parametrize(
    ("phase", "in_domain"),
    [
        ("Pending", False),
        ("Bound", False),
        ("AttachedToNode", False),
        ("MountedToPod", True),
        ("Ready", True),
        ("Detaching", False),
        ("UnMountedFromPod", False),
    ],
)
def test_a_hotplugged_disk_joins_the_domain_once_virt_handler_has_mounted_it(
    phase: str, in_domain: bool
) -> None:
    domain = convert_vmi_to_domain(one_hotplug(phase))
    assert ("ua-data" in disks_by_alias(domain)) is in_domain
    assert "ua-root" in disks_by_alias(domain)


def test_a_filesystem_claim_is_the_raw_image_virt_handler_mounts() -> None:
    disk = disks_by_alias(convert_vmi_to_domain(one_hotplug("MountedToPod")))["ua-data"]
    assert (disk.device, disk.type, disk.source.file, disk.source.dev) == (
        "disk",
        "file",
        "/var/run/kubevirt/hotplug-disks/data.img",
        None,
    )
    assert disk.driver == api.DiskDriver(name="qemu", type="raw", error_policy="stop", discard="unmap")
    assert (disk.target.bus, disk.target.dev) == ("scsi", "sda")
    assert disk.address == api.Address(type="drive", controller="0", bus="0", unit="0")
    assert '<alias name="ua-data"></alias>' in disk.to_xml()


@pytest.mark.parametrize(
    "source",
    [{"persistentVolumeClaim": {"claimName": "c"}}, {"dataVolume": {"name": "dv", "hotpluggable": True}}],
)
def test_a_block_claim_is_the_device_node_virt_handler_makes(source: dict[str, Any]) -> None:
    context = ConverterContext(block_volumes=frozenset({"data"}))
    domain = convert_vmi_to_domain(one_hotplug("Ready", bus="virtio", source=source), context)
    disk = disks_by_alias(domain)["ua-data"]
    assert (disk.type, disk.source.dev, disk.source.file) == (
        "block",
        "/var/run/kubevirt/hotplug-disks/data",
        None,
    )
    assert disk.driver is not None
    assert (disk.driver.type, disk.driver.discard) == ("raw", "unmap")
    assert (disk.target.dev, disk.model) == ("vdb", "virtio-non-transitional")


def test_a_preallocated_claim_gets_no_discard() -> None:
    context = ConverterContext(discard_ignore=frozenset({"data"}))
    disk = disks_by_alias(convert_vmi_to_domain(one_hotplug("Ready"), context))["ua-data"]
    assert disk.driver is not None
    assert disk.driver.discard is None


def test_a_hotplugged_host_disk_counts_as_a_filesystem_claim() -> None:
    # virt-handler may hand the launcher a claim turned into a hostDisk; the disk stays the hotplug image.
    source = {"hostDisk": {"path": "/var/run/kubevirt-private/vmi-disks/data/disk.img", "type": "Disk"}}
    context = ConverterContext(block_volumes=frozenset({"data"}))
    disk = disks_by_alias(convert_vmi_to_domain(one_hotplug("Ready", source=source), context))["ua-data"]
    assert (disk.type, disk.source.file) == ("file", "/var/run/kubevirt/hotplug-disks/data.img")


def test_a_hotplugged_volume_of_another_kind_is_refused() -> None:
    with pytest.raises(ConversionError) as caught:
        convert_vmi_to_domain(one_hotplug("Ready", source={"containerDisk": {"image": "x:1"}}))
    assert caught.value.field == "spec.domain.devices.disks[1]"
    assert "hotplug disk data references an unsupported source" in str(caught.value)


def test_a_pending_hotplugged_disk_is_still_checked() -> None:
    bad = vmi(
        [ROOT_DISK, {"name": "data", "disk": {"bus": "scsi"}, "errorPolicy": "explode"}],
        [ROOT_VOLUME, {"name": "data", "persistentVolumeClaim": {"claimName": "c"}}],
        [ROOT_STATUS, hotplug_status("data", "Pending")],
    )
    with pytest.raises(ConversionError, match="error policy explode not recognized"):
        convert_vmi_to_domain(bad)


def test_every_disk_is_in_the_domain_while_the_vmi_has_no_permanent_volume_status() -> None:
    # KubeVirt's rule: without a status for the permanent volumes the VMI is not ready, nothing is held back.
    domain = convert_vmi_to_domain(
        vmi(
            [ROOT_DISK, {"name": "data", "disk": {"bus": "scsi"}}],
            [ROOT_VOLUME, {"name": "data", "persistentVolumeClaim": {"claimName": "c"}}],
            [hotplug_status("data", "Pending")],
        )
    )
    assert set(disks_by_alias(domain)) == {"ua-root", "ua-data"}


def test_a_volume_without_a_status_waits_while_others_have_one() -> None:
    domain = convert_vmi_to_domain(
        vmi(
            [ROOT_DISK, {"name": "new", "disk": {"bus": "scsi"}}],
            [ROOT_VOLUME, {"name": "new", "persistentVolumeClaim": {"claimName": "c"}}],
            [ROOT_STATUS],
        )
    )
    assert set(disks_by_alias(domain)) == {"ua-root"}


def test_disks_keep_the_device_their_volume_status_names() -> None:
    # "first" was unplugged: "second" keeps sdb (and its SCSI unit), a new disk takes the free sda.
    domain = convert_vmi_to_domain(
        vmi(
            [
                ROOT_DISK,
                {"name": "third", "disk": {"bus": "scsi"}},
                {"name": "second", "disk": {"bus": "scsi"}},
            ],
            [
                ROOT_VOLUME,
                {"name": "second", "persistentVolumeClaim": {"claimName": "b"}},
                {"name": "third", "persistentVolumeClaim": {"claimName": "c"}},
            ],
            [ROOT_STATUS, hotplug_status("second", "Ready", "sdb"), hotplug_status("third", "MountedToPod")],
        )
    )
    disks = disks_by_alias(domain)
    assert (disks["ua-second"].target.dev, disks["ua-third"].target.dev) == ("sdb", "sda")
    assert disks["ua-second"].address == api.Address(type="drive", controller="0", bus="0", unit="1")
    assert disks["ua-third"].address == api.Address(type="drive", controller="0", bus="0", unit="0")
    assert disks["ua-root"].target.dev == "vda"


def test_a_cdrom_does_not_reserve_its_status_device() -> None:
    # Only disk devices keep their device, as in KubeVirt: a CD-ROM takes the first free name.
    domain = convert_vmi_to_domain(
        vmi(
            [ROOT_DISK, {"name": "a", "disk": {"bus": "sata"}}, {"name": "cd", "cdrom": {"bus": "sata"}}],
            [ROOT_VOLUME, {"name": "a", "emptyDisk": {"capacity": "1Gi"}}],
            [ROOT_STATUS, {"name": "a", "target": "sdb"}, {"name": "cd", "target": "sdc"}],
        )
    )
    disks = disks_by_alias(domain)
    assert (disks["ua-a"].target.dev, disks["ua-cd"].target.dev) == ("sdb", "sda")


def test_a_scsi_hotplug_disk_keeps_its_controller_before_it_joins() -> None:
    domain = convert_vmi_to_domain(
        vmi(
            [ROOT_DISK, {"name": "data", "disk": {"bus": "scsi"}}],
            [ROOT_VOLUME, {"name": "data", "persistentVolumeClaim": {"claimName": "c"}}],
            [ROOT_STATUS, hotplug_status("data", "Pending")],
            disableHotplug=True,
        )
    )
    assert [c.type for c in domain.devices.controllers if c.type == "scsi"] == ["scsi"]
    assert "ua-data" not in disks_by_alias(domain)


def test_io_threads_pair_the_domain_disks_with_the_spec_by_position() -> None:
    # A held-back disk shortens the domain's disk list; KubeVirt's positional pairing is kept.
    domain = convert_vmi_to_domain(
        vmi(
            [
                ROOT_DISK,
                {"name": "data", "disk": {"bus": "virtio"}},
                {"name": "fast", "disk": {"bus": "virtio"}, "dedicatedIOThread": True},
            ],
            [
                ROOT_VOLUME,
                {"name": "data", "persistentVolumeClaim": {"claimName": "c"}},
                {"name": "fast", "emptyDisk": {"capacity": "1Gi"}},
            ],
            [ROOT_STATUS, hotplug_status("data", "Pending"), {"name": "fast", "target": ""}],
        )
    )
    disks = domain.devices.disks
    assert [d.alias.name for d in disks if d.alias] == ["ua-root", "ua-fast"]
    assert [d.driver.iothread for d in disks if d.driver] == [1, 1]
