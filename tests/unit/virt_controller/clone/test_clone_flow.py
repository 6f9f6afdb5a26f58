"""A clone from start to end with the snapshot, content, VM-status and restore controllers running as
in virt-controller: the new VM is the source's copy, with the clone's filters and new identity."""

from __future__ import annotations

from typing import Any

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, VIRTUAL_MACHINES
from kubevirt.client.resources import (
    STORAGE_CLASSES,
    VIRTUAL_MACHINE_CLONES,
    VIRTUAL_MACHINE_RESTORES,
    VIRTUAL_MACHINE_SNAPSHOTS,
    VOLUME_SNAPSHOT_CLASSES,
)

from ..snapshot.world import VM, claim, cut_volume_snapshots, snapshot_class, storage_class
from .world import TARGET, CloneWorld, clone_manifest, clone_vm_manifest

NEW_MAC = "02:00:00:00:00:99"


def cluster() -> CloneWorld:
    world = CloneWorld()
    world.add(STORAGE_CLASSES, storage_class())
    world.add(VOLUME_SNAPSHOT_CLASSES, snapshot_class("csi-snapclass"))
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(VIRTUAL_MACHINES, clone_vm_manifest())
    world.run_vm_status()  # which volumes can be snapshotted
    return world


def take_snapshot(world: CloneWorld) -> None:
    """The snapshot and content controllers' passes until the clone's snapshot is ready."""
    name = world.snapshot_name()
    for _ in range(3):  # status, VM locked, content created
        world.run_snapshot(name)
    content = world.content_name(name)
    world.run_content(content)
    cut_volume_snapshots(world)
    world.run_content(content)
    world.run_snapshot(name)
    assert world.snapshot(name)["status"]["readyToUse"] is True


def run_restore(world: CloneWorld) -> None:
    """The restore controller's passes until it is complete, binding the claims it makes."""
    name = world.restore_name()
    for _ in range(8):
        world.run_restore(name)
        for pvc in world.api.objects_of(PERSISTENT_VOLUME_CLAIMS):
            if pvc.get("status", {}).get("phase") != "Bound":
                world.edit(
                    PERSISTENT_VOLUME_CLAIMS,
                    pvc["metadata"]["name"],
                    lambda p: p.update(status={"phase": "Bound"}),
                    status=True,
                )
        if world.restore(name).get("status", {}).get("complete"):
            return
    raise AssertionError(f"the restore did not complete: {world.restore(name).get('status')}")


def test_a_vm_is_cloned_through_a_snapshot_and_a_restore_which_are_then_removed() -> None:
    world = cluster()
    spec: dict[str, Any] = {
        "newMacAddresses": {"default": NEW_MAC},
        "newSMBiosSerial": "clone-serial",
        "labelFilters": ["app"],
    }
    world.add(VIRTUAL_MACHINE_CLONES, clone_manifest(**spec))

    world.run_clone()
    assert world.clone()["status"]["phase"] == "SnapshotInProgress"
    world.run_clone()  # the snapshot is not ready yet: nothing changes
    assert world.clone()["status"]["phase"] == "SnapshotInProgress"

    take_snapshot(world)
    world.run_clone()
    assert world.clone()["status"]["phase"] == "RestoreInProgress"

    run_restore(world)
    world.run_clone()

    clone = world.clone()
    assert clone["status"]["phase"] == "Succeeded"
    assert clone["status"]["targetName"] == TARGET
    clone_events = [reason for kind, _, _, reason, _ in world.events.events if kind == "VirtualMachineClone"]
    assert clone_events == [
        "SnapshotCreated",
        "SnapshotReady",
        "RestoreCreated",
        "RestoreReady",
        "TargetVMCreated",
        "PVCBound",
    ]

    source, target = world.vm(VM), world.vm(TARGET)
    assert target["metadata"]["labels"] == {"app": "testvm"}  # "team/a" is filtered out
    assert {"note/keep", "note/drop"} <= set(target["metadata"]["annotations"])  # no annotation filters
    assert target["spec"]["runStrategy"] == "Halted"
    domain = target["spec"]["template"]["spec"]["domain"]
    assert domain["devices"]["interfaces"][0]["macAddress"] == NEW_MAC
    assert domain["firmware"]["serial"] == "clone-serial"
    assert domain["firmware"]["uuid"] == ""  # virt-controller gives the new VM its own
    assert source["spec"]["template"]["spec"]["domain"]["firmware"]["uuid"] == "source-uuid"
    claim_name = target["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
    assert claim_name.startswith("restore-")
    assert claim_name != "disk-pvc"

    # The intermediate objects are gone; what the clone made stays.
    assert world.api.objects_of(VIRTUAL_MACHINE_SNAPSHOTS) == []
    assert world.api.objects_of(VIRTUAL_MACHINE_RESTORES) == []
    assert "snapshotName" not in clone["status"]
    assert "restoreName" not in clone["status"]
    assert world.get(PERSISTENT_VOLUME_CLAIMS, claim_name)["status"]["phase"] == "Bound"
