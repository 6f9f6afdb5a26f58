"""An in-memory cluster for the snapshot and restore controllers' tests: FakeKubeApi, the caches the
controllers read (filled from the fake API by ``sync``), a settable clock, recorded events and a
recording Freezer.

Each ``run_*`` is one reconcile pass of one key, with the caches caught up before and after, so a test
can assert what each pass of KubeVirt's controller does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubevirt.client import (
    PERSISTENT_VOLUME_CLAIMS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    ApiError,
    Resource,
)
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    STORAGE_CLASSES,
    VIRTUAL_MACHINE_RESTORES,
    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
    VIRTUAL_MACHINE_SNAPSHOTS,
    VOLUME_SNAPSHOT_CLASSES,
    VOLUME_SNAPSHOTS,
)
from kubevirt.controller import RequeueAfter, Store, key_for
from kubevirt.virt_controller.watch.common import format_time
from kubevirt.virt_controller.watch.snapshot.common import DEFAULT_SNAPSHOT_CLASS_ANNOTATION
from kubevirt.virt_controller.watch.snapshot.content import ContentController
from kubevirt.virt_controller.watch.snapshot.restore import RestoreController
from kubevirt.virt_controller.watch.snapshot.snapshot import (
    SOURCE_INDEX,
    SnapshotController,
    SnapshotSources,
    source_index,
)
from kubevirt.virt_controller.watch.snapshot.vmstatus import VolumeSnapshotStatusController
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance
from kubevirt_testing.fake_kube_api import FakeKubeApi

from ..fakes import FakeClock, RecordedEvents

JSON = dict[str, Any]
NS = "default"
VM = "testvm"
SNAPSHOT = "snap"
RESTORE = "restore"
DRIVER = "csi.example.com"
STORAGE_CLASS = "standard"
CLAIM = "disk-pvc"


@dataclass
class RecordingFreezer:
    """The Freezer virt-api would be: records calls; ``fail_*`` make the following calls fail."""

    freezes: list[tuple[str, str, float]] = field(default_factory=list)
    unfreezes: list[tuple[str, str]] = field(default_factory=list)
    fail_freeze: ApiError | None = None
    fail_unfreeze: ApiError | None = None

    def freeze(self, namespace: str, name: str, unfreeze_timeout_seconds: float) -> None:
        if self.fail_freeze is not None:
            raise self.fail_freeze
        self.freezes.append((namespace, name, unfreeze_timeout_seconds))

    def unfreeze(self, namespace: str, name: str) -> None:
        if self.fail_unfreeze is not None:
            raise self.fail_unfreeze
        self.unfreezes.append((namespace, name))


class World:
    def __init__(self, api: FakeKubeApi | None = None) -> None:
        self.api = api if api is not None else FakeKubeApi()
        self.clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
        self.events = RecordedEvents()
        self.freezer = RecordingFreezer()
        self.queued: list[str] = []
        self.snapshot_crds_installed = True
        self.snapshots: Store[JSON] = Store({SOURCE_INDEX: source_index})
        self.restores: Store[JSON] = Store()  # the restore controller adds its index
        self.contents: Store[JSON] = Store()
        self.vms: Store[VirtualMachine] = Store()
        self.vmis: Store[VirtualMachineInstance] = Store()
        self.pvcs: Store[JSON] = Store()
        self.storage_classes: Store[JSON] = Store()
        self.revisions: Store[JSON] = Store()
        self.snapshot_class_store: Store[JSON] = Store()
        self.volume_snapshot_store: Store[JSON] = Store()
        sources = SnapshotSources(self.vms, self.vmis)
        self.snapshot_controller = SnapshotController(
            api=self.api,
            events=self.events,
            snapshot_store=self.snapshots,
            content_store=self.contents,
            sources=sources,
            pvc_store=self.pvcs,
            storage_class_store=self.storage_classes,
            snapshot_classes=self.snapshot_classes,
            revision_store=self.revisions,
            enqueue=self.queued.append,
            clock=self.clock,
        )
        self.content_controller = ContentController(
            api=self.api,
            events=self.events,
            content_store=self.contents,
            snapshot_store=self.snapshots,
            sources=sources,
            volume_snapshots=self.volume_snapshots,
            storage_class_store=self.storage_classes,
            snapshot_classes=self.snapshot_classes,
            freezer=self.freezer,
            enqueue=self.queued.append,
            clock=self.clock,
        )
        self.status_controller = VolumeSnapshotStatusController(
            api=self.api,
            vm_store=self.vms,
            pvc_store=self.pvcs,
            storage_class_store=self.storage_classes,
            snapshot_classes=self.snapshot_classes,
            enqueue=self.queued.append,
        )
        self.restore_controller = RestoreController(
            api=self.api,
            events=self.events,
            restore_store=self.restores,
            snapshot_store=self.snapshots,
            content_store=self.contents,
            vm_store=self.vms,
            vmi_store=self.vmis,
            pvc_store=self.pvcs,
            storage_class_store=self.storage_classes,
            volume_snapshots=self.volume_snapshots,
            revision_store=self.revisions,
            enqueue=self.queued.append,
            clock=self.clock,
        )

    # What the CRD informers give: a store once the CSI snapshot CRDs are served.
    def snapshot_classes(self) -> Store[JSON] | None:
        return self.snapshot_class_store if self.snapshot_crds_installed else None

    def volume_snapshots(self) -> Store[JSON] | None:
        return self.volume_snapshot_store if self.snapshot_crds_installed else None

    # Cluster state.
    def add(self, resource: Resource, obj: JSON) -> JSON:
        """Stores ``obj`` as created now by the fake clock."""
        created = self.api.add(resource, obj)
        namespace = created["metadata"].get("namespace")
        stored = self.api.objects[(resource.plural, namespace, created["metadata"]["name"])]
        stored["metadata"]["creationTimestamp"] = format_time(self.clock())
        return copy.deepcopy(stored)

    def edit(
        self, resource: Resource, name: str, change: Callable[[JSON], None], *, status: bool = False
    ) -> JSON:
        """Changes an object as another client would (an update, or a status update)."""
        namespace = NS if resource.namespaced else None
        obj = self.api.get(resource, namespace, name)
        change(obj)
        write = self.api.update_status if status else self.api.update
        return write(resource, namespace, obj)

    def mark_deleting(self, resource: Resource, name: str) -> JSON:
        """A delete the object's finalizers hold back: only the deletionTimestamp is set."""
        return self.edit(
            resource, name, lambda obj: obj["metadata"].update(deletionTimestamp=format_time(self.clock()))
        )

    def get(self, resource: Resource, name: str) -> JSON:
        return self.api.get(resource, NS if resource.namespaced else None, name)

    def writes(self, verb: str, resource: Resource) -> int:
        """How many ``verb`` writes (create, update, update_status, ...) of ``resource`` the API took."""
        return sum(1 for write in self.api.writes if write[0] == verb and write[1] == resource.plural)

    def sync(self) -> None:
        """The informers catch up with the API."""
        self.snapshots.replace(self.api.objects_of(VIRTUAL_MACHINE_SNAPSHOTS))
        self.restores.replace(self.api.objects_of(VIRTUAL_MACHINE_RESTORES))
        self.contents.replace(self.api.objects_of(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS))
        self.vms.replace(VirtualMachine.from_dict(vm) for vm in self.api.objects_of(VIRTUAL_MACHINES))
        self.vmis.replace(
            VirtualMachineInstance.from_dict(vmi) for vmi in self.api.objects_of(VIRTUAL_MACHINE_INSTANCES)
        )
        self.pvcs.replace(self.api.objects_of(PERSISTENT_VOLUME_CLAIMS))
        self.storage_classes.replace(self.api.objects_of(STORAGE_CLASSES))
        self.revisions.replace(self.api.objects_of(CONTROLLER_REVISIONS))
        self.snapshot_class_store.replace(self.api.objects_of(VOLUME_SNAPSHOT_CLASSES))
        self.volume_snapshot_store.replace(self.api.objects_of(VOLUME_SNAPSHOTS))

    # One pass of each controller: the requeue it asked for (None when none).
    def run_snapshot(self, name: str = SNAPSHOT) -> float | None:
        return self._run(self.snapshot_controller.reconcile, key_for(NS, name))

    def run_content(self, name: str) -> float | None:
        return self._run(self.content_controller.reconcile, key_for(NS, name))

    def run_vm_status(self, name: str = VM) -> None:
        self._run(self.status_controller.reconcile, key_for(NS, name))

    def run_restore(self, name: str = RESTORE) -> float | None:
        return self._run(self.restore_controller.reconcile, key_for(NS, name))

    def _run(self, reconcile: Callable[[str], None], key: str) -> float | None:
        self.sync()
        try:
            reconcile(key)
        except RequeueAfter as requeue:
            return requeue.seconds
        finally:
            self.sync()
        return None

    def snapshot(self, name: str = SNAPSHOT) -> JSON:
        return self.api.get(VIRTUAL_MACHINE_SNAPSHOTS, NS, name)

    def vm(self, name: str = VM) -> JSON:
        return self.api.get(VIRTUAL_MACHINES, NS, name)

    def restore(self, name: str = RESTORE) -> JSON:
        return self.api.get(VIRTUAL_MACHINE_RESTORES, NS, name)

    def content_name(self, name: str = SNAPSHOT) -> str:
        return f"vmsnapshot-content-{self.snapshot(name)['metadata']['uid']}"

    def content(self, name: str = SNAPSHOT) -> JSON:
        return self.api.get(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, NS, self.content_name(name))


# Objects.
def storage_class(name: str = STORAGE_CLASS, provisioner: str = DRIVER) -> JSON:
    return {"metadata": {"name": name}, "provisioner": provisioner}


def snapshot_class(name: str, driver: str = DRIVER, *, default: str | None = None) -> JSON:
    meta: JSON = {"name": name}
    if default is not None:
        meta["annotations"] = {DEFAULT_SNAPSHOT_CLASS_ANNOTATION: default}
    return {"metadata": meta, "driver": driver, "deletionPolicy": "Delete"}


def claim(name: str = CLAIM, *, phase: str = "Bound", storage_class_name: str | None = STORAGE_CLASS) -> JSON:
    spec: JSON = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"app": "disk"},
            "managedFields": [{"manager": "kubectl", "operation": "Update"}],
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def pvc_volume(name: str, claim_name: str) -> JSON:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name}}


CLOUD_INIT: JSON = {"name": "cloudinit", "cloudInitNoCloud": {"userData": "#cloud-config"}}


def vm_manifest(volumes: Iterable[JSON] = (), *, name: str = VM) -> JSON:
    volumes = list(volumes)
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"app": "testvm"},
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
        },
        "spec": {
            "runStrategy": "Halted",
            "template": {
                "spec": {
                    "domain": {
                        "devices": {
                            "disks": [{"name": v["name"], "disk": {"bus": "virtio"}} for v in volumes]
                        },
                        "resources": {"requests": {"memory": "128Mi"}},
                    },
                    "volumes": volumes,
                }
            },
        },
    }


def vmi_manifest(*, agent: bool = False, paused: bool = False, revision: str | None = None) -> JSON:
    conditions = []
    if agent:
        conditions.append({"type": "AgentConnected", "status": "True"})
    if paused:
        conditions.append({"type": "Paused", "status": "True"})
    status: JSON = {"phase": "Running", "conditions": conditions}
    if revision is not None:
        status["virtualMachineRevisionName"] = revision
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": VM, "namespace": NS},
        "spec": {"domain": {"devices": {}}},
        "status": status,
    }


def vm_snapshot(name: str = SNAPSHOT, **spec: Any) -> JSON:
    return {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineSnapshot",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": VM}, **spec},
    }


def storage_world(*, with_snapshot_class: bool = True) -> World:
    """A StorageClass (with a VolumeSnapshotClass for its driver) and a bound claim of it."""
    world = World()
    world.add(STORAGE_CLASSES, storage_class())
    if with_snapshot_class:
        world.add(VOLUME_SNAPSHOT_CLASSES, snapshot_class("csi-snapclass"))
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    return world


def snapshot_world(*, online: bool = False, agent: bool = False, **spec: Any) -> World:
    """A VM with a claim volume and a cloud-init volume, and a snapshot of it (nothing reconciled yet)."""
    world = storage_world()
    world.add(VIRTUAL_MACHINES, vm_manifest([pvc_volume("rootdisk", CLAIM), CLOUD_INIT]))
    if online:
        start_vm(world, agent=agent)
    world.add(VIRTUAL_MACHINE_SNAPSHOTS, vm_snapshot(**spec))
    return world


def start_vm(world: World, *, agent: bool = False) -> str:
    """A running VMI and the start revision the VM controller writes for it (the spec at start)."""
    vm = world.vm()
    revision = f"revision-start-vm-{vm['metadata']['uid']}-1"
    world.add(
        CONTROLLER_REVISIONS,
        {
            "metadata": {"name": revision, "namespace": NS},
            "data": {"spec": copy.deepcopy(vm["spec"])},
            "revision": 1,
        },
    )
    world.add(VIRTUAL_MACHINE_INSTANCES, vmi_manifest(agent=agent, revision=revision))
    return revision


def lock_vm(world: World) -> None:
    """The snapshot's first two passes: status initialized, then the VM locked."""
    world.run_snapshot()
    world.run_snapshot()


def cut_volume_snapshots(world: World, *, ready: bool = True) -> None:
    """The CSI snapshotter's part: every VolumeSnapshot gets a creationTime (and readyToUse)."""
    for volume_snapshot in world.api.objects_of(VOLUME_SNAPSHOTS):
        world.edit(
            VOLUME_SNAPSHOTS,
            volume_snapshot["metadata"]["name"],
            lambda vs: vs.update(status={"creationTime": format_time(world.clock()), "readyToUse": ready}),
            status=True,
        )


def complete_snapshot(world: World) -> None:
    """Lock, content, VolumeSnapshots cut and ready, snapshot Succeeded (the VM still locked)."""
    lock_vm(world)
    world.run_snapshot()
    world.run_content(world.content_name())
    cut_volume_snapshots(world)
    world.run_content(world.content_name())
    world.run_snapshot()


def conditions(obj: JSON) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in obj["status"].get("conditions") or ()]
