"""The phases virt-handler writes for hotplugged volumes: KubeVirt's transitions, reasons and messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.virt_handler.hotplug_disk.status import (
    hotplug_volumes_ready,
    needs_refresh,
    update_hotplug_volumes,
    would_change,
)

JSON = dict[str, Any]
MOUNTED_EVENT = ("VolumeMountedToPod", "Volume hp has been mounted in virt-launcher pod")
READY_EVENT = ("VolumeReady", "Successfully attach hotplugged volume hp to VM")
UNMOUNTED_EVENT = ("VolumeUnMountedFromPod", "Volume hp has been unmounted from virt-launcher pod")


def _vmi(phase: str, *, in_spec: bool = True, target: str = "", hotplug: bool = True) -> JSON:
    entry: JSON = {
        "name": "hp",
        "phase": phase,
        "reason": "SuccessfulCreate",
        "message": "m",
        "target": target,
    }
    if hotplug:
        entry["hotplugVolume"] = {"attachPodName": "hp-volume-x", "attachPodUID": "a1"}
    volumes = [{"name": "root", "containerDisk": {"image": "i"}}]
    if in_spec:
        volumes.append({"name": "hp", "persistentVolumeClaim": {"claimName": "c", "hotpluggable": True}})
    return {
        "spec": {"volumes": volumes},
        "status": {"volumeStatus": [{"name": "root", "target": "vda"}, entry]},
    }


def _entry(vmi: JSON) -> JSON:
    return next(e for e in vmi["status"]["volumeStatus"] if e["name"] == "hp")


@pytest.mark.parametrize("phase", ["Pending", "Bound", "AttachedToNode"])
def test_a_volume_in_the_pod_and_the_spec_becomes_mounted_to_pod(phase: str) -> None:
    vmi = _vmi(phase)
    assert update_hotplug_volumes(vmi, frozenset({"hp"})) == [MOUNTED_EVENT]
    assert _entry(vmi) | {"hotplugVolume": None} == {
        "name": "hp",
        "phase": "MountedToPod",
        "reason": "VolumeMountedToPod",
        "message": "Volume hp has been mounted in virt-launcher pod",
        "target": "",
        "hotplugVolume": None,
    }


@pytest.mark.parametrize("phase", ["Detaching", "UnMountedFromPod", "", "MountedToPod"])
def test_mounted_to_pod_comes_only_from_the_controllers_phases(phase: str) -> None:
    vmi = _vmi(phase)
    before = copy.deepcopy(vmi)
    assert update_hotplug_volumes(vmi, frozenset({"hp"})) == []
    assert vmi == before


def test_a_volume_gone_from_the_spec_is_not_marked_mounted() -> None:
    vmi = _vmi("AttachedToNode", in_spec=False)
    assert update_hotplug_volumes(vmi, frozenset({"hp"})) == []
    assert _entry(vmi)["phase"] == "AttachedToNode"


@pytest.mark.parametrize("phase", ["AttachedToNode", "MountedToPod", "UnMountedFromPod", "Bound"])
def test_a_volume_with_a_disk_in_the_domain_is_ready(phase: str) -> None:
    vmi = _vmi(phase, target="sda")
    assert update_hotplug_volumes(vmi, None) == [READY_EVENT]
    assert (_entry(vmi)["phase"], _entry(vmi)["reason"], _entry(vmi)["message"]) == ("Ready", *READY_EVENT)


def test_a_ready_volume_stays_ready_without_an_event() -> None:
    vmi = _vmi("Ready", target="sda")
    _entry(vmi).update(reason="VolumeReady", message=READY_EVENT[1])
    before = copy.deepcopy(vmi)
    assert update_hotplug_volumes(vmi, frozenset()) == []
    assert vmi == before


@pytest.mark.parametrize("phase", ["Ready", "MountedToPod", "AttachedToNode"])
def test_a_volume_out_of_the_spec_the_pod_and_the_domain_is_unmounted(phase: str) -> None:
    vmi = _vmi(phase, in_spec=False)
    assert update_hotplug_volumes(vmi, frozenset()) == [UNMOUNTED_EVENT]
    assert (_entry(vmi)["phase"], _entry(vmi)["reason"]) == ("UnMountedFromPod", "VolumeUnMountedFromPod")


@pytest.mark.parametrize(
    ("phase", "in_spec"), [("Detaching", False), ("Bound", False), ("MountedToPod", True), ("Ready", True)]
)
def test_unmounted_needs_a_volume_out_of_the_spec_in_a_phase_that_had_it(phase: str, in_spec: bool) -> None:
    vmi = _vmi(phase, in_spec=in_spec)
    assert update_hotplug_volumes(vmi, frozenset()) == []
    assert _entry(vmi)["phase"] == phase


def test_without_a_look_at_the_pod_only_ready_is_decided() -> None:
    vmi = _vmi("Ready", in_spec=False)
    assert update_hotplug_volumes(vmi, None) == []
    assert _entry(vmi)["phase"] == "Ready"


def test_volumes_not_hotplugged_are_left_alone() -> None:
    vmi = _vmi("Bound", hotplug=False, target="")
    before = copy.deepcopy(vmi)
    assert update_hotplug_volumes(vmi, frozenset({"hp"})) == []
    assert vmi == before


def test_would_change_leaves_the_vmi_as_it_is() -> None:
    vmi = _vmi("AttachedToNode")
    before = copy.deepcopy(vmi)
    assert would_change(vmi, frozenset({"hp"}))
    assert not would_change(vmi, frozenset())
    assert not would_change(vmi, None)
    assert vmi == before


def test_a_volume_without_a_disk_in_the_domain_is_looked_at_again_soon() -> None:
    assert needs_refresh(_vmi("MountedToPod"), {"root"})
    assert not needs_refresh(_vmi("Ready"), {"root", "hp"})
    assert not needs_refresh(_vmi("Bound", hotplug=False), {"root"})


def test_a_starting_vmi_waits_for_its_hotpluggable_volumes() -> None:
    assert hotplug_volumes_ready({"spec": {"volumes": [{"name": "r", "containerDisk": {}}]}, "status": {}})
    waiting = _vmi("AttachedToNode")
    assert not hotplug_volumes_ready(waiting)
    assert not hotplug_volumes_ready({"spec": waiting["spec"], "status": {}})
    assert hotplug_volumes_ready(_vmi("MountedToPod"))
    assert hotplug_volumes_ready(_vmi("Ready"))
    data_volume = {"spec": {"volumes": [{"name": "d", "dataVolume": {"name": "d", "hotpluggable": True}}]}}
    assert not hotplug_volumes_ready({**data_volume, "status": {}})
