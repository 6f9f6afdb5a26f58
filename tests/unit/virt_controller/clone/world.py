"""The snapshot tests' in-memory cluster with the clone controller added, and clone-shaped objects.

The clone controller reads the same caches as the snapshot and restore controllers, so a test can run
a clone from start to end with every controller KubeVirt would run, or hand it ready-made snapshots,
contents and restores to check one pass.
"""

from __future__ import annotations

import copy
from typing import Any

from kubevirt.client.resources import (
    VIRTUAL_MACHINE_CLONES,
    VIRTUAL_MACHINE_RESTORES,
    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
    VIRTUAL_MACHINE_SNAPSHOTS,
)
from kubevirt.controller import Store, key_for
from kubevirt.virt_controller.watch.clone.clone import CloneController
from kubevirt_testing.fake_kube_api import FakeKubeApi

from ..snapshot.world import NS, VM, World, pvc_volume, vm_manifest

JSON = dict[str, Any]
CLONE = "testclone"
TARGET = "target-vm"
SUFFIX = "x7k2p"
CLAIM = "disk-pvc"
MAC = "02:00:00:00:00:01"


class CloneWorld(World):
    def __init__(self, api: FakeKubeApi | None = None) -> None:
        super().__init__(api)
        self.clones: Store[JSON] = Store()  # the controller adds its indexes
        self.clone_controller = CloneController(
            api=self.api,
            events=self.events,
            clone_store=self.clones,
            snapshot_store=self.snapshots,
            content_store=self.contents,
            restore_store=self.restores,
            vm_store=self.vms,
            pvc_store=self.pvcs,
            enqueue=self.queued.append,
            clock=self.clock,
            name_suffix=lambda: SUFFIX,
        )

    def sync(self) -> None:
        super().sync()
        self.clones.replace(self.api.objects_of(VIRTUAL_MACHINE_CLONES))

    def run_clone(self, name: str = CLONE) -> float | None:
        return self._run(self.clone_controller.reconcile, key_for(NS, name))

    def clone(self, name: str = CLONE) -> JSON:
        return self.api.get(VIRTUAL_MACHINE_CLONES, NS, name)

    def clone_uid(self, name: str = CLONE) -> str:
        return str(self.clone(name)["metadata"]["uid"])

    def snapshot_name(self) -> str:
        return f"tmp-snapshot-{self.clone_uid()}"

    def restore_name(self) -> str:
        return f"tmp-restore-{self.clone_uid()}"

    def set_clone_status(self, **status: Any) -> JSON:
        return self.edit(VIRTUAL_MACHINE_CLONES, CLONE, lambda c: c.update(status=status), status=True)

    def events_of(self, reason: str) -> list[tuple[str, str]]:
        """(type, message) of each event with this reason."""
        return [(type_, message) for _, _, type_, why, message in self.events.events if why == reason]


def clone_manifest(
    *, source: JSON | None = None, target: JSON | str | None = TARGET, name: str = CLONE, **spec: Any
) -> JSON:
    """A clone of the test VM (or of ``source``) to ``target`` (a name, a reference, or None)."""
    body: JSON = {
        "source": source or {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": VM},
        **spec,
    }
    if isinstance(target, str):
        body["target"] = {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": target}
    elif target is not None:
        body["target"] = target
    return {
        "apiVersion": "clone.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClone",
        "metadata": {"name": name, "namespace": NS},
        "spec": body,
    }


def snapshot_source(name: str) -> JSON:
    return {"apiGroup": "snapshot.kubevirt.io", "kind": "VirtualMachineSnapshot", "name": name}


def clone_vm_manifest(*, name: str = VM) -> JSON:
    """A VM with a claim volume, a pod network interface with a MAC, a firmware, labels and annotations."""
    vm = vm_manifest([pvc_volume("rootdisk", CLAIM)], name=name)
    vm["metadata"]["labels"] = {"app": "testvm", "team/a": "x"}
    vm["metadata"]["annotations"] = {"note/keep": "1", "note/drop": "2"}
    template = vm["spec"]["template"]
    template["metadata"] = {"labels": {"kubevirt.io/domain": "testvm"}}
    template["spec"]["domain"]["devices"]["interfaces"] = [
        {"name": "default", "masquerade": {}, "macAddress": MAC}
    ]
    template["spec"]["domain"]["firmware"] = {"serial": "source-serial", "uuid": "source-uuid"}
    template["spec"]["networks"] = [{"name": "default", "pod": {}}]
    return vm


def snapshottable(vm: JSON, *volumes: str, enabled: bool = True) -> JSON:
    """The VM with ``status.volumeSnapshotStatuses`` for these volumes."""
    vm = copy.deepcopy(vm)
    vm["status"] = {"volumeSnapshotStatuses": [{"name": volume, "enabled": enabled} for volume in volumes]}
    return vm


def ready_snapshot(name: str, vm: JSON, *, ready: bool = True, owner: JSON | None = None) -> JSON:
    """A snapshot of ``vm`` (its content named ``<name>-content``)."""
    meta: JSON = {"name": name, "namespace": NS}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineSnapshot",
        "metadata": meta,
        "spec": {
            "source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": vm["metadata"]["name"]}
        },
        "status": {"readyToUse": ready, "virtualMachineSnapshotContentName": f"{name}-content"},
    }


def snapshot_content(snapshot: str, vm: JSON, *, backed_up: tuple[str, ...] = ("rootdisk",)) -> JSON:
    """The content of ``snapshot``: ``vm`` as it was, with a backup of the listed volumes."""
    kept = {key: copy.deepcopy(vm[key]) for key in ("metadata", "spec")}
    return {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineSnapshotContent",
        "metadata": {"name": f"{snapshot}-content", "namespace": NS},
        "spec": {
            "virtualMachineSnapshotName": snapshot,
            "source": {"virtualMachine": kept},
            "volumeBackups": [
                {"volumeName": volume, "volumeSnapshotName": f"vs-{volume}", "persistentVolumeClaim": {}}
                for volume in backed_up
            ],
        },
        "status": {"readyToUse": True},
    }


def add_snapshot_with_content(world: CloneWorld, name: str, vm: JSON, **kwargs: Any) -> None:
    world.add(VIRTUAL_MACHINE_SNAPSHOTS, ready_snapshot(name, vm, **kwargs))
    world.add(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, snapshot_content(name, vm))


def restore_of(
    world: CloneWorld, snapshot: str, *, complete: bool = False, claims: tuple[str, ...] = ()
) -> JSON:
    """The restore the clone would have created, in the given state."""
    return {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineRestore",
        "metadata": {"name": world.restore_name(), "namespace": NS},
        "spec": {
            "target": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": TARGET},
            "virtualMachineSnapshotName": snapshot,
        },
        "status": {
            "complete": complete,
            "restores": [
                {"volumeName": "rootdisk", "persistentVolumeClaim": claim, "volumeSnapshotName": "vs"}
                for claim in claims
            ],
        },
    }


def add_restore(world: CloneWorld, restore: JSON) -> None:
    world.add(VIRTUAL_MACHINE_RESTORES, restore)
