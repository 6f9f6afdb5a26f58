"""The VirtualMachineSnapshotContent controller (KubeVirt's updateVMSnapshotContent): one VolumeSnapshot
per backed-up claim, the guest frozen around them when an agent can do it, and the content's status
aggregated from the VolumeSnapshots'."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES, ApiError
from kubevirt.client.resources import (
    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
    VIRTUAL_MACHINE_SNAPSHOTS,
    VOLUME_SNAPSHOT_CLASSES,
    VOLUME_SNAPSHOTS,
)
from kubevirt.controller import key_for
from kubevirt.virt_controller.watch.common import format_time
from kubevirt.virt_controller.watch.snapshot.common import CONTENT_FINALIZER, SNAPSHOT_FINALIZER
from kubevirt.virt_controller.watch.snapshot.content import ContentError
from kubevirt.virt_controller.watch.snapshot.freezer import SubresourceFreezer

from .world import (
    CLAIM,
    CLOUD_INIT,
    JSON,
    NS,
    SNAPSHOT,
    VM,
    World,
    cut_volume_snapshots,
    lock_vm,
    pvc_volume,
    snapshot_world,
    vm_manifest,
)


def _content_world(**options: Any) -> tuple[World, str]:
    """A locked VM and the content its snapshot wrote (no VolumeSnapshot yet)."""
    world = snapshot_world(**options)
    lock_vm(world)
    world.run_snapshot()
    return world, world.content_name()


def _volume_snapshot_name(world: World, volume: str = "rootdisk") -> str:
    return f"vmsnapshot-{world.snapshot()['metadata']['uid']}-volume-{volume}"


# VolumeSnapshots.


def test_first_pass_creates_the_volume_snapshots_and_reports_them_not_ready() -> None:
    world, content_name = _content_world()
    assert world.run_content(content_name) is None

    content = world.content()
    name = _volume_snapshot_name(world)
    [volume_snapshot] = world.api.objects_of(VOLUME_SNAPSHOTS)
    assert volume_snapshot["metadata"]["name"] == name
    assert volume_snapshot["metadata"]["namespace"] == NS
    assert volume_snapshot["metadata"]["labels"] == {
        "snapshot.kubevirt.io/source-vm-name": VM,
        "snapshot.kubevirt.io/source-vm-namespace": NS,
    }
    assert volume_snapshot["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "snapshot.kubevirt.io/v1beta1",
            "kind": "VirtualMachineSnapshotContent",
            "name": content_name,
            "uid": content["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert volume_snapshot["spec"] == {
        "source": {"persistentVolumeClaimName": CLAIM},
        "volumeSnapshotClassName": "csi-snapclass",
    }
    assert (
        "VirtualMachineSnapshotContent",
        content_name,
        "Normal",
        "SuccessfulVolumeSnapshotCreate",
        f"Successfully created VolumeSnapshot {name}",
    ) in world.events.events
    assert content["status"] == {"readyToUse": False, "volumeSnapshotStatus": [{"volumeSnapshotName": name}]}
    assert world.freezer.freezes == []  # an offline VM is not frozen


def test_cut_and_ready_volume_snapshots_make_the_content_created_and_ready() -> None:
    world, content_name = _content_world()
    world.run_content(content_name)
    cut_at = format_time(world.clock())
    cut_volume_snapshots(world)
    world.clock.advance(10)
    world.run_content(content_name)

    status = world.content()["status"]
    assert status == {
        "creationTime": format_time(world.clock()),
        "readyToUse": True,
        "volumeSnapshotStatus": [
            {"volumeSnapshotName": _volume_snapshot_name(world), "readyToUse": True, "creationTime": cut_at}
        ],
    }
    assert len(world.api.objects_of(VOLUME_SNAPSHOTS)) == 1  # nothing created twice


def test_cut_but_not_ready_volume_snapshots_give_a_creation_time_only() -> None:
    world, content_name = _content_world()
    world.run_content(content_name)
    cut_volume_snapshots(world, ready=False)
    world.run_content(content_name)
    status = world.content()["status"]
    assert status["creationTime"] == format_time(world.clock())
    assert status["readyToUse"] is False


def test_a_volume_snapshot_error_is_the_contents_error_until_it_clears() -> None:
    world, content_name = _content_world()
    world.run_content(content_name)
    name = _volume_snapshot_name(world)
    failed = {"readyToUse": False, "error": {"time": "2026-01-01T00:00:00Z", "message": "quota exceeded"}}
    world.edit(VOLUME_SNAPSHOTS, name, lambda vs: vs.update(status=failed), status=True)
    world.run_content(content_name)
    error = world.content()["status"]["error"]
    assert error == {
        "time": format_time(world.clock()),
        "message": f"VolumeSnapshot {name} error: quota exceeded",
    }
    assert world.content()["status"]["volumeSnapshotStatus"][0]["error"] == failed["error"]

    world.clock.advance(30)
    world.run_content(content_name)
    assert world.content()["status"]["error"] == error  # same message: same time

    cut_volume_snapshots(world)
    world.run_content(content_name)
    assert "error" not in world.content()["status"]
    assert world.content()["status"]["readyToUse"] is True


def test_a_volume_snapshot_deleted_after_creation_is_reported_missing() -> None:
    world, content_name = _content_world()
    world.run_content(content_name)
    cut_volume_snapshots(world)
    world.run_content(content_name)
    created = world.content()["status"]["creationTime"]
    name = _volume_snapshot_name(world)
    world.api.delete(VOLUME_SNAPSHOTS, NS, name)
    world.run_content(content_name)

    status = world.content()["status"]
    assert status["creationTime"] == created  # never cleared
    assert status["readyToUse"] is False
    assert status["error"]["message"] == f"VolumeSnapshots ({name}) missing"
    assert "volumeSnapshotStatus" not in status
    assert world.api.objects_of(VOLUME_SNAPSHOTS) == []  # not recreated
    assert world.events.events[-1] == (
        "VirtualMachineSnapshotContent",
        content_name,
        "Warning",
        "VolumeSnapshotMissing",
        f"VolumeSnapshot {name} no longer exists",
    )
    world.run_snapshot()
    assert world.snapshot()["status"]["phase"] == "Succeeded"  # stays Succeeded, not ready


def test_a_content_without_claims_is_created_and_ready_at_once() -> None:
    world = snapshot_world()
    world.edit(VIRTUAL_MACHINES, VM, lambda vm: vm.update(spec=vm_manifest([CLOUD_INIT])["spec"]))
    lock_vm(world)
    world.run_snapshot()
    assert "volumeBackups" not in world.content()["spec"]  # omitted when empty
    world.run_content(world.content_name())
    status = world.content()["status"]
    assert status == {"creationTime": format_time(world.clock()), "readyToUse": True}
    world.run_snapshot()
    snapshot = world.snapshot()
    assert snapshot["status"]["phase"] == "Succeeded"
    assert snapshot["status"]["snapshotVolumes"] == {"excludedVolumes": ["cloudinit"]}


def test_a_snapshot_class_gone_before_the_volume_snapshot_is_retried() -> None:
    world, content_name = _content_world()
    world.api.delete(VOLUME_SNAPSHOT_CLASSES, None, "csi-snapclass")
    world.sync()
    with pytest.raises(ContentError):
        world.content_controller.reconcile(key_for(NS, content_name))
    assert world.api.objects_of(VOLUME_SNAPSHOTS) == []


def test_a_content_without_its_snapshot_name_is_an_error() -> None:
    world = World()
    world.add(
        VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, {"metadata": {"name": "orphan", "namespace": NS}, "spec": {}}
    )
    world.sync()
    with pytest.raises(
        ContentError, match=r"^VirtualMachineSnapshotName is not initialized in vm snapshot content$"
    ):
        world.content_controller.reconcile(key_for(NS, "orphan"))


def test_a_deleting_content_only_waits() -> None:
    world, content_name = _content_world()
    world.mark_deleting(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, content_name)
    writes = len(world.api.writes)
    assert world.run_content(content_name) == 5
    assert len(world.api.writes) == writes


# Freeze and thaw.


def test_a_guest_with_agent_is_frozen_once_before_the_volume_snapshots_and_thawed_after() -> None:
    world = snapshot_world(online=True, agent=True)
    world.edit(
        VIRTUAL_MACHINES,
        VM,
        lambda vm: vm.update(
            spec=vm_manifest([pvc_volume("rootdisk", CLAIM), pvc_volume("data", CLAIM)])["spec"]
        ),
    )
    lock_vm(world)
    world.run_snapshot()
    content_name = world.content_name()
    world.run_content(content_name)

    assert world.freezer.freezes == [(NS, VM, 300.0)]  # unfreezeTimeout = the failure deadline
    assert len(world.api.objects_of(VOLUME_SNAPSHOTS)) == 2
    assert world.freezer.unfreezes == []

    cut_volume_snapshots(world)
    world.run_content(content_name)
    assert world.freezer.unfreezes == [(NS, VM)]
    assert world.content()["status"]["readyToUse"] is True
    world.run_content(content_name)
    assert world.freezer.unfreezes == [(NS, VM)]  # once


def test_the_unfreeze_timeout_is_the_snapshots_failure_deadline() -> None:
    world, content_name = _content_world(online=True, agent=True, failureDeadline="1m30s")
    world.run_content(content_name)
    assert world.freezer.freezes == [(NS, VM, 90.0)]


@pytest.mark.parametrize(
    "vmi_change",
    [
        lambda vmi: vmi["status"].update(conditions=[]),  # no agent
        lambda vmi: vmi["status"]["conditions"].append({"type": "Paused", "status": "True"}),
        lambda vmi: vmi["status"].update(fsFreezeStatus="frozen"),
    ],
    ids=["no-agent", "paused", "already-frozen"],
)
def test_a_guest_that_cannot_or_need_not_be_frozen_is_snapshotted_without_freeze(vmi_change: Any) -> None:
    world, content_name = _content_world(online=True, agent=True)
    world.edit(VIRTUAL_MACHINE_INSTANCES, VM, vmi_change)
    world.run_content(content_name)
    assert world.freezer.freezes == []
    assert len(world.api.objects_of(VOLUME_SNAPSHOTS)) == 1


def test_a_failed_freeze_is_the_contents_error_and_no_volume_snapshot_is_taken() -> None:
    world, content_name = _content_world(online=True, agent=True)
    world.freezer.fail_freeze = ApiError(500, "InternalError", "Guest agent is not responding")
    assert world.run_content(content_name) == 5

    assert world.content()["status"] == {
        "error": {"time": format_time(world.clock()), "message": "Guest agent is not responding"},
        "readyToUse": False,
    }
    assert world.api.objects_of(VOLUME_SNAPSHOTS) == []
    world.run_snapshot()
    assert world.snapshot()["status"]["phase"] == "InProgress"
    assert world.snapshot()["status"]["conditions"][0]["reason"] == "In error state"

    world.freezer.fail_freeze = None
    world.run_content(content_name)
    assert len(world.api.objects_of(VOLUME_SNAPSHOTS)) == 1
    assert "error" not in world.content()["status"]


def test_a_freeze_limit_on_thaw_undoes_the_creation_time() -> None:
    world, content_name = _content_world(online=True, agent=True)
    world.run_content(content_name)
    cut_volume_snapshots(world)
    message = "fsfreeze is limited up to 10 seconds"
    world.freezer.fail_unfreeze = ApiError(500, "InternalError", message)
    assert world.run_content(content_name) == 5

    status = world.content()["status"]
    assert "creationTime" not in status
    assert status["error"] == {"time": format_time(world.clock()), "message": message}
    world.run_snapshot()
    assert world.snapshot()["status"]["indications"] == ["GuestAgent", "Online", "QuiesceTimeout"]


def test_another_thaw_failure_is_retried() -> None:
    world, content_name = _content_world(online=True, agent=True)
    world.run_content(content_name)
    cut_volume_snapshots(world)
    world.freezer.fail_unfreeze = ApiError(500, "InternalError", "connection refused")
    world.sync()
    with pytest.raises(ContentError, match="connection refused"):
        world.content_controller.reconcile(key_for(NS, content_name))


def test_the_freeze_subresource_gets_the_timeout_as_a_go_duration() -> None:
    calls: list[tuple[str, str, Any]] = []

    class Client:
        def request(self, method: str, path: str, *, body: Any = None) -> bytes:
            calls.append((method, path, body))
            return b""

    freezer = SubresourceFreezer(Client())
    freezer.freeze(NS, VM, 300)
    freezer.unfreeze(NS, VM)
    freezer.freeze(NS, VM, 90.75)  # whole seconds
    prefix = f"/apis/subresources.kubevirt.io/v1/namespaces/{NS}/virtualmachineinstances/{VM}"
    assert calls == [
        ("PUT", f"{prefix}/freeze", {"unfreezeTimeout": "5m0s"}),
        ("PUT", f"{prefix}/unfreeze", {}),
        ("PUT", f"{prefix}/freeze", {"unfreezeTimeout": "1m30s"}),
    ]


# The snapshot going away.


def test_a_terminating_snapshot_thaws_the_guest_and_releases_the_content() -> None:
    world, content_name = _content_world(online=True, agent=True)
    world.run_content(content_name)
    world.clock.advance(301)  # deadline exceeded: the content is not ready, so it is to be deleted
    world.run_content(content_name)

    assert world.freezer.unfreezes == [(NS, VM)]  # best effort
    content = world.content()
    assert content["metadata"]["finalizers"] == []
    assert content["status"] == {
        "readyToUse": False,
        "volumeSnapshotStatus": [{"volumeSnapshotName": _volume_snapshot_name(world)}],
    }  # left for the snapshot controller to delete


def test_a_content_whose_snapshot_is_gone_skips_the_volume_snapshots_left() -> None:
    world, content_name = _content_world()
    world.api.delete(VIRTUAL_MACHINE_SNAPSHOTS, NS, SNAPSHOT)
    world.run_content(content_name)

    content = world.api.get(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, NS, content_name)
    assert content["metadata"]["finalizers"] == []
    assert world.api.objects_of(VOLUME_SNAPSHOTS) == []
    name = content["spec"]["volumeBackups"][0]["volumeSnapshotName"]
    assert (
        content["status"]["error"]["message"]
        == f"VolumeSnapshots ({name}) skipped because vm snapshot is deleted"
    )
    assert content["status"]["readyToUse"] is False


def test_content_and_volume_snapshot_events_queue_the_content() -> None:
    world, content_name = _content_world()
    world.run_content(content_name)
    world.run_snapshot()  # the snapshot's status names its content now
    [volume_snapshot] = world.api.objects_of(VOLUME_SNAPSHOTS)
    world.queued.clear()
    controller = world.content_controller
    controller.on_volume_snapshot_update(volume_snapshot, volume_snapshot)
    controller.on_volume_snapshot_delete(volume_snapshot)
    snapshot: JSON = world.snapshot()
    controller.on_snapshot_update(snapshot, snapshot)
    assert world.queued == [key_for(NS, content_name)] * 3
    assert SNAPSHOT_FINALIZER in snapshot["metadata"]["finalizers"]
    assert world.content()["metadata"]["finalizers"] == [CONTENT_FINALIZER]
