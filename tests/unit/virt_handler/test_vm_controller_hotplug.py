"""The VM controller with hotplugged volumes: mounted before each sync, unmounted once out of the spec and
the domain, the phases and events virt-handler owns, and the cleanup of a VMI's mounts."""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES
from kubevirt.controller import RequeueAfter
from kubevirt.virt_handler.hotplug_disk.layout import HotplugVolumeError
from kubevirt.virt_handler.hotplug_disk.mounter import HotplugMounter, LauncherPod, hotplug_volumes
from kubevirt.virt_handler.vm_controller import (
    HOTPLUG_REFRESH_SECONDS,
    RUNNING_RESYNC_SECONDS,
    SYNC_FAILED_REASON,
    VMController,
)

from .test_vm_controller import NODE, POD_UID, FakeLauncher, Harness, _domain, _vmi, pods_dir

__all__ = ["pods_dir"]  # the fixture, used by name

JSON = dict[str, Any]


class FakeHotplug(HotplugMounter):
    """Records what the controller asks of the hotplug mounter in the launcher's call log, so that the
    order of mounts, syncs and unmounts shows; ``in_pod`` is what it has put into the pod."""

    def __init__(self, log: list[str]) -> None:
        super().__init__(
            pods_dir=Path("/nonexistent"), host_pods_dir=Path("/nonexistent"), state_dir=Path("/nonexistent")
        )
        self.log = log
        self.in_pod: set[str] = set()
        self.failure: str | None = None
        self.available = True  # whether the claims can be put into the pod (else: not yet, or warnings)
        self.warnings: list[str] = []
        self.kept: list[set[str]] = []
        self.launchers: list[str] = []
        self.records: dict[str, str] = {}  # VMI UID -> namespace/name

    def mount(self, vmi: Mapping[str, Any], launcher: LauncherPod, *, from_pod: str = "") -> list[str]:
        self.log.append("mount")
        self.launchers.append(launcher.uid)
        if self.failure is not None:
            raise HotplugVolumeError(self.failure)
        if self.available:
            self.in_pod |= {volume.name for volume in hotplug_volumes(vmi)}
        return self.warnings

    def unmount(self, vmi: Mapping[str, Any], keep: Collection[str]) -> None:
        self.log.append("unmount")
        self.kept.append(set(keep))
        self.in_pod &= set(keep)

    def unmount_all(self, vmi_uid: str) -> None:
        self.log.append(f"unmount all {vmi_uid}")
        self.records.pop(vmi_uid, None)

    def mounted(self, vmi: Mapping[str, Any]) -> frozenset[str]:
        return frozenset(self.in_pod)

    def recorded(self, namespace: str, name: str) -> list[str]:
        return sorted(uid for uid, key in self.records.items() if key == f"{namespace}/{name}")


def _hotplug_vmi(phase_name: str, volume_phase: str = "AttachedToNode", *, in_spec: bool = True) -> JSON:
    vmi = _vmi(phase_name)
    vmi["spec"]["volumes"] = [{"name": "rootdisk", "containerDisk": {"image": "guest"}}]
    if in_spec:
        vmi["spec"]["volumes"].append(
            {"name": "hp", "persistentVolumeClaim": {"claimName": "c", "hotpluggable": True}}
        )
    vmi["status"]["volumeStatus"] = [
        {"name": "rootdisk", "target": ""},
        {
            "name": "hp",
            "target": "",
            "phase": volume_phase,
            "reason": "SuccessfulCreate",
            "message": "Created hotplug attachment pod hp-volume-x, for volume hp",
            "hotplugVolume": {"attachPodName": "hp-volume-x", "attachPodUID": "attach-uid"},
            "persistentVolumeClaimInfo": {"claimName": "c", "volumeMode": "Filesystem"},
        },
    ]
    return vmi


def _running_domain(*disks: str) -> JSON:
    domain = _domain("Running", "Booted")
    domain["Spec"]["Devices"]["Disks"] = [
        {"Alias": {"Name": f"ua-{name}"}, "Source": {"File": f"/x/{name}"}, "Target": {"Device": device}}
        for name, device in zip(disks, ["vda", "sda", "sdb"], strict=False)
    ]
    return domain


class HotplugHarness(Harness):
    def __init__(self, pods_dir: Path, vmi: JSON, domain: JSON | None = None) -> None:
        super().__init__(pods_dir, vmi)
        self.launcher.domain = domain
        self.hotplug = FakeHotplug(self.launcher.calls)
        self.controller = VMController(
            api=self.api,
            events=self.events,
            vmi_store=self.store,
            node=NODE,
            pods_dir=pods_dir,
            connect=lambda _path: self.launcher,
            hotplug=self.hotplug,
        )

    def requeued(self) -> float:
        with pytest.raises(RequeueAfter) as raised:
            self.controller.reconcile("default/tiny")
        self.put(self.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny"))
        return raised.value.seconds

    def volume(self) -> JSON:
        vmi = self.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
        found: JSON = next(v for v in vmi["status"]["volumeStatus"] if v["name"] == "hp")
        return found


class KeepDomain(FakeLauncher):
    """A launcher whose running domain is what the test sets (a sync does not change it)."""

    def sync_vmi(self, vmi: JSON, options: Any = None) -> None:
        self.calls.append("SyncVirtualMachine")


def _with_running_domain(harness: HotplugHarness, pods_dir: Path, *disks: str) -> KeepDomain:
    """The harness's controller talking to a launcher whose running domain has ``disks``."""
    launcher = KeepDomain()
    launcher.domain = _running_domain(*disks)
    launcher.calls = harness.hotplug.log
    harness.launcher = launcher
    harness.controller = VMController(
        api=harness.api,
        events=harness.events,
        vmi_store=harness.store,
        node=NODE,
        pods_dir=pods_dir,
        connect=lambda _path: launcher,
        hotplug=harness.hotplug,
    )
    return launcher


@pytest.fixture
def running(pods_dir: Path) -> HotplugHarness:
    harness = HotplugHarness(pods_dir, _hotplug_vmi("Running"))
    _with_running_domain(harness, pods_dir, "rootdisk")
    return harness


def test_a_volume_is_mounted_before_the_sync_then_reported_mounted_and_ready(running: HotplugHarness) -> None:
    assert running.requeued() == HOTPLUG_REFRESH_SECONDS  # not in the domain yet: looked at again soon
    assert running.launcher.calls == ["mount", "SyncVirtualMachine", "unmount"]
    assert running.hotplug.launchers == [POD_UID]
    assert running.hotplug.kept == [{"rootdisk", "hp"}]
    volume = running.volume()
    assert (volume["phase"], volume["reason"], volume["message"]) == (
        "MountedToPod",
        "VolumeMountedToPod",
        "Volume hp has been mounted in virt-launcher pod",
    )
    assert (
        "Normal",
        "VolumeMountedToPod",
        "Volume hp has been mounted in virt-launcher pod",
    ) in running.events.seen

    running.launcher.domain = _running_domain("rootdisk", "hp")  # the launcher attached it
    assert running.requeued() == RUNNING_RESYNC_SECONDS
    volume = running.volume()
    assert (volume["phase"], volume["reason"], volume["message"], volume["target"]) == (
        "Ready",
        "VolumeReady",
        "Successfully attach hotplugged volume hp to VM",
        "sda",
    )
    assert running.events.seen[-1] == (
        "Normal",
        "VolumeReady",
        "Successfully attach hotplugged volume hp to VM",
    )


def test_an_unplugged_volume_leaves_the_pod_once_the_domain_lost_its_disk(running: HotplugHarness) -> None:
    unplugged = _hotplug_vmi("Running", "Ready", in_spec=False)
    unplugged["status"]["volumeStatus"][1].update(target="sda", reason="VolumeReady")
    vmi = running.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
    vmi.update(spec=unplugged["spec"], status=unplugged["status"])
    running.put(running.api.update(VIRTUAL_MACHINE_INSTANCES, "default", vmi))
    running.hotplug.in_pod = {"hp"}
    running.launcher.domain = _running_domain("rootdisk", "hp")  # the sync detaches it: seen next time
    running.requeued()
    assert running.hotplug.kept[-1] == {"rootdisk", "hp"}
    assert running.hotplug.in_pod == {"hp"}
    assert running.volume()["phase"] == "Ready"

    running.launcher.domain = _running_domain("rootdisk")
    events = len(running.events.seen)
    assert running.requeued() == HOTPLUG_REFRESH_SECONDS
    assert running.hotplug.kept[-1] == {"rootdisk"}
    volume = running.volume()
    assert (volume["phase"], volume["reason"], volume["message"]) == (
        "UnMountedFromPod",
        "VolumeUnMountedFromPod",
        "Volume hp has been unmounted from virt-launcher pod",
    )
    assert volume["hotplugVolume"] == {"attachPodName": "hp-volume-x", "attachPodUID": "attach-uid"}
    assert running.events.seen[events:] == [
        ("Normal", "VolumeUnMountedFromPod", "Volume hp has been unmounted from virt-launcher pod")
    ]


def test_a_refused_volume_fails_the_sync_and_says_why(running: HotplugHarness) -> None:
    running.hotplug.failure = (
        "failed to mount filesystem hotplug volume hp: disk.img of volume hp: refused, a symlink"
    )
    running.requeued()
    assert running.launcher.calls == ["mount"]  # the launcher is not synced
    vmi = running.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
    (condition,) = [c for c in vmi["status"]["conditions"] if c["type"] == "Synchronized"]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        SYNC_FAILED_REASON,
        running.hotplug.failure,
    )
    assert vmi["status"]["phase"] == "Running"
    assert ("Warning", "SyncFailed", running.hotplug.failure) in running.events.seen
    assert running.volume()["phase"] == "AttachedToNode"


def test_a_claim_missing_its_image_is_a_warning_event_and_the_sync_goes_on(running: HotplugHarness) -> None:
    warning = "failed to mount filesystem hotplug volume hp: disk.img of volume hp: no such file in the claim"
    running.hotplug.available = False
    running.hotplug.warnings = [warning]
    running.requeued()
    assert running.launcher.calls == ["mount", "SyncVirtualMachine", "unmount"]
    assert ("Warning", "HotplugFailed", warning) in running.events.seen
    assert running.volume()["phase"] == "AttachedToNode"


def test_a_starting_vmi_is_defined_only_with_its_hotplugged_volumes_in_the_pod(pods_dir: Path) -> None:
    harness = HotplugHarness(pods_dir, _hotplug_vmi("Scheduled"))
    assert harness.requeued() == HOTPLUG_REFRESH_SECONDS
    assert harness.launcher.calls == ["mount"]
    vmi = harness.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
    assert vmi["status"]["phase"] == "Scheduled"
    assert harness.volume()["phase"] == "MountedToPod"  # written at once: the start waits for it

    harness.requeued()
    assert harness.launcher.calls == ["mount", "mount", "SyncVirtualMachine"]


def test_a_starting_vmi_whose_volumes_are_not_in_the_pod_yet_is_not_written(pods_dir: Path) -> None:
    harness = HotplugHarness(pods_dir, _hotplug_vmi("Scheduled"))
    harness.hotplug.available = False
    before = copy.deepcopy(harness.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny"))
    assert harness.requeued() == HOTPLUG_REFRESH_SECONDS
    assert harness.launcher.calls == ["mount"]
    assert harness.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny") == before


def test_a_final_vmi_and_a_deleted_one_have_their_volumes_unmounted(pods_dir: Path) -> None:
    harness = HotplugHarness(pods_dir, _hotplug_vmi("Failed"))
    uid = harness.store.get_by_key("default/tiny")["metadata"]["uid"]  # type: ignore[index]
    harness.hotplug.records = {uid: "default/tiny", "uid-0": "default/tiny", "uid-9": "other/vm"}
    harness.reconcile()
    # The VMI's own mounts, and those of an earlier VMI of the same name.
    assert sorted(c for c in harness.launcher.calls if c.startswith("unmount all")) == sorted(
        ["unmount all uid-0", f"unmount all {uid}"]
    )
    harness.store.remove("default/tiny")
    harness.hotplug.records = {"uid-7": "default/tiny"}
    harness.controller.reconcile("default/tiny")
    assert harness.launcher.calls[-1] == "unmount all uid-7"


def test_a_removal_that_fails_is_retried(pods_dir: Path) -> None:
    harness = HotplugHarness(pods_dir, _hotplug_vmi("Failed"))

    def busy(vmi_uid: str) -> None:
        raise HotplugVolumeError("failed to unmount hotplug volume hp: Device or resource busy")

    harness.hotplug.unmount_all = busy  # type: ignore[method-assign]
    with pytest.raises(RequeueAfter):
        harness.controller.reconcile("default/tiny")


def test_the_source_pods_volumes_are_unmounted_once_the_vmi_migrated_away(running: HotplugHarness) -> None:
    """The node's informer holds the VMIs labelled for it: the target's take-over relabels the VMI, which
    leaves this node's cache, and what was mounted into the source's launcher pod goes."""
    running.requeued()
    uid = running.store.get_by_key("default/tiny")["metadata"]["uid"]  # type: ignore[index]
    running.hotplug.records = {uid: "default/tiny"}
    running.store.remove("default/tiny")
    running.controller.reconcile("default/tiny")
    assert running.launcher.calls[-1] == f"unmount all {uid}"


def test_volumes_a_migration_target_put_into_the_pod_stay_there_and_ready(pods_dir: Path) -> None:
    """After the take-over this node's controller finds the target's mounts in place: none is removed and
    the volume stays Ready."""
    vmi = _hotplug_vmi("Running", "Ready")
    vmi["status"]["volumeStatus"][1]["target"] = "sda"
    harness = HotplugHarness(pods_dir, vmi)
    launcher = _with_running_domain(harness, pods_dir, "rootdisk", "hp")
    harness.hotplug.in_pod = {"hp"}
    harness.requeued()
    assert launcher.calls == ["mount", "SyncVirtualMachine", "unmount"]
    assert harness.hotplug.in_pod == {"hp"}
    assert harness.volume()["phase"] == "Ready"
    assert [reason for _, reason, _ in harness.events.seen if reason.startswith("Volume")] == []
