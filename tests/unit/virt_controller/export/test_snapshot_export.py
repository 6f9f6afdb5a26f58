"""Exporting a VirtualMachineSnapshot: claims restored from its VolumeSnapshots, owned by the export, served
under the backed-up claims' names, with ``VolumesCreated`` telling how far the restores got."""

from __future__ import annotations

from typing import Any

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, VIRTUAL_MACHINES
from kubevirt.client.resources import (
    CONFIG_MAPS,
    VIRTUAL_MACHINE_EXPORTS,
    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
    VIRTUAL_MACHINE_SNAPSHOTS,
    VOLUME_SNAPSHOTS,
)
from kubevirt.controller import key_for

from .world import CLAIM, EXPORT, NS, VM, World, export, vm

SNAPSHOT = "snap"
CONTENT = "snap-content"
RESTORED = f"{EXPORT}-{CLAIM}"


def snapshot(ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": SNAPSHOT},
        "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": VM}},
        "status": {"readyToUse": ready, "virtualMachineSnapshotContentName": CONTENT},
    }


def content(*, backups: bool = True) -> dict[str, Any]:
    backed_up = {
        "volumeName": "root",
        "persistentVolumeClaim": {
            "metadata": {
                "name": CLAIM,
                "labels": {"app": "db"},
                "annotations": {"pv.kubernetes.io/bind-completed": "yes", "keep": "me"},
            },
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "csi",
                "volumeMode": "Filesystem",
            },
        },
        "volumeSnapshotName": "vs-root",
    }
    return {
        "metadata": {"name": CONTENT},
        "spec": {
            "source": {"virtualMachine": vm()},
            "volumeBackups": [backed_up] if backups else [],
            "virtualMachineSnapshotName": SNAPSHOT,
        },
        "status": {"volumeSnapshotStatus": [{"volumeSnapshotName": "vs-root"}] if backups else []},
    }


def snapshot_export(world: World, *, ready: bool = True, backups: bool = True) -> None:
    world.add(VIRTUAL_MACHINES, vm())
    world.add(VIRTUAL_MACHINE_SNAPSHOTS, snapshot(ready))
    world.add(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, content(backups=backups))
    world.add(VOLUME_SNAPSHOTS, {"metadata": {"name": "vs-root"}, "status": {"restoreSize": "2Gi"}})
    world.add(VIRTUAL_MACHINE_EXPORTS, export("VirtualMachineSnapshot", SNAPSHOT))


def bind(world: World, name: str = RESTORED) -> None:
    world.edit(PERSISTENT_VOLUME_CLAIMS, name, lambda pvc: pvc.update(status={"phase": "Bound"}))


def test_the_snapshots_volumes_are_restored_into_claims_the_export_owns() -> None:
    world = World()
    snapshot_export(world)
    world.run()
    pvc = world.get(PERSISTENT_VOLUME_CLAIMS, RESTORED)
    [owner] = pvc["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"], owner["blockOwnerDeletion"]) == (
        "VirtualMachineExport",
        EXPORT,
        True,
        True,
    )
    ref = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "vs-root"}
    assert pvc["spec"]["dataSource"] == ref
    assert pvc["spec"]["dataSourceRef"] == ref
    assert pvc["spec"]["resources"]["requests"]["storage"] == "2Gi"  # at least the snapshot's size
    assert pvc["spec"]["storageClassName"] == "csi"
    assert pvc["metadata"]["labels"] == {"app": "db"}
    # A claim of one of the VM's claim volumes holds a disk image; provisioning annotations are dropped.
    assert pvc["metadata"]["annotations"] == {"keep": "me", "cdi.kubevirt.io/storage.contentType": "kubevirt"}

    conditions = world.conditions()
    assert (conditions["VolumesCreated"]["status"], conditions["VolumesCreated"]["reason"]) == (
        "False",
        "NotAllPVCsReady",
    )
    assert conditions["VolumesCreated"]["message"] == "Not all PVCs are ready"
    assert world.status()["virtualMachineName"] == VM


def test_bound_restored_claims_are_served_under_the_backed_up_names() -> None:
    world = World()
    snapshot_export(world)
    world.run()
    bind(world)
    world.run()
    volumes_created = world.conditions()["VolumesCreated"]
    assert (volumes_created["status"], volumes_created["reason"]) == ("True", "AllPVCsReady")
    assert world.env()["VOLUME0_EXPORT_PATH"] == f"/export-volumes/{RESTORED}"
    # The snapshot's VM manifests are served too.
    assert world.find(CONFIG_MAPS, f"exporter-vm-manifest-{EXPORT}") is not None

    world.set_pod_phase("Running")
    world.run()
    [volume] = world.status()["links"]["internal"]["volumes"]
    assert volume["name"] == CLAIM
    assert volume["formats"][0]["url"] == f"https://virt-export-{EXPORT}.{NS}.svc/volumes/{RESTORED}/disk.img"


def test_a_snapshot_not_ready_to_use_makes_the_export_wait() -> None:
    world = World()
    snapshot_export(world, ready=False)
    world.run()
    assert world.objects(PERSISTENT_VOLUME_CLAIMS) == []
    ready = world.conditions()["Ready"]
    assert (ready["reason"], ready["message"]) == (
        "InUse",
        f"VirtualMachineSnapshot {NS}/{SNAPSHOT} is not ready to use",
    )


def test_a_snapshot_without_volumes_is_skipped() -> None:
    world = World()
    snapshot_export(world, backups=False)
    world.run()
    conditions = world.conditions()
    message = f"VirtualMachineSnapshot {NS}/{SNAPSHOT} does not contain any volume snapshots"
    assert (conditions["VolumesCreated"]["reason"], conditions["VolumesCreated"]["message"]) == (
        "VMSnapshotNoVolumes",
        message,
    )
    assert (conditions["Ready"]["reason"], world.status()["phase"]) == ("Initializing", "Skipped")
    assert world.pod() is None


def test_a_missing_snapshot_is_reported() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_EXPORTS, export("VirtualMachineSnapshot", "gone"))
    world.run()
    ready = world.conditions()["Ready"]
    assert ready["reason"] == "Initializing"
    assert world.status()["virtualMachineName"] == ""


def test_snapshot_events_enqueue_its_exports() -> None:
    world = World()
    snapshot_export(world)
    world.sync()
    [stored] = world.snapshots.list()
    world.controller.on_vmsnapshot_update(stored, stored)
    assert world.queued == [key_for(NS, EXPORT)]
