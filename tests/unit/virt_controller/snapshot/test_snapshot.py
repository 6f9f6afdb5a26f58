"""The VirtualMachineSnapshot controller, pass by pass as KubeVirt's updateVMSnapshot: finalizer and
initial status, the VM's lock (and why it is refused), the content, the status as the content
progresses, the unlock, the failure deadline and deletion."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS, VIRTUAL_MACHINES
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
    VIRTUAL_MACHINE_SNAPSHOTS,
)
from kubevirt.controller import key_for
from kubevirt.virt_controller.watch.snapshot.common import (
    CONTENT_FINALIZER,
    SNAPSHOT_FINALIZER,
    SOURCE_FINALIZER,
)
from kubevirt.virt_controller.watch.snapshot.source import SourceError

from .world import (
    CLAIM,
    NS,
    SNAPSHOT,
    VM,
    World,
    claim,
    complete_snapshot,
    conditions,
    cut_volume_snapshots,
    lock_vm,
    pvc_volume,
    snapshot_world,
    start_vm,
    vm_manifest,
    vm_snapshot,
)

LOCKED = "Source locked and operation in progress"
NOT_LOCKED = "Source not locked"


def _vm_lock(world: World) -> tuple[str | None, list[str]]:
    vm = world.vm()
    return (vm.get("status") or {}).get("snapshotInProgress"), vm["metadata"].get("finalizers") or []


# First pass.


def test_first_pass_adds_the_finalizer_and_initializes_the_status_only() -> None:
    world = snapshot_world()
    requeue = world.run_snapshot()

    snapshot = world.snapshot()
    assert snapshot["metadata"]["finalizers"] == [SNAPSHOT_FINALIZER]
    status = snapshot["status"]
    assert status["readyToUse"] is False
    assert status["phase"] == "InProgress"
    assert status["sourceUID"] == world.vm()["metadata"]["uid"]
    assert conditions(snapshot) == [("Progressing", "False", NOT_LOCKED), ("Ready", "False", "Not ready")]
    for condition in status["conditions"]:
        assert set(condition) == {"type", "status", "reason", "lastTransitionTime"}
    assert "indications" not in status  # an offline VM has none
    assert _vm_lock(world) == (None, [])  # locking starts on the next pass
    assert requeue == pytest.approx(300, abs=2)  # the default failure deadline


def test_a_snapshot_of_a_missing_vm_says_so_and_has_no_source_uid() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_SNAPSHOTS, vm_snapshot())
    world.run_snapshot()
    world.run_snapshot()
    status = world.snapshot()["status"]
    assert "sourceUID" not in status
    assert status["phase"] == "InProgress"
    assert conditions(world.snapshot()) == [
        ("Progressing", "False", "Source does not exist"),
        ("Ready", "False", "Not ready"),
    ]


# The VM's lock.


def test_second_pass_locks_the_vm_and_retries_in_five_seconds() -> None:
    world = snapshot_world()
    world.run_snapshot()
    requeue = world.run_snapshot()

    assert requeue == 5
    assert _vm_lock(world) == (SNAPSHOT, [SOURCE_FINALIZER])
    assert conditions(world.snapshot())[0] == ("Progressing", "True", LOCKED)
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS) == []


@pytest.mark.parametrize(
    ("phase", "reason"),
    [
        ("Pending", f"{NOT_LOCKED} source {NS}/{VM} volume not bound: {CLAIM}"),
        (None, f"{NOT_LOCKED} source {NS}/{VM} volume doesnt exist: {CLAIM}"),
    ],
)
def test_a_claim_not_bound_or_missing_refuses_the_lock(phase: str | None, reason: str) -> None:
    world = snapshot_world()
    if phase is None:
        world.api.delete(PERSISTENT_VOLUME_CLAIMS, NS, CLAIM)
    else:
        world.edit(
            PERSISTENT_VOLUME_CLAIMS, CLAIM, lambda pvc: pvc.update(status={"phase": phase}), status=True
        )
    world.run_snapshot()
    assert world.run_snapshot() == 5

    assert _vm_lock(world) == (None, [])
    assert conditions(world.snapshot())[0] == ("Progressing", "False", reason)


def test_another_snapshot_in_progress_refuses_the_lock() -> None:
    world = snapshot_world()
    world.edit(
        VIRTUAL_MACHINES, VM, lambda vm: vm.update(status={"snapshotInProgress": "other"}), status=True
    )
    world.run_snapshot()
    world.run_snapshot()

    assert _vm_lock(world) == ("other", [])
    assert conditions(world.snapshot())[0] == (
        "Progressing",
        "False",
        f'{NOT_LOCKED} snapshot "other" in progress',
    )


def test_an_offline_vm_whose_claims_a_pod_mounts_is_not_locked() -> None:
    world = snapshot_world()
    pod = {
        "metadata": {"name": "user", "namespace": NS},
        "spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": CLAIM}}]},
        "status": {"phase": "Running"},
    }
    world.add(PODS, pod)
    world.add(PODS, {**pod, "metadata": {"name": "done", "namespace": NS}, "status": {"phase": "Succeeded"}})
    world.run_snapshot()
    world.run_snapshot()

    assert _vm_lock(world) == (None, [])
    assert conditions(world.snapshot())[0] == (
        "Progressing",
        "False",
        f"{NOT_LOCKED} source is offline but 1 pods using PVCs [{CLAIM}]",
    )


def test_a_running_vm_is_locked_although_its_launcher_mounts_the_claim() -> None:
    world = snapshot_world(online=True)
    world.add(
        PODS,
        {
            "metadata": {"name": "virt-launcher-testvm", "namespace": NS},
            "spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": CLAIM}}]},
            "status": {"phase": "Running"},
        },
    )
    lock_vm(world)
    assert _vm_lock(world) == (SNAPSHOT, [SOURCE_FINALIZER])


def test_a_vm_with_finalizers_keeps_them_when_locked() -> None:
    world = snapshot_world()
    world.edit(VIRTUAL_MACHINES, VM, lambda vm: vm["metadata"].update(finalizers=["kubevirt.io/other"]))
    lock_vm(world)
    assert _vm_lock(world) == (SNAPSHOT, ["kubevirt.io/other", SOURCE_FINALIZER])


# The content.


def test_third_pass_writes_the_content_of_an_offline_vm() -> None:
    world = snapshot_world()
    lock_vm(world)
    world.run_snapshot()

    snapshot = world.snapshot()
    uid = snapshot["metadata"]["uid"]
    content = world.content()
    name = f"vmsnapshot-content-{uid}"
    assert content["metadata"]["name"] == name
    assert content["metadata"]["finalizers"] == [CONTENT_FINALIZER]
    assert "ownerReferences" not in content["metadata"]
    assert "labels" not in content["metadata"]
    assert "status" not in content
    spec = content["spec"]
    assert spec["virtualMachineSnapshotName"] == SNAPSHOT

    vm = world.vm()
    recorded = spec["source"]["virtualMachine"]
    expected_meta = {key: value for key, value in vm["metadata"].items() if key != "managedFields"}
    assert recorded["metadata"] == expected_meta
    assert "managedFields" not in recorded["metadata"]
    assert SOURCE_FINALIZER in recorded["metadata"]["finalizers"]
    assert recorded["spec"] == vm["spec"]
    assert recorded["status"] == {}

    pvc = world.api.get(PERSISTENT_VOLUME_CLAIMS, NS, CLAIM)
    assert spec["volumeBackups"] == [
        {
            "volumeName": "rootdisk",
            "persistentVolumeClaim": {
                "metadata": {key: value for key, value in pvc["metadata"].items() if key != "managedFields"},
                "spec": pvc["spec"],
            },
            "volumeSnapshotName": f"vmsnapshot-{uid}-volume-rootdisk",
        }
    ]
    assert world.events.events == [
        (
            "VirtualMachineSnapshot",
            SNAPSHOT,
            "Normal",
            "SuccessfulVirtualMachineSnapshotContentCreate",
            f"Successfully created VirtualMachineSnapshotContent {name}",
        )
    ]


def test_claims_that_cannot_be_snapshotted_get_no_backup() -> None:
    world = snapshot_world()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim("no-class", storage_class_name=None))
    world.add(PERSISTENT_VOLUME_CLAIMS, claim("foreign", storage_class_name="unknown"))
    volumes = [pvc_volume("rootdisk", CLAIM), pvc_volume("plain", "no-class"), pvc_volume("other", "foreign")]
    world.edit(VIRTUAL_MACHINES, VM, lambda vm: vm.update(spec=vm_manifest(volumes)["spec"]))
    lock_vm(world)
    world.run_snapshot()
    assert [b["volumeName"] for b in world.content()["spec"]["volumeBackups"]] == ["rootdisk"]


def test_a_running_vm_is_recorded_from_its_start_revision_with_todays_volumes() -> None:
    world = snapshot_world()
    start_vm(world)
    # After the start: the template's memory changed (not applied yet) and a volume was hotplugged.
    hotplugged = pvc_volume("hotplug", CLAIM)

    def change(vm: dict[str, object]) -> None:
        template = vm["spec"]["template"]["spec"]  # type: ignore[index]
        template["domain"]["resources"]["requests"]["memory"] = "1Gi"
        template["volumes"].append(hotplugged)
        template["domain"]["devices"]["disks"].append({"name": "hotplug", "disk": {"bus": "scsi"}})
        vm["spec"]["dataVolumeTemplates"] = [{"metadata": {"name": "dv"}, "spec": {"pvc": {}}}]  # type: ignore[index]

    world.edit(VIRTUAL_MACHINES, VM, change)
    lock_vm(world)
    world.run_snapshot()

    live = world.vm()["spec"]
    recorded = world.content()["spec"]["source"]["virtualMachine"]
    template = recorded["spec"]["template"]["spec"]
    assert template["domain"]["resources"]["requests"]["memory"] == "128Mi"  # as started
    assert template["volumes"] == live["template"]["spec"]["volumes"]
    assert template["domain"]["devices"]["disks"] == live["template"]["spec"]["domain"]["devices"]["disks"]
    assert recorded["spec"]["dataVolumeTemplates"] == live["dataVolumeTemplates"]
    assert recorded["status"] == {}


def test_a_running_vm_without_its_start_revision_is_an_error() -> None:
    world = snapshot_world()
    revision = start_vm(world)
    world.api.delete(CONTROLLER_REVISIONS, NS, revision)
    lock_vm(world)
    with pytest.raises(SourceError, match=f"^vm revision {revision} doesn't exist$"):
        world.snapshot_controller.reconcile(key_for(NS, SNAPSHOT))
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS) == []


def test_a_running_vm_whose_vmi_names_no_revision_is_an_error() -> None:
    world = snapshot_world()
    start_vm(world)
    world.edit(VIRTUAL_MACHINE_INSTANCES, VM, lambda vmi: vmi["status"].pop("virtualMachineRevisionName"))
    lock_vm(world)
    with pytest.raises(SourceError, match=r"^vm revision  doesn't exist$"):
        world.snapshot_controller.reconcile(key_for(NS, SNAPSHOT))


# The status as the content progresses.


def test_the_snapshot_reports_the_content_and_succeeds_when_it_is_created() -> None:
    world = snapshot_world()
    lock_vm(world)
    world.run_snapshot()
    content_name = world.content_name()
    world.run_content(content_name)
    world.run_snapshot()

    status = world.snapshot()["status"]
    assert status["virtualMachineSnapshotContentName"] == content_name
    assert status["readyToUse"] is False
    assert status["phase"] == "InProgress"
    assert conditions(world.snapshot()) == [("Progressing", "True", LOCKED), ("Ready", "False", "Not ready")]

    cut_volume_snapshots(world)
    world.run_content(content_name)
    world.run_snapshot()

    snapshot = world.snapshot()
    status = snapshot["status"]
    content_status = world.content()["status"]
    assert status["phase"] == "Succeeded"
    assert status["readyToUse"] is True
    assert status["creationTime"] == content_status["creationTime"]
    assert conditions(snapshot) == [
        ("Progressing", "False", "Operation complete"),
        ("Ready", "True", "Ready"),
    ]
    assert status["snapshotVolumes"] == {"includedVolumes": ["rootdisk"], "excludedVolumes": ["cloudinit"]}
    assert "error" not in status
    # Succeeded in this pass; the VM is let go on the next one.
    assert _vm_lock(world) == (SNAPSHOT, [SOURCE_FINALIZER])

    world.run_snapshot()
    assert _vm_lock(world) == (None, [])
    assert world.snapshot()["metadata"]["finalizers"] == [SNAPSHOT_FINALIZER]


def test_a_created_but_not_yet_ready_content_already_makes_the_snapshot_succeeded() -> None:
    world = snapshot_world()
    lock_vm(world)
    world.run_snapshot()
    world.run_content(world.content_name())
    cut_volume_snapshots(world, ready=False)
    world.run_content(world.content_name())
    world.run_snapshot()
    snapshot = world.snapshot()
    assert snapshot["status"]["phase"] == "Succeeded"
    assert snapshot["status"]["readyToUse"] is False
    assert conditions(snapshot) == [
        ("Progressing", "False", "Operation complete"),
        ("Ready", "False", "Not ready"),
    ]


def test_a_content_error_is_copied_and_the_snapshot_is_in_error_state() -> None:
    world = snapshot_world()
    lock_vm(world)
    world.run_snapshot()
    error = {"time": "2026-01-01T00:00:00Z", "message": "VolumeSnapshot x error: quota"}
    world.edit(
        VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
        world.content_name(),
        lambda content: content.update(status={"readyToUse": False, "error": error}),
        status=True,
    )
    world.run_snapshot()
    snapshot = world.snapshot()
    assert snapshot["status"]["error"] == error
    assert conditions(snapshot)[0] == ("Progressing", "False", "In error state")

    world.edit(
        VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
        world.content_name(),
        lambda content: content.update(status={"readyToUse": False}),
        status=True,
    )
    world.run_snapshot()
    snapshot = world.snapshot()
    assert "error" not in snapshot["status"]  # cleared with the content's
    assert conditions(snapshot)[0] == ("Progressing", "True", LOCKED)


def test_conditions_keep_their_transition_time_while_unchanged() -> None:
    world = snapshot_world()
    world.run_snapshot()
    first = world.snapshot()["status"]["conditions"]
    world.clock.advance(30)
    world.edit(
        PERSISTENT_VOLUME_CLAIMS, CLAIM, lambda pvc: pvc.update(status={"phase": "Pending"}), status=True
    )
    world.run_snapshot()  # refused: Progressing's reason changes, Ready's does not
    second = world.snapshot()["status"]["conditions"]
    assert second[1] == first[1]
    assert second[0]["lastTransitionTime"] != first[0]["lastTransitionTime"]


# Indications.


def test_a_running_vm_without_guest_agent_is_indicated() -> None:
    world = snapshot_world(online=True)
    world.run_snapshot()
    assert world.snapshot()["status"]["indications"] == ["NoGuestAgent", "Online"]


def test_a_running_vm_with_guest_agent_is_indicated() -> None:
    world = snapshot_world(online=True, agent=True)
    world.run_snapshot()
    assert world.snapshot()["status"]["indications"] == ["GuestAgent", "Online"]


def test_a_paused_vm_is_indicated_and_indications_are_never_removed() -> None:
    world = snapshot_world(online=True)
    world.run_snapshot()
    world.edit(
        VIRTUAL_MACHINE_INSTANCES,
        VM,
        lambda vmi: vmi["status"]["conditions"].append({"type": "Paused", "status": "True"}),
    )
    world.run_snapshot()
    assert world.snapshot()["status"]["indications"] == ["NoGuestAgent", "Online", "Paused"]


def test_a_freeze_limit_error_adds_quiesce_timeout() -> None:
    world = snapshot_world(online=True, agent=True)
    lock_vm(world)
    world.run_snapshot()
    world.edit(
        VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
        world.content_name(),
        lambda content: content.update(
            status={"readyToUse": False, "error": {"message": "fsfreeze is limited to 10 seconds"}}
        ),
        status=True,
    )
    world.run_snapshot()
    assert world.snapshot()["status"]["indications"] == ["GuestAgent", "Online", "QuiesceTimeout"]


# The failure deadline.


def test_an_exceeded_deadline_fails_the_snapshot_deletes_its_content_and_unlocks_later() -> None:
    world = snapshot_world()
    lock_vm(world)
    world.run_snapshot()
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS) != []
    world.clock.advance(301)

    assert world.run_snapshot() is None
    snapshot = world.snapshot()
    assert snapshot["status"]["phase"] == "Failed"
    assert conditions(snapshot) == [
        ("Progressing", "False", "Operation failed"),
        ("Ready", "False", "Not ready"),
        ("Failure", "True", "snapshot deadline exceeded"),
    ]
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS) == []  # not ready: deleted
    assert _vm_lock(world) == (SNAPSHOT, [SOURCE_FINALIZER])

    world.run_snapshot()
    assert _vm_lock(world) == (None, [])
    assert world.snapshot()["status"]["phase"] == "Failed"  # sticky
    assert world.snapshot()["metadata"]["finalizers"] == [SNAPSHOT_FINALIZER]


def test_a_snapshot_first_seen_after_its_deadline_fails_with_conditions_in_kubevirts_order() -> None:
    world = snapshot_world(failureDeadline="1m")
    world.clock.advance(61)
    world.run_snapshot()
    snapshot = world.snapshot()
    assert "finalizers" not in snapshot["metadata"]  # terminating: no finalizer is added
    assert snapshot["status"]["phase"] == "Failed"
    assert conditions(snapshot) == [
        ("Failure", "True", "snapshot deadline exceeded"),
        ("Progressing", "False", "Operation failed"),
        ("Ready", "False", "Not ready"),
    ]
    assert _vm_lock(world) == (None, [])


def test_a_zero_failure_deadline_never_expires() -> None:
    world = snapshot_world(failureDeadline="0s")
    assert world.run_snapshot() is None  # nothing to wait for
    world.clock.advance(3600)
    world.run_snapshot()
    assert world.snapshot()["status"]["phase"] == "InProgress"


def test_the_requeue_waits_for_the_deadline() -> None:
    world = snapshot_world(failureDeadline="2m")
    world.clock.advance(20)
    assert world.run_snapshot() == pytest.approx(100, abs=2)


# Deletion.


def _delete_snapshot(world: World) -> None:
    world.mark_deleting(VIRTUAL_MACHINE_SNAPSHOTS, SNAPSHOT)


@pytest.mark.parametrize("policy", [None, "Delete"])
def test_deleting_a_succeeded_snapshot_deletes_its_content(policy: str | None) -> None:
    spec: dict[str, Any] = {"deletionPolicy": policy} if policy else {}
    world = snapshot_world(**spec)
    complete_snapshot(world)
    world.run_snapshot()  # unlock
    _delete_snapshot(world)
    world.run_snapshot()

    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS) == []
    snapshot = world.snapshot()
    assert snapshot["metadata"]["finalizers"] == []
    assert snapshot["status"]["phase"] == "Succeeded"
    assert _vm_lock(world) == (None, [])


def test_deleting_a_succeeded_snapshot_keeps_a_retained_content() -> None:
    world = snapshot_world(deletionPolicy="Retain")
    complete_snapshot(world)
    _delete_snapshot(world)
    world.run_snapshot()  # unlocks the VM too

    content = world.content()
    assert content["status"]["readyToUse"] is True
    assert content["spec"]["virtualMachineSnapshotName"] == SNAPSHOT
    assert world.snapshot()["metadata"]["finalizers"] == []
    assert _vm_lock(world) == (None, [])
    world.run_content(content["metadata"]["name"])
    assert world.content()["metadata"]["finalizers"] == []  # the content's own finalizer goes too


def test_deleting_an_unfinished_snapshot_deletes_its_content_whatever_the_policy() -> None:
    world = snapshot_world(deletionPolicy="Retain")
    lock_vm(world)
    world.run_snapshot()
    _delete_snapshot(world)

    world.run_snapshot()
    snapshot = world.snapshot()
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS) == []
    assert snapshot["status"]["phase"] == "Deleting"
    assert conditions(snapshot)[0] == ("Progressing", "False", "VM snapshot is deleting")
    assert snapshot["metadata"]["finalizers"] == [SNAPSHOT_FINALIZER]  # the VM is still locked

    world.run_snapshot()  # the content is gone from the cache: unlock, then let the snapshot go
    assert _vm_lock(world) == (None, [])
    assert world.snapshot()["metadata"]["finalizers"] == []


def test_deleting_a_snapshot_of_a_missing_vm_lets_it_go_at_once() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_SNAPSHOTS, vm_snapshot())
    world.run_snapshot()
    _delete_snapshot(world)
    world.run_snapshot()
    assert world.snapshot()["metadata"]["finalizers"] == []


# Informer events.


def test_vm_vmi_and_content_events_queue_the_snapshots_of_that_vm() -> None:
    world = snapshot_world()
    world.add(VIRTUAL_MACHINE_SNAPSHOTS, vm_snapshot("second"))
    other = vm_snapshot("elsewhere")
    other["spec"]["source"]["name"] = "other-vm"
    world.add(VIRTUAL_MACHINE_SNAPSHOTS, other)
    world.sync()
    controller = world.snapshot_controller

    vm = world.vms.get_by_key(key_for(NS, VM))
    assert vm is not None
    controller.on_vm_update(vm, vm)
    assert sorted(world.queued) == [key_for(NS, "second"), key_for(NS, SNAPSHOT)]

    world.queued.clear()
    controller.on_content_delete(
        {"metadata": {"name": "c", "namespace": NS}, "spec": {"virtualMachineSnapshotName": "second"}}
    )
    assert world.queued == [key_for(NS, "second")]
