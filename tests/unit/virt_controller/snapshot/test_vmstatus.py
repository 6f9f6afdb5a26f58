"""VMs' ``status.volumeSnapshotStatuses``: one entry per template volume, in order, saying whether it
can be snapshotted and why not (KubeVirt's snapshot controller writes them, with KubeVirt's reasons)."""

from __future__ import annotations

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, VIRTUAL_MACHINES
from kubevirt.client.resources import VOLUME_SNAPSHOT_CLASSES
from kubevirt.controller import key_for
from kubevirt_api.core.v1 import VirtualMachine

from .world import (
    CLAIM,
    CLOUD_INIT,
    JSON,
    NS,
    STORAGE_CLASS,
    VM,
    World,
    claim,
    pvc_volume,
    snapshot_class,
    storage_world,
    vm_manifest,
)

CONTAINER_DISK: JSON = {"name": "containerdisk", "containerDisk": {"image": "quay.io/containerdisks/fedora"}}


def _statuses(world: World) -> list[JSON]:
    return world.vm()["status"]["volumeSnapshotStatuses"]  # type: ignore[no-any-return]


def test_each_volume_gets_an_entry_in_template_order() -> None:
    world = storage_world()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim("no-class", storage_class_name=None))
    world.add(PERSISTENT_VOLUME_CLAIMS, claim("unknown-class", storage_class_name="gone"))
    volumes = [
        pvc_volume("rootdisk", CLAIM),
        CONTAINER_DISK,
        pvc_volume("missing", "absent-pvc"),
        {"name": "dv", "dataVolume": {"name": "no-class"}},
        {"name": "dump", "memoryDump": {"claimName": "unknown-class"}},
        CLOUD_INIT,
    ]
    world.add(VIRTUAL_MACHINES, vm_manifest(volumes))
    world.run_vm_status()

    no_class = "No VolumeSnapshotClass: Volume snapshots are not configured for this StorageClass"
    assert _statuses(world) == [
        {"name": "rootdisk", "enabled": True},
        {
            "name": "containerdisk",
            "enabled": False,
            "reason": "Snapshot is not supported for this volumeSource type [containerdisk]",
        },
        {"name": "missing", "enabled": False, "reason": "PVC not found"},
        {"name": "dv", "enabled": False, "reason": f"{no_class} [] [dv]"},
        {"name": "dump", "enabled": False, "reason": f"{no_class} [gone] [dump]"},
        {
            "name": "cloudinit",
            "enabled": False,
            "reason": "Snapshot is not supported for this volumeSource type [cloudinit]",
        },
    ]


def test_ambiguous_snapshot_classes_are_the_reason() -> None:
    world = storage_world()
    world.add(VOLUME_SNAPSHOT_CLASSES, snapshot_class("second"))
    world.add(VIRTUAL_MACHINES, vm_manifest([pvc_volume("rootdisk", CLAIM)]))
    world.run_vm_status()
    assert _statuses(world) == [
        {
            "name": "rootdisk",
            "enabled": False,
            "reason": f"2 matching VolumeSnapshotClasses for {STORAGE_CLASS}",
        }
    ]


def test_without_the_snapshot_crds_no_volume_can_be_snapshotted() -> None:
    world = storage_world()
    world.snapshot_crds_installed = False
    world.add(VIRTUAL_MACHINES, vm_manifest([pvc_volume("rootdisk", CLAIM)]))
    world.run_vm_status()
    [entry] = _statuses(world)
    assert entry["enabled"] is False
    assert entry["reason"].endswith(f"[{STORAGE_CLASS}] [rootdisk]")


def test_an_unchanged_answer_is_not_written_again_and_a_new_class_changes_it() -> None:
    world = storage_world(with_snapshot_class=False)
    world.add(VIRTUAL_MACHINES, vm_manifest([pvc_volume("rootdisk", CLAIM)]))
    world.run_vm_status()
    assert _statuses(world)[0]["enabled"] is False
    writes = len(world.api.writes)
    world.run_vm_status()
    assert len(world.api.writes) == writes

    world.add(VOLUME_SNAPSHOT_CLASSES, snapshot_class("csi-snapclass"))
    world.run_vm_status()
    assert _statuses(world) == [{"name": "rootdisk", "enabled": True}]
    assert world.api.writes[-1][:2] == ("update_status", "virtualmachines")


def test_a_vm_without_volumes_has_no_entries() -> None:
    world = storage_world()
    world.add(VIRTUAL_MACHINES, vm_manifest([]))
    world.run_vm_status()
    assert "volumeSnapshotStatuses" not in (world.vm().get("status") or {})
    assert world.api.writes == []


def test_a_snapshot_class_or_claim_event_requeues_the_vms_using_it() -> None:
    world = storage_world()
    world.add(VIRTUAL_MACHINES, vm_manifest([pvc_volume("rootdisk", CLAIM)]))
    world.add(VIRTUAL_MACHINES, vm_manifest([CLOUD_INIT], name="other"))
    world.sync()
    controller = world.status_controller

    controller.enqueue_all()
    assert sorted(world.queued) == [key_for(NS, "other"), key_for(NS, VM)]

    world.queued.clear()
    pvc = claim()
    controller.on_pvc_add(pvc)
    assert world.queued == [key_for(NS, VM)]
    world.queued.clear()
    controller.on_pvc_update(pvc, pvc)  # nothing the answer depends on changed
    assert world.queued == []
    controller.on_pvc_update(pvc, claim(phase="Pending"))
    assert world.queued == [key_for(NS, VM)]

    world.queued.clear()
    controller.on_vm_update(VirtualMachine.from_dict(world.vm()), VirtualMachine.from_dict(world.vm()))
    assert world.queued == [key_for(NS, VM)]
