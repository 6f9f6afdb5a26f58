"""The VirtualMachineClone controller, pass by pass, against an in-memory API with hand-made snapshots,
contents and restores: KubeVirt's phases, conditions, events, objects and failures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, VIRTUAL_MACHINES, ApiError, NotFoundError, Resource
from kubevirt.client.errors import InvalidError
from kubevirt.client.resources import (
    VIRTUAL_MACHINE_CLONES,
    VIRTUAL_MACHINE_RESTORES,
    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
    VIRTUAL_MACHINE_SNAPSHOTS,
)
from kubevirt.virt_controller.watch.clone.clone import CloneError, clone_indexers
from kubevirt.virt_controller.watch.common import format_time
from kubevirt_api.core.v1 import VirtualMachine
from kubevirt_testing.fake_kube_api import FakeKubeApi

from ..snapshot.world import NS, VM, claim, conditions
from .world import (
    CLONE,
    SUFFIX,
    TARGET,
    CloneWorld,
    add_restore,
    add_snapshot_with_content,
    clone_manifest,
    clone_vm_manifest,
    ready_snapshot,
    restore_of,
    snapshot_content,
    snapshot_source,
    snapshottable,
)

JSON = dict[str, Any]
STILL_PROCESSING = [("Progressing", "True", "Still processing"), ("Ready", "False", "Still processing")]
READY = [("Progressing", "False", "Ready"), ("Ready", "True", "Ready")]
SOURCE_SNAPSHOT = "source-snap"


def vm_world(*, vm: JSON | None = None, **clone_spec: Any) -> CloneWorld:
    """A snapshottable source VM and a new clone of it."""
    world = CloneWorld()
    world.add(VIRTUAL_MACHINES, vm if vm is not None else snapshottable(clone_vm_manifest(), "rootdisk"))
    world.add(VIRTUAL_MACHINE_CLONES, clone_manifest(**clone_spec))
    return world


def make_snapshot_ready(world: CloneWorld, *, ready: bool = True) -> None:
    """What the snapshot controllers do: the clone's snapshot gets ready (or not) with its content."""
    name = world.snapshot_name()
    status = ready_snapshot(name, world.vm(), ready=ready)["status"]
    world.edit(VIRTUAL_MACHINE_SNAPSHOTS, name, lambda s: s.update(status=status), status=True)
    world.add(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, snapshot_content(name, world.vm()))


def snapshot_taken(*, ready: bool = True, **clone_spec: Any) -> CloneWorld:
    """The clone's snapshot was created, and made ready (or not)."""
    world = vm_world(**clone_spec)
    world.run_clone()
    make_snapshot_ready(world, ready=ready)
    return world


def restore_created(**clone_spec: Any) -> CloneWorld:
    world = snapshot_taken(**clone_spec)
    world.run_clone()
    return world


def complete_restore(world: CloneWorld, *, claims: tuple[str, ...] = ()) -> None:
    world.edit(
        VIRTUAL_MACHINE_RESTORES,
        world.restore_name(),
        lambda r: r.update(
            status=restore_of(world, world.snapshot_name(), complete=True, claims=claims)["status"]
        ),
        status=True,
    )


def add_target(world: CloneWorld) -> None:
    world.add(VIRTUAL_MACHINES, clone_vm_manifest(name=TARGET))


def exists(world: CloneWorld, resource: Resource, name: str) -> bool:
    try:
        world.get(resource, name)
    except NotFoundError:
        return False
    return True


# The source.


def test_a_missing_source_vm_keeps_the_clone_pending() -> None:
    world = CloneWorld()
    world.add(VIRTUAL_MACHINE_CLONES, clone_manifest())
    world.run_clone()

    clone = world.clone()
    assert "phase" not in clone["status"]
    reason = f"Source doesnt exist: VirtualMachine {NS}/{VM}"
    assert conditions(clone) == [("Progressing", "False", "Pending"), ("Ready", "False", reason)]
    assert world.events_of("SourceDoesNotExist") == [("Normal", reason)]
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOTS) == []


def test_a_source_vm_with_backend_storage_fails_the_clone() -> None:
    vm = snapshottable(clone_vm_manifest(), "rootdisk")
    vm["spec"]["template"]["spec"]["domain"]["devices"]["tpm"] = {"persistent": True}
    world = vm_world(vm=vm)
    world.run_clone()

    clone = world.clone()
    reason = f"Clone of source with backendstorage is not supported: VM {NS}/{VM}"
    assert clone["status"]["phase"] == "Failed"
    assert conditions(clone) == [("Progressing", "False", "Failed"), ("Ready", "False", reason)]
    assert world.events_of("SourceVMWithBackendStorageInvalid") == [("Normal", reason)]


def test_a_failed_clone_reads_still_processing_on_its_next_pass_as_in_kubevirt() -> None:
    vm = snapshottable(clone_vm_manifest(), "rootdisk")
    vm["spec"]["template"]["spec"]["domain"]["firmware"] = {"bootloader": {"efi": {"persistent": True}}}
    world = vm_world(vm=vm)
    world.run_clone()
    world.edit(VIRTUAL_MACHINES, VM, lambda v: v["spec"]["template"]["spec"]["domain"].pop("firmware"))
    world.run_clone()

    clone = world.clone()
    assert clone["status"]["phase"] == "Failed"
    assert conditions(clone) == STILL_PROCESSING


@pytest.mark.parametrize(
    ("statuses", "reason"),
    [
        ((), "Virtual Machine volume rootdisk snapshot support unknown"),
        ((False,), "Virtual Machine volume rootdisk does not support snapshots"),
    ],
)
def test_volumes_that_cannot_be_snapshotted_keep_the_clone_pending(
    statuses: tuple[bool, ...], reason: str
) -> None:
    vm = clone_vm_manifest()
    if statuses:
        vm = snapshottable(vm, "rootdisk", enabled=statuses[0])
    world = vm_world(vm=vm)
    world.run_clone()

    clone = world.clone()
    assert "phase" not in clone["status"]
    assert conditions(clone) == [("Progressing", "False", "Pending"), ("Ready", "False", reason)]
    assert world.events_of("VMVolumeSnapshotsInvalid") == [("Normal", reason)]
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOTS) == []


# Snapshot.


def test_the_snapshot_is_created_and_named_in_the_status() -> None:
    world = vm_world()
    world.run_clone()

    clone = world.clone()
    name = world.snapshot_name()
    assert clone["status"] == {
        "phase": "SnapshotInProgress",
        "snapshotName": name,
        "conditions": [
            {
                "type": "Progressing",
                "status": "True",
                "reason": "Still processing",
                "lastTransitionTime": format_time(world.clock()),
            },
            {
                "type": "Ready",
                "status": "False",
                "reason": "Still processing",
                "lastTransitionTime": format_time(world.clock()),
            },
        ],
    }
    snapshot = world.snapshot(name)
    assert snapshot["spec"]["source"] == {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": VM}
    owner = snapshot["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "VirtualMachineClone",
        CLONE,
        world.clone_uid(),
        True,
    )
    assert world.events_of("SnapshotCreated") == [("Normal", f"created snapshot {name} for clone {CLONE}")]


def test_an_existing_snapshot_is_taken_over_without_an_event() -> None:
    world = vm_world()
    world.add(VIRTUAL_MACHINE_SNAPSHOTS, ready_snapshot(world.snapshot_name(), world.vm(), ready=False))
    world.run_clone()

    assert world.clone()["status"]["snapshotName"] == world.snapshot_name()
    assert world.events_of("SnapshotCreated") == []


def test_a_snapshot_not_ready_yet_changes_nothing() -> None:
    world = snapshot_taken(ready=False)
    before = world.clone()
    world.events.events.clear()
    world.run_clone()

    assert world.clone() == before
    assert world.events.events == []
    assert world.api.objects_of(VIRTUAL_MACHINE_RESTORES) == []


# Restore.


def test_a_ready_snapshot_brings_the_restore_with_the_patches() -> None:
    world = snapshot_taken(labelFilters=["team/*"], annotationFilters=["!note/drop", "*"])
    world.run_clone()

    clone = world.clone()
    snapshot, restore_name = world.snapshot_name(), world.restore_name()
    assert clone["status"]["phase"] == "RestoreInProgress"
    assert clone["status"]["restoreName"] == restore_name
    assert world.events.reasons() == ["SnapshotCreated", "SnapshotReady", "RestoreCreated"]
    assert world.events_of("SnapshotReady") == [
        ("Normal", f"snapshot {snapshot} for clone {CLONE} is ready to use")
    ]
    restore = world.restore(restore_name)
    assert restore["metadata"]["ownerReferences"][0]["uid"] == world.clone_uid()
    assert restore["spec"] == {
        "target": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": TARGET},
        "virtualMachineSnapshotName": snapshot,
        "patches": [
            '{"op":"replace","path":"/spec/template/spec/domain/devices/interfaces/0/macAddress","value":""}',
            '{"op":"replace","path":"/spec/template/spec/domain/firmware/serial","value":""}',
            '{"op":"remove","path":"/metadata/labels/app"}',
            '{"op":"remove","path":"/metadata/annotations/note~1drop"}',
            '{"op":"replace","path":"/spec/template/spec/domain/firmware/uuid","value":""}',
        ],
    }


def test_a_target_without_a_name_gets_a_generated_one() -> None:
    world = restore_created(target={"apiGroup": "kubevirt.io", "kind": "VirtualMachine"})
    assert world.restore(world.restore_name())["spec"]["target"]["name"] == f"{VM}-clone-{SUFFIX}"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            lambda c: c["spec"].pop("virtualMachineSnapshotName"),
            "cannot get snapshot name from content {content}",
        ),
        (
            lambda c: c["spec"].update(volumeBackups=[]),
            "volume rootdisk is not backed up in snapshot {snapshot}",
        ),
    ],
)
def test_an_unusable_content_fails_the_clone(change: Any, reason: str) -> None:
    world = snapshot_taken()
    content = f"{world.snapshot_name()}-content"
    world.edit(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, content, change)
    world.run_clone()

    clone = world.clone()
    expected = reason.format(content=content, snapshot=world.snapshot_name())
    assert clone["status"]["phase"] == "Failed"
    assert conditions(clone) == [("Progressing", "False", "Failed"), ("Ready", "False", expected)]
    assert world.events_of("SnapshotContentInvalid") == [("Normal", expected)]
    assert world.api.objects_of(VIRTUAL_MACHINE_RESTORES) == []


class RefusingApi(FakeKubeApi):
    """virt-api refusing the restore: its target exists and is not the snapshot's VM."""

    def create(
        self, resource: Resource, namespace: str | None, body: Mapping[str, Any], *, dry_run: bool = False
    ) -> JSON:
        if resource.plural == VIRTUAL_MACHINE_RESTORES.plural:
            raise InvalidError(
                422, "Invalid", "admission webhook denied the request: target VM must not exist"
            )
        return super().create(resource, namespace, body, dry_run=dry_run)


def test_a_refused_restore_is_reported_and_retried() -> None:
    world = CloneWorld(RefusingApi())
    world.add(VIRTUAL_MACHINES, snapshottable(clone_vm_manifest(), "rootdisk"))
    add_target(world)
    world.add(VIRTUAL_MACHINE_CLONES, clone_manifest())
    world.run_clone()
    make_snapshot_ready(world)
    with pytest.raises(CloneError, match="target VM must not exist"):
        world.run_clone()

    clone = world.clone()
    assert clone["status"]["phase"] == "RestoreInProgress"
    assert "restoreName" not in clone["status"]
    message = (
        f"failed creating restore {world.restore_name()} for clone {CLONE}: "
        "admission webhook denied the request: target VM must not exist"
    )
    assert world.events_of("RestoreCreationFailed") == [("Warning", message)]


def test_an_existing_restore_is_taken_over_without_an_event() -> None:
    world = snapshot_taken()
    add_restore(world, restore_of(world, world.snapshot_name()))
    world.run_clone()

    assert world.clone()["status"]["restoreName"] == world.restore_name()
    assert world.events_of("RestoreCreated") == []


def test_a_progressing_restore_changes_nothing() -> None:
    world = restore_created()
    before = world.clone()
    world.events.events.clear()
    world.run_clone()
    assert world.clone() == before
    assert world.events.events == []


def test_a_snapshot_deleted_before_the_restore_is_done_fails_the_clone() -> None:
    world = restore_created()
    world.api.delete(VIRTUAL_MACHINE_SNAPSHOTS, NS, world.snapshot_name())
    world.run_clone()

    clone = world.clone()
    reason = f"snapshot {world.snapshot_name()} does not exist anymore"
    assert clone["status"]["phase"] == "Failed"
    assert world.events_of("SnapshotDeleted") == [("Normal", reason)]


# Target and cleanup.


def test_a_complete_restore_without_its_vm_yet_waits_in_creating_target_vm() -> None:
    world = restore_created()
    complete_restore(world)
    with pytest.raises(CloneError, match=f"target VM {TARGET} is not created yet for clone {CLONE}"):
        world.run_clone()

    clone = world.clone()
    assert clone["status"]["phase"] == "CreatingTargetVM"
    assert clone["status"]["targetName"] == TARGET
    assert world.events_of("RestoreReady") == [
        ("Normal", f"restore {world.restore_name()} for clone {CLONE} is ready to use")
    ]


def test_the_target_vm_completes_the_clone_and_the_snapshot_and_restore_go() -> None:
    world = restore_created()
    complete_restore(world)
    add_target(world)
    world.run_clone()

    clone = world.clone()
    assert clone["status"]["phase"] == "Succeeded"
    assert clone["status"]["targetName"] == TARGET
    assert "snapshotName" not in clone["status"]
    assert "restoreName" not in clone["status"]
    assert conditions(clone) == READY
    assert world.events_of("TargetVMCreated") == [("Normal", f"created target VM {TARGET} for clone {CLONE}")]
    assert world.events_of("PVCBound") == [("Normal", f"all PVC for clone {CLONE} are bound")]
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOTS) == []
    assert world.api.objects_of(VIRTUAL_MACHINE_RESTORES) == []


def test_cleanup_waits_for_the_restored_claims_to_bind() -> None:
    world = restore_created()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim("restored", phase="Pending"))
    complete_restore(world, claims=("restored",))
    add_target(world)
    world.run_clone()

    clone = world.clone()
    assert clone["status"]["phase"] == "Succeeded"
    assert conditions(clone) == READY
    assert clone["status"]["restoreName"] == world.restore_name()
    assert exists(world, VIRTUAL_MACHINE_SNAPSHOTS, world.snapshot_name())
    assert exists(world, VIRTUAL_MACHINE_RESTORES, world.restore_name())

    world.edit(
        PERSISTENT_VOLUME_CLAIMS, "restored", lambda p: p.update(status={"phase": "Bound"}), status=True
    )
    world.run_clone()
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOTS) == []
    assert world.api.objects_of(VIRTUAL_MACHINE_RESTORES) == []
    assert "restoreName" not in world.clone()["status"]


def test_a_succeeded_clone_whose_restore_is_gone_still_finishes_its_cleanup() -> None:
    world = restore_created()
    complete_restore(world)
    add_target(world)
    world.set_clone_status(**{**world.clone()["status"], "phase": "Succeeded", "targetName": TARGET})
    world.api.delete(VIRTUAL_MACHINE_RESTORES, NS, world.restore_name())
    world.run_clone()

    assert "restoreName" not in world.clone()["status"]
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOTS) == []


def test_a_succeeded_clone_is_deleted_with_its_target_vm() -> None:
    world = restore_created()
    complete_restore(world)
    add_target(world)
    world.run_clone()
    world.api.delete(VIRTUAL_MACHINES, NS, TARGET)
    world.run_clone()
    assert not exists(world, VIRTUAL_MACHINE_CLONES, CLONE)


def test_an_unknown_target_kind_is_an_error() -> None:
    world = vm_world(target={"apiGroup": "example.com", "kind": "Other", "name": "x"})
    with pytest.raises(CloneError, match="target type is unknown: Other"):
        world.run_clone()
    assert world.clone()["status"]["phase"] == "SnapshotInProgress"
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOTS) == []


def test_an_unknown_source_kind_is_an_error_without_a_status() -> None:
    world = CloneWorld()
    world.add(VIRTUAL_MACHINE_CLONES, clone_manifest(source={"apiGroup": "x", "kind": "Other", "name": "y"}))
    with pytest.raises(CloneError, match="clone testclone is defined with an unknown source type Other"):
        world.run_clone()
    assert "status" not in world.clone()


# A snapshot as the source.


def test_a_missing_source_snapshot_keeps_the_clone_pending() -> None:
    world = CloneWorld()
    world.add(VIRTUAL_MACHINE_CLONES, clone_manifest(source=snapshot_source(SOURCE_SNAPSHOT)))
    world.run_clone()

    reason = f"Source doesnt exist: VirtualMachineSnapshot {NS}/{SOURCE_SNAPSHOT}"
    assert conditions(world.clone())[1] == ("Ready", "False", reason)
    assert world.events_of("SourceDoesNotExist") == [("Normal", reason)]


def test_a_clone_of_a_snapshot_restores_it_and_leaves_it_in_place() -> None:
    world = CloneWorld()
    vm = world.add(VIRTUAL_MACHINES, clone_vm_manifest())
    add_snapshot_with_content(world, SOURCE_SNAPSHOT, vm)
    world.add(VIRTUAL_MACHINE_CLONES, clone_manifest(source=snapshot_source(SOURCE_SNAPSHOT)))
    world.run_clone()

    clone = world.clone()
    assert clone["status"]["phase"] == "RestoreInProgress"
    assert "snapshotName" not in clone["status"]
    assert world.restore(world.restore_name())["spec"]["virtualMachineSnapshotName"] == SOURCE_SNAPSHOT

    complete_restore(world)
    add_target(world)
    world.run_clone()
    assert world.clone()["status"]["phase"] == "Succeeded"
    assert exists(world, VIRTUAL_MACHINE_SNAPSHOTS, SOURCE_SNAPSHOT)
    assert world.api.objects_of(VIRTUAL_MACHINE_RESTORES) == []


def test_a_source_snapshot_not_ready_waits_without_events() -> None:
    world = CloneWorld()
    vm = world.add(VIRTUAL_MACHINES, clone_vm_manifest())
    add_snapshot_with_content(world, SOURCE_SNAPSHOT, vm, ready=False)
    world.add(VIRTUAL_MACHINE_CLONES, clone_manifest(source=snapshot_source(SOURCE_SNAPSHOT)))
    world.run_clone()

    assert world.clone()["status"]["phase"] == "SnapshotInProgress"
    assert world.events.events == []


# Status writes and watches.


def test_a_pass_that_changes_nothing_writes_nothing() -> None:
    world = snapshot_taken(ready=False)
    world.clock.advance(60)
    writes = world.writes("update_status", VIRTUAL_MACHINE_CLONES)
    world.run_clone()
    assert world.writes("update_status", VIRTUAL_MACHINE_CLONES) == writes


def test_a_failing_status_write_is_retried() -> None:
    world = vm_world()
    world.sync()
    world.api.fail_with = ApiError(500, "InternalError", "etcd down")
    with pytest.raises(ApiError):
        world.clone_controller.reconcile(f"{NS}/{CLONE}")


def test_events_of_snapshots_restores_claims_and_vms_enqueue_their_clones() -> None:
    world = restore_created()
    key = f"{NS}/{CLONE}"
    controller = world.clone_controller
    snapshot, restore = world.snapshot(world.snapshot_name()), world.restore(world.restore_name())

    world.queued.clear()
    controller.on_snapshot_update(snapshot, snapshot)
    controller.on_restore_delete(restore)
    # Owned by the clone; the restore is also the one it waits for (the queue folds duplicates).
    assert world.queued == [key, key, key]

    world.queued.clear()
    controller.on_restore_add({**restore, "metadata": {**restore["metadata"], "ownerReferences": []}})
    assert world.queued == [key]  # the restore the clone waits for

    world.queued.clear()
    pvc = claim("restored", phase="Pending")
    pvc["metadata"]["annotations"] = {"restore.kubevirt.io/name": world.restore_name()}
    controller.on_pvc_update(pvc, pvc)
    world.set_clone_status(**{**world.clone()["status"], "phase": "Succeeded"})
    world.sync()
    controller.on_pvc_update(pvc, pvc)
    assert world.queued == []  # a Pending claim
    pvc["status"]["phase"] = "Bound"
    controller.on_pvc_update(pvc, pvc)
    assert world.queued == [key]

    world.queued.clear()
    source = VirtualMachine.from_dict(world.vm())
    controller.on_vm_update(source, source)
    assert world.queued == []  # only volumeSnapshotStatuses changes count
    changed = source.model_copy(deep=True)
    assert changed.status is not None
    changed.status.volume_snapshot_statuses = []
    controller.on_vm_update(source, changed)
    controller.on_vm_add(source)
    controller.on_vm_delete(source)  # the source, not a target: nothing
    target = VirtualMachine.from_dict(clone_vm_manifest(name=TARGET))
    controller.on_vm_delete(target)
    assert world.queued == [key, key, key]


def test_the_indexes_follow_kubevirts() -> None:
    indexers = clone_indexers()
    clone = clone_manifest()
    clone["status"] = {"phase": "SnapshotInProgress", "snapshotName": "s", "restoreName": "r"}
    assert list(indexers["vmSource"](clone)) == [f"{NS}/{VM}"]
    assert list(indexers["vmTarget"](clone)) == [f"{NS}/{TARGET}"]
    assert list(indexers["snapshotSource"](clone)) == []
    assert list(indexers["SnapshotInProgress"](clone)) == [f"{NS}/s"]
    assert list(indexers["RestoreInProgress"](clone)) == []
    snapshot_clone = clone_manifest(source=snapshot_source("snap"))
    assert list(indexers["snapshotSource"](snapshot_clone)) == [f"{NS}/snap"]
    assert list(indexers["vmSource"](snapshot_clone)) == []
