"""Keeps each VM's ``status.volumeSnapshotStatuses`` (KubeVirt's snapshot controller does this, not the
VM controller): whether each volume can be snapshotted and, when not, why."""

from __future__ import annotations

from kubevirt.client import VIRTUAL_MACHINES, KubeApi
from kubevirt.controller import Store, key_of
from kubevirt.controller.store import NAMESPACE_INDEX
from kubevirt.virt_controller.watch.common import Enqueue
from kubevirt.virt_controller.watch.vm import template_claim_names
from kubevirt_api.core.v1 import VirtualMachine
from kubevirt_api.view import JSON

from .classes import SnapshotClasses, volume_snapshot_statuses


class VolumeSnapshotStatusController:
    """Informers: VMs (and their claims' PVCs, and the VolumeSnapshotClasses, which requeue VMs)."""

    def __init__(
        self,
        *,
        api: KubeApi,
        vm_store: Store[VirtualMachine],
        pvc_store: Store[JSON],
        storage_class_store: Store[JSON],
        snapshot_classes: SnapshotClasses,
        enqueue: Enqueue,
    ) -> None:
        self._api = api
        self._vms = vm_store
        self._pvcs = pvc_store
        self._storage_classes = storage_class_store
        self._snapshot_classes = snapshot_classes
        self._enqueue = enqueue

    def reconcile(self, key: str) -> None:
        vm = self._vms.get_by_key(key)
        if vm is None:
            return
        current = vm.to_dict()
        classes = self._snapshot_classes()
        wanted = volume_snapshot_statuses(
            current, self._pvcs, self._storage_classes, classes.list() if classes is not None else ()
        )
        status = current.setdefault("status", {})
        if (status.get("volumeSnapshotStatuses") or []) == wanted:
            return
        if wanted:
            status["volumeSnapshotStatuses"] = wanted
        else:
            status.pop("volumeSnapshotStatuses", None)
        self._api.update_status(VIRTUAL_MACHINES, current["metadata"].get("namespace"), current)

    def enqueue_all(self) -> None:
        """A VolumeSnapshotClass came or went: every VM's answer may change."""
        for key in self._vms.list_keys():
            self._enqueue(key)

    def on_vm_add(self, vm: VirtualMachine) -> None:
        self._enqueue(key_of(vm))

    def on_vm_update(self, old: VirtualMachine, new: VirtualMachine) -> None:
        self._enqueue(key_of(new))

    def on_vm_delete(self, vm: VirtualMachine) -> None:
        pass  # nothing to report on a VM that is gone

    def on_pvc_add(self, pvc: JSON) -> None:
        self._enqueue_users(pvc)

    def on_pvc_update(self, old: JSON, new: JSON) -> None:
        if _storage_facts(old) != _storage_facts(new):
            self._enqueue_users(new)

    def on_pvc_delete(self, pvc: JSON) -> None:
        self._enqueue_users(pvc)

    def _enqueue_users(self, pvc: JSON) -> None:
        meta = pvc.get("metadata") or {}
        for vm in self._vms.by_index(NAMESPACE_INDEX, meta.get("namespace") or ""):
            if meta.get("name") in template_claim_names(vm):
                self._enqueue(key_of(vm))


def _storage_facts(pvc: JSON) -> tuple[object, object]:
    """What a volume's answer depends on: the claim's class (and whether it is bound yet)."""
    return (pvc.get("spec") or {}).get("storageClassName"), (pvc.get("status") or {}).get("phase")
