"""The VirtualMachineSnapshot controller (KubeVirt's ``updateVMSnapshot``).

A pass: add the snapshot's finalizer; lock the VM (retried every few seconds while a claim is not bound,
an offline VM's claims are still mounted, or another snapshot holds it); once locked, write the
VirtualMachineSnapshotContent; when the content is ready (or the snapshot failed or is deleted), unlock
the VM; report phase, conditions, indications and included/excluded volumes. The failure deadline
(``spec.failureDeadline``, 5 minutes by default, 0 for none) runs from the snapshot's creation.
"""

from __future__ import annotations

import contextlib
import copy
from datetime import datetime, timedelta
from typing import Any

from kubevirt.client import AlreadyExistsError, EventSink, KubeApi, NotFoundError
from kubevirt.client.resources import VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, VIRTUAL_MACHINE_SNAPSHOTS
from kubevirt.controller import RequeueAfter, Store, key_for, key_of
from kubevirt.log import get_logger
from kubevirt.service.durations import parse_duration
from kubevirt.virt_controller.watch.common import (
    Clock,
    Enqueue,
    finalizers_patch,
    parse_time,
    utc_now,
)
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance
from kubevirt_api.core.v1.constants import GROUP_NAME
from kubevirt_api.view import JSON

from .classes import SnapshotClasses, claim_storage_class, snapshot_class_for, volume_claim
from .common import (
    CONTENT_FINALIZER,
    DEFAULT_FAILURE_DEADLINE_SECONDS,
    DELETING,
    FAILED,
    FAILURE,
    IN_PROGRESS,
    PROGRESSING,
    READY,
    RETRY_SECONDS,
    SNAPSHOT_API_VERSION,
    SNAPSHOT_FINALIZER,
    SUCCEEDED,
    content_name,
    finalizers,
    finalizers_test_value,
    volume_snapshot_name,
    with_condition,
    without_managed_fields,
)
from .freezer import Freezer
from .source import SourceError, SourceState, lock, recorded_vm, source_state, unlock

CONTENT_CREATED_REASON = "SuccessfulVirtualMachineSnapshotContentCreate"
DEADLINE_EXCEEDED = "snapshot deadline exceeded"
FREEZE_LIMIT = "fsfreeze is limited"
VM_KIND = "VirtualMachine"


def failure_deadline_seconds(snapshot: JSON) -> float:
    text = (snapshot.get("spec") or {}).get("failureDeadline")
    if text is None:
        return DEFAULT_FAILURE_DEADLINE_SECONDS
    try:
        return parse_duration(str(text))
    except ValueError:
        return DEFAULT_FAILURE_DEADLINE_SECONDS


def _phase(snapshot: JSON) -> str | None:
    return (snapshot.get("status") or {}).get("phase")


def progressing(snapshot: JSON) -> bool:
    return _phase(snapshot) not in (SUCCEEDED, FAILED)


def seconds_until_deadline(snapshot: JSON, now: datetime) -> float:
    """Time left before the failure deadline; 0 when there is none."""
    deadline = failure_deadline_seconds(snapshot)
    created = snapshot["metadata"].get("creationTimestamp")
    if deadline == 0 or not created:
        return 0.0
    return (parse_time(created) + timedelta(seconds=deadline) - now).total_seconds()


def deadline_exceeded(snapshot: JSON, now: datetime) -> bool:
    if _phase(snapshot) == FAILED:
        return True
    if not progressing(snapshot):
        return False
    return failure_deadline_seconds(snapshot) != 0 and seconds_until_deadline(snapshot, now) < 0


def deleting(snapshot: JSON | None) -> bool:
    return snapshot is not None and snapshot["metadata"].get("deletionTimestamp") is not None


def terminating(snapshot: JSON, now: datetime) -> bool:
    return deleting(snapshot) or deadline_exceeded(snapshot, now)


def content_ready(content: JSON | None) -> bool:
    return content is not None and (content.get("status") or {}).get("readyToUse") is True


def should_delete_content(snapshot: JSON, content: JSON) -> bool:
    """A content is kept only under ``deletionPolicy: Retain``, and only once it is ready."""
    policy = (snapshot.get("spec") or {}).get("deletionPolicy")
    return policy in (None, "Delete") or not content_ready(content)


def source_vm_key(snapshot: JSON) -> str | None:
    """``namespace/name`` of the snapshot's VM; None for any other kind of source."""
    source = (snapshot.get("spec") or {}).get("source") or {}
    if source.get("apiGroup") != GROUP_NAME or source.get("kind") != VM_KIND:
        return None
    return key_for(snapshot["metadata"].get("namespace"), source.get("name") or "")


class SnapshotSources:
    """Reads a snapshot's VM and VMI from the caches (shared with the content controller)."""

    def __init__(self, vm_store: Store[VirtualMachine], vmi_store: Store[VirtualMachineInstance]) -> None:
        self._vms = vm_store
        self._vmis = vmi_store

    def vm_and_vmi(self, snapshot: JSON) -> tuple[JSON | None, VirtualMachineInstance | None]:
        source = (snapshot.get("spec") or {}).get("source") or {}
        if source.get("kind") != VM_KIND:
            raise SourceError(f"unknown source {source}")
        key = key_for(snapshot["metadata"].get("namespace"), source.get("name") or "")
        vm = self._vms.get_by_key(key)
        if vm is None:
            return None, None
        return vm.to_dict(), self._vmis.get_by_key(key)

    def state(self, snapshot: JSON) -> tuple[SourceState | None, VirtualMachineInstance | None]:
        vm, vmi = self.vm_and_vmi(snapshot)
        if vm is None:
            return None, None
        return source_state(vm, vmi, snapshot["metadata"]["name"]), vmi


def unfreeze_if_frozen(
    freezer: Freezer, state: SourceState | None, vmi: VirtualMachineInstance | None
) -> None:
    """Thaws the guest this snapshot froze (KubeVirt's Unfreeze: only a locked VM with an agent)."""
    if state is None or vmi is None or not state.locked or not state.guest_agent or state.paused:
        return
    meta = vmi.metadata
    if meta is not None:
        freezer.unfreeze(meta.namespace or "", meta.name or "")


class SnapshotController:
    """Informers: snapshots (dicts), contents (dicts), VMs, VMIs, PVCs, StorageClasses, the start
    revisions (ControllerRevisions) and the VolumeSnapshotClasses."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        snapshot_store: Store[JSON],
        content_store: Store[JSON],
        sources: SnapshotSources,
        pvc_store: Store[JSON],
        storage_class_store: Store[JSON],
        snapshot_classes: SnapshotClasses,
        revision_store: Store[JSON],
        enqueue: Enqueue,
        clock: Clock = utc_now,
    ) -> None:
        self._api = api
        self._events = events
        self._snapshots = snapshot_store
        self._contents = content_store
        self._sources = sources
        self._pvcs = pvc_store
        self._storage_classes = storage_class_store
        self._snapshot_classes = snapshot_classes
        self._revisions = revision_store
        self._enqueue = enqueue
        self._clock = clock
        self._log = get_logger()

    def reconcile(self, key: str) -> None:
        cached = self._snapshots.get_by_key(key)
        if cached is None:
            return
        snapshot = copy.deepcopy(cached)
        now = self._clock()
        state, vmi = self._sources.state(snapshot)
        content = self._contents.get_by_key(
            key_for(snapshot["metadata"].get("namespace"), content_name(snapshot))
        )
        ending = terminating(snapshot, now)
        if not ending:
            snapshot = self._set_finalizer(snapshot, present=True)
        retry: float | None = None
        can_remove_finalizer = True
        if snapshot.get("status") is not None and state is not None:
            if progressing(snapshot) and not ending:
                if not state.locked:
                    lock(self._api, state, self._pvcs, snapshot["metadata"]["name"])
                    retry = RETRY_SECONDS
                elif content is None:
                    self._create_content(snapshot, state, vmi)
                can_remove_finalizer = False
            else:
                if self._can_unlock(snapshot, content, now):
                    unlock(self._api, state, snapshot["metadata"]["name"])
                can_remove_finalizer = not state.locked
        if ending and content is not None and should_delete_content(snapshot, content):
            with contextlib.suppress(NotFoundError):
                self._api.delete(
                    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
                    content["metadata"].get("namespace"),
                    content["metadata"]["name"],
                )
        snapshot = self._update_status(snapshot, state, content, now)
        if deleting(snapshot) and can_remove_finalizer:
            self._set_finalizer(snapshot, present=False)
        if retry is None:
            left = seconds_until_deadline(snapshot, now)
            retry = left if left > 0 and progressing(snapshot) else None
        if retry is not None:
            raise RequeueAfter(retry)

    def _can_unlock(self, snapshot: JSON, content: JSON | None, now: datetime) -> bool:
        if not progressing(snapshot):
            return True
        gone = content is None or not should_delete_content(snapshot, content)
        return terminating(snapshot, now) and gone

    def _set_finalizer(self, snapshot: JSON, *, present: bool) -> JSON:
        current = finalizers(snapshot)
        if (SNAPSHOT_FINALIZER in current) == present:
            return snapshot
        wanted = (
            [*current, SNAPSHOT_FINALIZER] if present else [f for f in current if f != SNAPSHOT_FINALIZER]
        )
        meta = snapshot["metadata"]
        return self._api.patch(
            VIRTUAL_MACHINE_SNAPSHOTS,
            meta.get("namespace"),
            meta["name"],
            finalizers_patch(finalizers_test_value(snapshot), wanted),
        )

    def _create_content(self, snapshot: JSON, state: SourceState, vmi: VirtualMachineInstance | None) -> None:
        recorded = recorded_vm(state, vmi, self._revisions)
        meta = snapshot["metadata"]
        namespace = meta.get("namespace") or ""
        name = content_name(snapshot)
        spec: JSON = {"source": {"virtualMachine": recorded}, "virtualMachineSnapshotName": meta["name"]}
        backups = self._volume_backups(state.vm, meta["uid"])
        if backups:  # omitted when empty, as KubeVirt writes it
            spec["volumeBackups"] = backups
        content = {
            "apiVersion": SNAPSHOT_API_VERSION,
            "kind": "VirtualMachineSnapshotContent",
            "metadata": {"name": name, "namespace": namespace, "finalizers": [CONTENT_FINALIZER]},
            "spec": spec,
        }
        with contextlib.suppress(AlreadyExistsError):
            self._api.create(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, namespace, content)
        self._events.event(
            snapshot,
            "Normal",
            CONTENT_CREATED_REASON,
            f"Successfully created VirtualMachineSnapshotContent {name}",
        )

    def _volume_backups(self, vm: JSON, snapshot_uid: str) -> list[JSON]:
        """One backup per claim that is bound, has a StorageClass and a VolumeSnapshotClass for it."""
        namespace = vm["metadata"].get("namespace") or ""
        classes_store = self._snapshot_classes()
        classes = classes_store.list() if classes_store is not None else []
        volumes = (((vm.get("spec") or {}).get("template") or {}).get("spec") or {}).get("volumes") or []
        backups: list[JSON] = []
        for volume in volumes:
            claim = volume_claim(volume)
            pvc = self._pvcs.get_by_key(key_for(namespace, claim)) if claim else None
            if pvc is None or (pvc.get("status") or {}).get("phase") != "Bound":
                continue
            storage_class = claim_storage_class(self._pvcs, namespace, claim)
            if not storage_class or not snapshot_class_for(storage_class, self._storage_classes, classes):
                self._log.warning(
                    "volume cannot be snapshotted: no VolumeSnapshotClass", volume=volume["name"]
                )
                continue
            backups.append(
                {
                    "volumeName": volume["name"],
                    "persistentVolumeClaim": {
                        "metadata": without_managed_fields(pvc["metadata"]),
                        "spec": copy.deepcopy(pvc.get("spec") or {}),
                    },
                    "volumeSnapshotName": volume_snapshot_name(snapshot_uid, volume["name"]),
                }
            )
        return backups

    def _update_status(
        self, snapshot: JSON, state: SourceState | None, content: JSON | None, now: datetime
    ) -> JSON:
        before = snapshot.get("status")
        status: dict[str, Any] = copy.deepcopy(before) if before is not None else {"readyToUse": False}
        if state is not None:
            status["sourceUID"] = state.vm["metadata"].get("uid")
        content_status = (content or {}).get("status")
        if content is not None and content_status is not None:
            status["virtualMachineSnapshotContentName"] = content["metadata"]["name"]
            for field in ("creationTime", "readyToUse", "error"):
                _copy_field(content_status, status, field)
        conditions = status.get("conditions")
        probe = {**snapshot, "status": status}
        if deadline_exceeded(probe, now):
            status["phase"] = FAILED
            conditions = with_condition(conditions, FAILURE, True, DEADLINE_EXCEEDED, now)
            conditions = with_condition(conditions, PROGRESSING, False, "Operation failed", now)
        elif status.get("phase") == SUCCEEDED or status.get("creationTime") is not None:
            status["phase"] = SUCCEEDED
            conditions = with_condition(conditions, PROGRESSING, False, "Operation complete", now)
            _set_snapshot_volumes(status, content)
        else:
            status["phase"] = IN_PROGRESS
            if state is not None:
                conditions = with_condition(conditions, PROGRESSING, state.locked, state.lock_message, now)
                _update_indications(status, state)
            else:
                conditions = with_condition(conditions, PROGRESSING, False, "Source does not exist", now)
            if deleting(snapshot):
                status["phase"] = DELETING
                conditions = with_condition(conditions, PROGRESSING, False, "VM snapshot is deleting", now)
        if status.get("readyToUse") is True:
            conditions = with_condition(conditions, READY, True, "Ready", now)
        else:
            conditions = with_condition(conditions, READY, False, "Not ready", now)
        if (status.get("error") or {}).get("message") is not None:
            conditions = with_condition(conditions, PROGRESSING, False, "In error state", now)
        status["conditions"] = conditions
        if status == before:
            return snapshot
        snapshot = {**snapshot, "status": status}
        return self._api.update_status(
            VIRTUAL_MACHINE_SNAPSHOTS, snapshot["metadata"].get("namespace"), snapshot
        )

    # Informer events.
    def on_snapshot_add(self, snapshot: JSON) -> None:
        self._enqueue(key_of(snapshot))

    def on_snapshot_update(self, old: JSON, new: JSON) -> None:
        self._enqueue(key_of(new))

    def on_snapshot_delete(self, snapshot: JSON) -> None:
        pass  # a snapshot that is gone needs nothing more (its finalizer held it until it was done)

    def on_content_add(self, content: JSON) -> None:
        self._enqueue_owner_snapshot(content)

    def on_content_update(self, old: JSON, new: JSON) -> None:
        self._enqueue_owner_snapshot(new)

    def on_content_delete(self, content: JSON) -> None:
        self._enqueue_owner_snapshot(content)

    def _enqueue_owner_snapshot(self, content: JSON) -> None:
        name = (content.get("spec") or {}).get("virtualMachineSnapshotName")
        if name:
            self._enqueue(key_for(content["metadata"].get("namespace"), name))

    def on_vm_add(self, vm: VirtualMachine) -> None:
        self._enqueue_snapshots_of(key_of(vm))

    def on_vm_update(self, old: VirtualMachine, new: VirtualMachine) -> None:
        self._enqueue_snapshots_of(key_of(new))

    def on_vm_delete(self, vm: VirtualMachine) -> None:
        self._enqueue_snapshots_of(key_of(vm))

    def on_vmi_add(self, vmi: VirtualMachineInstance) -> None:
        self._enqueue_snapshots_of(key_of(vmi))

    def on_vmi_update(self, old: VirtualMachineInstance, new: VirtualMachineInstance) -> None:
        self._enqueue_snapshots_of(key_of(new))

    def on_vmi_delete(self, vmi: VirtualMachineInstance) -> None:
        self._enqueue_snapshots_of(key_of(vmi))

    def _enqueue_snapshots_of(self, vm_key: str) -> None:
        for snapshot in self._snapshots.by_index(SOURCE_INDEX, vm_key):
            self._enqueue(key_of(snapshot))


SOURCE_INDEX = "vm"


def source_index(snapshot: JSON) -> list[str]:
    """Indexes snapshots by their VM's ``namespace/name``."""
    key = source_vm_key(snapshot)
    return [key] if key is not None else []


def _copy_field(source: JSON, target: dict[str, Any], field: str) -> None:
    """Go's pointer copy: a field the source lacks is dropped from the target."""
    if source.get(field) is None:
        target.pop(field, None)
    else:
        target[field] = copy.deepcopy(source[field])


def _update_indications(status: dict[str, Any], state: SourceState) -> None:
    """Indications accumulate while the snapshot is in progress and only for a running VM."""
    if not state.online:
        return
    indications = set(status.get("indications") or ())
    indications.add("Online")
    if state.paused:
        indications.add("Paused")
    elif state.guest_agent:
        indications.add("GuestAgent")
        if FREEZE_LIMIT in ((status.get("error") or {}).get("message") or ""):
            indications.add("QuiesceTimeout")
    else:
        indications.add("NoGuestAgent")
    status["indications"] = sorted(indications)


def _set_snapshot_volumes(status: dict[str, Any], content: JSON | None) -> None:
    if content is None:
        return
    vm = ((content.get("spec") or {}).get("source") or {}).get("virtualMachine") or {}
    template = (vm.get("spec") or {}).get("template")
    if template is None:
        return
    backed_up = {backup.get("volumeName") for backup in (content["spec"].get("volumeBackups") or ())}
    names = [volume.get("name") for volume in ((template.get("spec") or {}).get("volumes") or ())]
    lists: dict[str, list[str]] = {}
    included = [name for name in names if name in backed_up]
    excluded = [name for name in names if name not in backed_up]
    if included:
        lists["includedVolumes"] = included
    if excluded:
        lists["excludedVolumes"] = excluded
    status["snapshotVolumes"] = lists
