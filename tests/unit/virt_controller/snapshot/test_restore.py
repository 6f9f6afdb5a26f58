"""The VirtualMachineRestore controller, pass by pass, against an in-memory API: claims restored from
VolumeSnapshots, the target VM rewritten (or created), the lock, readiness policies and deletion, with
KubeVirt's names, condition reasons and events."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from kubevirt.client import (
    PERSISTENT_VOLUME_CLAIMS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    NotFoundError,
    Resource,
)
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    DATA_VOLUMES,
    STORAGE_CLASSES,
    VIRTUAL_MACHINE_RESTORES,
    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
    VIRTUAL_MACHINE_SNAPSHOTS,
    VOLUME_SNAPSHOTS,
)
from kubevirt.controller import key_for
from kubevirt.virt_controller.watch.common import format_time
from kubevirt.virt_controller.watch.firmware import calculate_legacy_uuid
from kubevirt.virt_controller.watch.snapshot.common import RESTORE_FINALIZER
from kubevirt.virt_controller.watch.snapshot.restore import (
    RESTORE_TARGET_INDEX,
    TargetLockedError,
    restore_target_index,
)
from kubevirt.virt_controller.watch.snapshot.restore_spec import RestoreError, apply_vm_patches
from kubevirt.virt_controller.watch.snapshot.restore_status import (
    GRACE_PERIOD_EXCEEDED_ERROR,
    RESTORE_TO_EXISTING_TARGET_ERROR,
    STOP_TARGET_MESSAGE,
    TARGET_NOT_READY_FAILURE_MESSAGE,
    VMI_EXISTS_EVENT_MESSAGE,
    WAIT_EVENTUALLY_MESSAGE,
    WAIT_GRACE_PERIOD_MESSAGE,
)
from kubevirt_testing.fake_kube_api import FakeKubeApi

from .world import (
    CLAIM,
    CLOUD_INIT,
    NS,
    RESTORE,
    SNAPSHOT,
    VM,
    World,
    claim,
    conditions,
    pvc_volume,
    storage_class,
    vm_manifest,
    vm_snapshot,
    vmi_manifest,
)

JSON = dict[str, Any]
VOLUME_SNAPSHOT = "vmsnapshot-snapuid-volume-rootdisk"
CONTENT = "vmsnapshot-content-snapuid"
MAC = "02:00:00:00:00:01"


class NoCdiApi(FakeKubeApi):
    """An API server without CDI's DataVolume kind: every request for it is answered NotFound."""

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        self._no_data_volumes(resource)
        return super().get(resource, namespace, name)

    def create(
        self, resource: Resource, namespace: str | None, body: Mapping[str, Any], *, dry_run: bool = False
    ) -> JSON:
        self._no_data_volumes(resource)
        return super().create(resource, namespace, body, dry_run=dry_run)

    @staticmethod
    def _no_data_volumes(resource: Resource) -> None:
        if resource.plural == DATA_VOLUMES.plural:
            raise NotFoundError(404, "NotFound", "the server could not find the requested resource")


# Objects.


def restore_vm_manifest() -> JSON:
    """The VM restored: a claim and a cloud-init volume, running Always, with a pod network whose MAC
    a restore's patches can rewrite."""
    vm = vm_manifest([pvc_volume("rootdisk", CLAIM), CLOUD_INIT])
    vm["spec"]["runStrategy"] = "Always"
    template = vm["spec"]["template"]["spec"]
    template["domain"]["devices"]["interfaces"] = [{"name": "default", "masquerade": {}, "macAddress": MAC}]
    template["networks"] = [{"name": "default", "pod": {}}]
    return vm


def source_claim(vm: JSON) -> JSON:
    """The claim as the snapshot content keeps it."""
    pvc = claim()
    meta = pvc["metadata"]
    meta["labels"]["persistent-state-for"] = VM
    meta["annotations"] = {
        "pv.kubernetes.io/bind-completed": "yes",
        "volume.kubernetes.io/selected-node": "node1",
        "cdi.kubevirt.io/storage.import.endpoint": "http://example",
        "cdi.kubevirt.io/storage.contentType": "kubevirt",
        "example.com/keep": "kept",
    }
    meta["ownerReferences"] = [
        {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": VM, "uid": vm["metadata"]["uid"]}
    ]
    pvc["spec"].update(
        volumeMode="Filesystem",
        volumeName="pv-1",
        dataSource={"kind": "PersistentVolumeClaim", "name": "golden"},
    )
    return pvc


def restore_manifest(target: str = VM, **spec: Any) -> JSON:
    return {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineRestore",
        "metadata": {"name": RESTORE, "namespace": NS},
        "spec": {
            "target": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": target},
            "virtualMachineSnapshotName": SNAPSHOT,
            **spec,
        },
    }


def restore_world(
    *, target_exists: bool = True, restore_size: str = "2Gi", cdi: bool = True, **spec: Any
) -> World:
    """A VM (kept as the snapshot saw it, in a ready snapshot and content), its VolumeSnapshot, a storage
    class, and a restore of it (to the same VM, or to ``new-vm`` when ``target_exists`` is false)."""
    world = World(None if cdi else NoCdiApi())
    vm = world.add(VIRTUAL_MACHINES, restore_vm_manifest())
    snapshot_vm = {"metadata": copy.deepcopy(vm["metadata"]), "spec": copy.deepcopy(vm["spec"])}
    if not target_exists:
        world.api.delete(VIRTUAL_MACHINES, NS, VM)
    world.add(STORAGE_CLASSES, {**storage_class(), "volumeBindingMode": "Immediate"})
    ready = {
        "sourceUID": vm["metadata"]["uid"],
        "phase": "Succeeded",
        "readyToUse": True,
        "virtualMachineSnapshotContentName": CONTENT,
    }
    world.add(VIRTUAL_MACHINE_SNAPSHOTS, {**vm_snapshot(), "status": ready})
    world.add(
        VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
        {
            "metadata": {"name": CONTENT, "namespace": NS},
            "spec": {
                "virtualMachineSnapshotName": SNAPSHOT,
                "source": {"virtualMachine": snapshot_vm},
                "volumeBackups": [
                    {
                        "volumeName": "rootdisk",
                        "persistentVolumeClaim": source_claim(vm),
                        "volumeSnapshotName": VOLUME_SNAPSHOT,
                    }
                ],
            },
            "status": {"readyToUse": True},
        },
    )
    world.add(
        VOLUME_SNAPSHOTS,
        {
            "metadata": {"name": VOLUME_SNAPSHOT, "namespace": NS},
            "status": {"readyToUse": True, "restoreSize": restore_size},
        },
    )
    world.add(VIRTUAL_MACHINE_RESTORES, restore_manifest(VM if target_exists else "new-vm", **spec))
    return world


def start(world: World) -> JSON:
    """A running VMI of the target."""
    return world.add(VIRTUAL_MACHINE_INSTANCES, vmi_manifest())


def bind(world: World, name: str, phase: str = "Bound") -> None:
    world.edit(PERSISTENT_VOLUME_CLAIMS, name, lambda pvc: pvc.update(status={"phase": phase}), status=True)


def restored_claim_name(world: World) -> str:
    return f"restore-{world.restore()['metadata']['uid']}-rootdisk"


def reach_claim(world: World) -> str:
    """Passes up to the restored claim's creation; returns its name."""
    world.run_restore()  # status
    world.run_restore()  # owner, finalizer, lock, restores listed
    world.run_restore()  # the claim created
    return restored_claim_name(world)


# Status, owner, lock.


def test_a_new_restore_is_initialised_through_the_status_subresource() -> None:
    world = restore_world()
    assert world.run_restore() is None
    restore = world.restore()
    assert restore["status"]["complete"] is False
    assert conditions(restore) == [
        ("Progressing", "True", "Initializing VirtualMachineRestore"),
        ("Ready", "False", "Initializing VirtualMachineRestore"),
    ]
    assert all("message" not in c for c in restore["status"]["conditions"])
    assert world.writes("update_status", VIRTUAL_MACHINE_RESTORES) == 1
    assert world.writes("update", VIRTUAL_MACHINE_RESTORES) == 0


def test_the_target_owns_the_restore_which_locks_it_and_lists_its_claims() -> None:
    world = restore_world()
    world.run_restore()
    world.run_restore()
    restore, vm = world.restore(), world.vm()
    assert restore["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "name": VM,
            "uid": vm["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert restore["metadata"]["finalizers"] == [RESTORE_FINALIZER]
    assert vm["status"]["restoreInProgress"] == RESTORE
    assert restore["status"]["restores"] == [
        {
            "volumeName": "rootdisk",
            "persistentVolumeClaim": f"restore-{restore['metadata']['uid']}-rootdisk",
            "volumeSnapshotName": VOLUME_SNAPSHOT,
        }
    ]
    assert conditions(restore) == [
        ("Progressing", "True", "Creating new PVCs"),
        ("Ready", "False", "Waiting for new PVCs"),
    ]
    assert not world.api.objects_of(PERSISTENT_VOLUME_CLAIMS)


def test_another_restore_holding_the_vm_blocks_without_a_report() -> None:
    world = restore_world()
    world.run_restore()
    world.edit(VIRTUAL_MACHINES, VM, lambda vm: vm.update(status={"restoreInProgress": "other"}), status=True)
    before = world.restore()["status"]
    with pytest.raises(TargetLockedError, match="vm restore other in progress"):
        world.run_restore()
    assert world.restore()["status"] == before
    assert world.events.events == []


# The restored claim.


def test_the_claim_is_created_from_the_volume_snapshot_as_kubevirt_names_and_labels_it() -> None:
    world = restore_world()
    name = reach_claim(world)
    restore, vm = world.restore(), world.vm()
    pvc = world.get(PERSISTENT_VOLUME_CLAIMS, name)
    assert pvc["metadata"]["labels"] == {
        "app": "disk",
        "restore.kubevirt.io/source-vm-name": VM,
        "restore.kubevirt.io/source-vm-namespace": NS,
    }
    assert pvc["metadata"]["annotations"] == {
        "cdi.kubevirt.io/storage.contentType": "kubevirt",
        "example.com/keep": "kept",
        "restore.kubevirt.io/name": RESTORE,
        "restore.kubevirt.io/lastRestoreUID": f"{RESTORE}-{restore['metadata']['uid']}",
    }
    source = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": VOLUME_SNAPSHOT}
    assert pvc["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "2Gi"}},
        "storageClassName": "standard",
        "volumeMode": "Filesystem",
        "dataSource": source,
        "dataSourceRef": source,
    }
    assert [ref["uid"] for ref in pvc["metadata"]["ownerReferences"]] == [vm["metadata"]["uid"]]
    assert conditions(restore) == [
        ("Progressing", "True", "Creating new PVCs"),
        ("Ready", "False", "Waiting for new PVCs"),
    ]


def test_a_restore_size_smaller_than_the_claim_keeps_the_claims_size() -> None:
    world = restore_world(restore_size="512Mi")
    name = reach_claim(world)
    assert world.get(PERSISTENT_VOLUME_CLAIMS, name)["spec"]["resources"] == {"requests": {"storage": "1Gi"}}


def test_overrides_name_and_label_the_claim() -> None:
    override = {
        "volumeName": "rootdisk",
        "restoreName": "my-disk",
        "labels": {"app": "overridden"},
        "annotations": {"restore.kubevirt.io/name": "mine"},
    }
    world = restore_world(volumeRestoreOverrides=[override])
    world.run_restore()
    world.run_restore()
    world.run_restore()
    pvc = world.get(PERSISTENT_VOLUME_CLAIMS, "my-disk")
    assert pvc["metadata"]["labels"]["app"] == "overridden"
    assert pvc["metadata"]["annotations"]["restore.kubevirt.io/name"] == "mine"


def test_in_place_replaces_the_original_claim() -> None:
    world = restore_world(volumeRestorePolicy="InPlace")
    world.add(
        PERSISTENT_VOLUME_CLAIMS, {"metadata": {"name": CLAIM, "namespace": NS}, "status": {"phase": "Bound"}}
    )
    original_uid = world.get(PERSISTENT_VOLUME_CLAIMS, CLAIM)["metadata"]["uid"]
    world.run_restore()
    world.run_restore()
    assert world.restore()["status"]["restores"][0]["persistentVolumeClaim"] == CLAIM
    world.run_restore()  # the original claim is deleted
    assert not world.api.objects_of(PERSISTENT_VOLUME_CLAIMS)
    world.run_restore()  # and restored under its name
    pvc = world.get(PERSISTENT_VOLUME_CLAIMS, CLAIM)
    assert pvc["metadata"]["uid"] != original_uid
    assert pvc["spec"]["dataSource"]["name"] == VOLUME_SNAPSHOT


def test_a_pending_claim_of_an_immediate_class_is_waited_for() -> None:
    world = restore_world()
    name = reach_claim(world)
    bind(world, name, "Pending")
    world.run_restore()
    assert "lastRestoreUID" not in str(world.vm()["metadata"].get("annotations"))
    bind(world, name, "Lost")
    with pytest.raises(RestoreError, match=f'PVC {NS}/{name} in status "Lost"'):
        world.run_restore()


def test_a_missing_volume_snapshot_is_reported_and_retried() -> None:
    world = restore_world()
    world.snapshot_crds_installed = False  # no VolumeSnapshot CRD: every VolumeSnapshot is missing
    world.run_restore()
    world.run_restore()
    message = f"missing volumeSnapshot {VOLUME_SNAPSHOT}"
    with pytest.raises(RestoreError, match=message):
        world.run_restore()
    assert conditions(world.restore()) == [("Progressing", "False", message), ("Ready", "False", message)]
    assert world.events.events[-1] == (
        "VirtualMachineRestore",
        RESTORE,
        "Warning",
        "VirtualMachineRestoreError",
        f"VirtualMachineRestore encountered error {message}",
    )
    assert world.vm()["status"]["restoreInProgress"] == RESTORE  # the lock stays


# The target's spec and completion.


def test_the_existing_vm_gets_the_snapshot_spec_then_the_restore_completes() -> None:
    world = restore_world()
    name = reach_claim(world)
    bind(world, name)
    world.run_restore()
    restore, vm = world.restore(), world.vm()
    spec = vm["spec"]["template"]["spec"]
    assert spec["volumes"][0] == {"name": "rootdisk", "persistentVolumeClaim": {"claimName": name}}
    assert spec["volumes"][1]["name"] == "cloudinit"
    assert vm["metadata"]["annotations"]["restore.kubevirt.io/lastRestoreUID"] == (
        f"{RESTORE}-{restore['metadata']['uid']}"
    )
    assert vm["spec"]["runStrategy"] == "Always"  # an existing VM keeps its run strategy
    assert spec["domain"]["firmware"]["uuid"] == calculate_legacy_uuid(VM)
    assert conditions(restore) == [
        ("Progressing", "True", "Updating target spec"),
        ("Ready", "False", "Waiting for target update"),
    ]

    world.clock.advance(30)
    world.run_restore()
    restore, vm = world.restore(), world.vm()
    assert restore["status"]["complete"] is True
    assert restore["status"]["restoreTime"] == format_time(world.clock())
    assert conditions(restore) == [
        ("Progressing", "False", "Operation complete"),
        ("Ready", "True", "Operation complete"),
    ]
    assert "restoreInProgress" not in vm["status"]
    assert world.events.events[-1] == (
        "VirtualMachineRestore",
        RESTORE,
        "Normal",
        "VirtualMachineRestoreComplete",
        f"Successfully completed VirtualMachineRestore {RESTORE}",
    )
    writes = len(world.api.writes)
    world.run_restore()  # complete: nothing more to do
    assert len(world.api.writes) == writes


def test_a_new_vm_is_created_halted_with_the_patches_and_takes_its_claims() -> None:
    patches = [
        '{"op": "replace", "path": "/spec/template/spec/domain/devices/interfaces/0/macAddress", '
        '"value": "02:00:00:00:00:99"}',
        '{"op": "add", "path": "/metadata/labels/restored", "value": "yes"}',
    ]
    world = restore_world(target_exists=False, patches=patches)
    name = reach_claim(world)
    pvc = world.get(PERSISTENT_VOLUME_CLAIMS, name)
    assert "ownerReferences" not in pvc["metadata"]
    assert pvc["metadata"]["annotations"]["restore.kubevirt.io/owned-by-vm"] == RESTORE
    bind(world, name)
    world.run_restore()

    vm = world.vm("new-vm")
    assert vm["spec"]["runStrategy"] == "Halted"
    assert vm["metadata"]["labels"] == {"app": VM, "restored": "yes"}
    interface = vm["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"][0]
    assert interface["macAddress"] == "02:00:00:00:00:99"
    assert "firmware" not in vm["spec"]["template"]["spec"]["domain"]  # another name: no legacy UUID
    pvc = world.get(PERSISTENT_VOLUME_CLAIMS, name)
    assert [ref["uid"] for ref in pvc["metadata"]["ownerReferences"]] == [vm["metadata"]["uid"]]
    assert "restore.kubevirt.io/owned-by-vm" not in pvc["metadata"]["annotations"]

    world.run_restore()
    restore = world.restore()
    assert restore["status"]["complete"] is True
    assert [ref["uid"] for ref in restore["metadata"]["ownerReferences"]] == [vm["metadata"]["uid"]]
    assert "restoreInProgress" not in world.vm("new-vm").get("status", {})


def test_a_patch_that_does_not_decode_is_reported() -> None:
    world = restore_world(target_exists=False, patches=["{not json"])
    name = reach_claim(world)
    bind(world, name)
    with pytest.raises(RestoreError, match="error patching VM new-vm: cannot decode vm patches"):
        world.run_restore()
    assert conditions(world.restore())[0][2].startswith("error patching VM new-vm: cannot decode vm patches")
    assert not world.api.objects_of(VIRTUAL_MACHINES)


def test_instancetype_revisions_are_restored_under_the_new_vms_name() -> None:
    world = restore_world(target_exists=False)
    snapshot_revision = f"{SNAPSHOT}-small-v1beta1-uid-1"
    world.add(
        CONTROLLER_REVISIONS,
        {
            "metadata": {"name": snapshot_revision, "namespace": NS, "labels": {"kind": "it"}},
            "data": {"kind": "VirtualMachineInstancetype"},
            "revision": 0,
        },
    )

    def pin(content: JSON) -> None:
        content["spec"]["source"]["virtualMachine"]["spec"]["instancetype"] = {
            "name": "small",
            "revisionName": snapshot_revision,
        }

    world.edit(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, CONTENT, pin)
    name = reach_claim(world)
    bind(world, name)
    world.run_restore()
    vm = world.vm("new-vm")
    restored = "new-vm-small-v1beta1-uid-1"
    assert vm["spec"]["instancetype"]["revisionName"] == restored
    revision = world.get(CONTROLLER_REVISIONS, restored)
    assert revision["metadata"]["labels"] == {"kind": "it"}
    assert revision["data"] == {"kind": "VirtualMachineInstancetype"}
    assert [ref["uid"] for ref in revision["metadata"]["ownerReferences"]] == [vm["metadata"]["uid"]]


def use_data_volume_template(world: World) -> None:
    """The snapshot VM's disk comes from a DataVolume template (``disk-dv``), as does the live VM's."""

    def templated(vm: JSON) -> None:
        vm["spec"]["dataVolumeTemplates"] = [
            {"metadata": {"name": "disk-dv"}, "spec": {"source": {"blank": {}}, "storage": {}}}
        ]
        vm["spec"]["template"]["spec"]["volumes"][0] = {"name": "rootdisk", "dataVolume": {"name": "disk-dv"}}

    world.edit(
        VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, CONTENT, lambda c: templated(c["spec"]["source"]["virtualMachine"])
    )
    world.edit(VIRTUAL_MACHINES, VM, templated)


def test_a_templated_data_volume_is_restored_and_the_old_one_deleted() -> None:
    world = restore_world()
    use_data_volume_template(world)
    world.add(DATA_VOLUMES, {"metadata": {"name": "disk-dv", "namespace": NS}})
    name = reach_claim(world)
    bind(world, name)
    world.run_restore()  # the claim is handed to the DataVolume to come
    pvc = world.get(PERSISTENT_VOLUME_CLAIMS, name)
    assert pvc["metadata"]["annotations"]["cdi.kubevirt.io/storage.populatedFor"] == name
    assert "ownerReferences" not in pvc["metadata"]
    assert world.restore()["status"]["restores"][0]["dataVolumeName"] == name

    # The DataVolume is created over it, the old one listed for deletion; no informer tells when the new
    # one is ready, so the restore looks again after a while.
    assert world.run_restore() == 5.0
    dv = world.get(DATA_VOLUMES, name)
    assert dv["metadata"]["annotations"] == {
        "cdi.kubevirt.io/allowClaimAdoption": "true",
        "restore.kubevirt.io/name": RESTORE,
        "cdi.kubevirt.io/storage.prePopulated": "true",
    }
    assert dv["spec"] == {"source": {"blank": {}}, "storage": {}}
    assert world.restore()["status"]["deletedDataVolumes"] == ["disk-dv"]

    assert world.run_restore() == 5.0  # waits for the DataVolume
    assert "lastRestoreUID" not in str(world.vm()["metadata"].get("annotations"))
    world.edit(DATA_VOLUMES, name, lambda d: d.update(status={"phase": "Succeeded"}), status=True)
    world.run_restore()
    vm = world.vm()
    assert vm["spec"]["dataVolumeTemplates"][0]["metadata"]["name"] == name
    assert vm["spec"]["template"]["spec"]["volumes"][0] == {"name": "rootdisk", "dataVolume": {"name": name}}
    world.run_restore()
    assert world.restore()["status"]["complete"] is True
    assert not any(dv["metadata"]["name"] == "disk-dv" for dv in world.api.objects_of(DATA_VOLUMES))


def test_without_cdi_the_restore_goes_on_without_data_volumes() -> None:
    world = restore_world(cdi=False)
    use_data_volume_template(world)
    name = reach_claim(world)
    bind(world, name)
    world.run_restore()
    # No DataVolume API: nothing created, the old template listed for deletion.
    assert world.run_restore() is None
    world.run_restore()
    assert world.vm()["spec"]["template"]["spec"]["volumes"][0] == {
        "name": "rootdisk",
        "dataVolume": {"name": name},
    }
    world.run_restore()
    assert world.restore()["status"]["complete"] is True


# Snapshot and target checks.


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (None, f"VMSnapshot {NS}/{SNAPSHOT} does not exist"),
        ({"readyToUse": False}, f"VMSnapshot {NS}/{SNAPSHOT} not ready"),
        ({"phase": "Failed"}, f"VMSnapshot {NS}/{SNAPSHOT} failed and is invalid to use"),
    ],
)
def test_an_unusable_snapshot_is_reported_and_retried(change: JSON | None, message: str) -> None:
    world = restore_world()
    if change is None:
        world.api.delete(VIRTUAL_MACHINE_SNAPSHOTS, NS, SNAPSHOT)
    else:
        world.edit(VIRTUAL_MACHINE_SNAPSHOTS, SNAPSHOT, lambda s: s["status"].update(change), status=True)
    world.run_restore()
    with pytest.raises(RestoreError, match=message):
        world.run_restore()
    restore = world.restore()
    assert conditions(restore) == [("Progressing", "False", message), ("Ready", "False", message)]
    assert world.events.events == [
        (
            "VirtualMachineRestore",
            RESTORE,
            "Warning",
            "VirtualMachineRestoreError",
            f"VirtualMachineRestore encountered error {message}",
        )
    ]
    assert "restoreInProgress" not in world.vm().get("status", {})


def test_restoring_onto_another_existing_vm_is_refused() -> None:
    world = restore_world()
    world.api.delete(VIRTUAL_MACHINES, NS, VM)
    world.add(VIRTUAL_MACHINES, restore_vm_manifest())  # same name, another uid
    world.run_restore()
    with pytest.raises(RestoreError, match=RESTORE_TO_EXISTING_TARGET_ERROR):
        world.run_restore()
    assert conditions(world.restore())[0] == ("Progressing", "False", RESTORE_TO_EXISTING_TARGET_ERROR)


# targetReadinessPolicy.


def test_wait_grace_period_waits_then_fails_at_the_deadline() -> None:
    world = restore_world()
    start(world)
    world.run_restore()
    assert world.run_restore() == 300.0  # looked at again at the deadline
    assert conditions(world.restore()) == [
        ("Progressing", "False", WAIT_GRACE_PERIOD_MESSAGE),
        ("Ready", "False", WAIT_GRACE_PERIOD_MESSAGE),
    ]
    assert world.events.events[-1][3:] == ("RestoreTargetNotReady", VMI_EXISTS_EVENT_MESSAGE)
    assert WAIT_GRACE_PERIOD_MESSAGE.endswith("or the operation will fail after 5m0s")

    world.clock.advance(301)
    assert world.run_restore() is None
    assert conditions(world.restore()) == [
        ("Progressing", "False", GRACE_PERIOD_EXCEEDED_ERROR),
        ("Ready", "False", GRACE_PERIOD_EXCEEDED_ERROR),
        ("Failure", "True", GRACE_PERIOD_EXCEEDED_ERROR),
    ]
    assert world.events.events[-1][2:] == (
        "Warning",
        "Operation failed",
        f"VirtualMachineRestore failed {GRACE_PERIOD_EXCEEDED_ERROR}",
    )
    world.api.delete(VIRTUAL_MACHINE_INSTANCES, NS, VM)
    writes = len(world.api.writes)
    world.run_restore()  # failed for good, even once the VM is stopped
    assert len(world.api.writes) == writes


def test_wait_eventually_waits_without_a_deadline_and_proceeds_once_stopped() -> None:
    world = restore_world(targetReadinessPolicy="WaitEventually")
    start(world)
    world.run_restore()
    assert world.run_restore() is None
    world.clock.advance(3600)
    world.run_restore()
    assert conditions(world.restore()) == [
        ("Progressing", "False", WAIT_EVENTUALLY_MESSAGE),
        ("Ready", "False", WAIT_EVENTUALLY_MESSAGE),
    ]
    world.api.delete(VIRTUAL_MACHINE_INSTANCES, NS, VM)
    world.run_restore()
    assert world.vm()["status"]["restoreInProgress"] == RESTORE
    assert conditions(world.restore())[0] == ("Progressing", "True", "Creating new PVCs")


def test_fail_immediate_fails_for_good() -> None:
    world = restore_world(targetReadinessPolicy="FailImmediate")
    start(world)
    world.run_restore()
    world.run_restore()
    assert conditions(world.restore())[2] == ("Failure", "True", TARGET_NOT_READY_FAILURE_MESSAGE)
    assert world.events.events[-1][3] == "Operation failed"


@pytest.mark.parametrize(
    ("run_strategy", "expected"),
    [("Always", {"runStrategy": "Halted"}), ("Manual", {"runStrategy": "Manual"})],
)
def test_stop_target_stops_the_vm(run_strategy: str, expected: JSON) -> None:
    world = restore_world(targetReadinessPolicy="StopTarget")
    world.edit(VIRTUAL_MACHINES, VM, lambda vm: vm["spec"].update(runStrategy=run_strategy))
    vmi = start(world)
    world.run_restore()
    world.run_restore()
    vm = world.vm()
    assert vm["spec"]["runStrategy"] == expected["runStrategy"]
    if run_strategy == "Manual":
        assert vm["status"]["stateChangeRequests"] == [{"action": "Stop", "uid": vmi["metadata"]["uid"]}]
    assert conditions(world.restore()) == [
        ("Progressing", "False", STOP_TARGET_MESSAGE),
        ("Ready", "False", STOP_TARGET_MESSAGE),
    ]
    assert world.events.events[-1][3:] == ("RestoreTargetNotReady", STOP_TARGET_MESSAGE)


def test_stop_target_on_a_halted_vm_reports_virt_apis_refusal() -> None:
    world = restore_world(targetReadinessPolicy="StopTarget")
    world.edit(VIRTUAL_MACHINES, VM, lambda vm: vm["spec"].update(runStrategy="Halted"))
    start(world)
    world.run_restore()
    with pytest.raises(RestoreError, match="Halted only supports manual stop requests"):
        world.run_restore()
    assert conditions(world.restore())[0][2].startswith(
        "Operation cannot be fulfilled on virtualmachine.kubevirt.io"
    )


def test_an_unknown_readiness_policy_is_retried_without_a_report() -> None:
    world = restore_world(targetReadinessPolicy="Sometimes")
    start(world)
    world.run_restore()
    before = world.restore()["status"]
    with pytest.raises(ValueError, match="unknown targetReadinessPolicy: Sometimes"):
        world.run_restore()
    assert world.restore()["status"] == before


# Deletion.


def test_a_deleted_restore_unlocks_the_vm_then_drops_its_finalizer() -> None:
    world = restore_world()
    world.run_restore()
    world.run_restore()
    assert world.vm()["status"]["restoreInProgress"] == RESTORE
    world.edit(
        VIRTUAL_MACHINE_RESTORES,
        RESTORE,
        lambda r: r["metadata"].update(deletionTimestamp=format_time(world.clock())),
    )
    world.run_restore()
    assert "restoreInProgress" not in world.vm()["status"]
    assert conditions(world.restore()) == [
        ("Progressing", "False", "VM restore is deleting"),
        ("Ready", "False", "VM restore is deleting"),
    ]
    assert world.restore()["metadata"]["finalizers"] == [RESTORE_FINALIZER]
    world.run_restore()
    assert world.restore()["metadata"]["finalizers"] == []


# Watches.


def test_claims_and_vms_enqueue_their_restores() -> None:
    world = restore_world()
    world.sync()
    controller = world.restore_controller
    controller.on_pvc_add({"metadata": {"name": "x", "namespace": NS}})
    controller.on_pvc_update(
        {}, {"metadata": {"name": "x", "namespace": NS, "annotations": {"restore.kubevirt.io/name": "r"}}}
    )
    controller.on_vm_update(world.vms.get_by_key(key_for(NS, VM)), world.vms.get_by_key(key_for(NS, VM)))  # type: ignore[arg-type]
    controller.on_vm_delete(world.vms.get_by_key(key_for(NS, VM)))  # type: ignore[arg-type]
    assert world.queued == [key_for(NS, "r"), key_for(NS, RESTORE)]
    assert list(restore_target_index(restore_manifest())) == [key_for(NS, VM)]
    other_group = restore_manifest()
    other_group["spec"]["target"]["apiGroup"] = "example.com"
    assert list(restore_target_index(other_group)) == []
    assert world.restores.by_index(RESTORE_TARGET_INDEX, key_for(NS, VM))


@pytest.mark.parametrize(
    "patch",
    [
        '{"op": "add", "path": "/metadata/ownerReferences", "value": []}',
        '{"op": "add", "\\u0070ath": "/metadata/finalizers", "value": ["x"]}',
        '{"op": "move", "from": "/metadata/name", "path": "/spec/x"}',
    ],
)
def test_a_patch_outside_spec_labels_and_annotations_is_refused(patch: str) -> None:
    vm = {"metadata": {"name": "vm", "namespace": "default"}, "spec": {"template": {"spec": {}}}}
    with pytest.raises(RestoreError, match="patching is valid only for elements under /spec/ only"):
        apply_vm_patches(vm, [patch])
