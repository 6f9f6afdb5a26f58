"""The VirtualMachineRestore controller (KubeVirt v1.6's ``pkg/storage/snapshot/restore.go``).

One pass per work item, each write ending the pass (its watch event brings the restore back):

1. a new restore gets its status (Progressing, not Ready); the target VM (``spec.target``) is read;
2. a deleted restore unlocks the VM, reports "VM restore is deleting", then drops its finalizer;
3. a complete or failed restore is left alone;
4. the restore is owned by the target VM (if it exists) and gets its finalizer;
5. while a VMI of the target exists, ``targetReadinessPolicy`` decides: wait, stop the VM, or fail;
6. the snapshot must be ready and, for an existing VM, taken of that VM; the VM is locked
   (``status.restoreInProgress``);
7. ``status.restores`` lists one claim per backed-up volume, each created from its VolumeSnapshot;
8. the target's spec is rewritten to use them (a new VM is created Halted, with ``spec.patches``);
9. obsolete DataVolumes are deleted, the VM unlocked, and the restore marked complete.

KubeVirt's condition texts, events and names are kept (:mod:`.restore_status` holds them); what the
steps write is built by :mod:`.restore_spec`. Errors of steps 6-9 become the conditions' reason and a
Warning event, and the item is retried with backoff; a restore only *fails* (a ``Failure`` condition,
never retried) when its target stays running past the grace period or with FailImmediate.

Differences from KubeVirt, all in its failure paths:

* WaitGracePeriod: the item is also requeued at the deadline, so the failure is reported on time
  (KubeVirt only notices it on the next event or resync).
* StopTarget: virt-controller has no client for virt-api's ``stop`` subresource; the VM is patched as
  that handler would patch it (status ``stateChangeRequests`` or ``spec.runStrategy``/``running``).
* DataVolumes are read through the API (there is no DataVolume informer), and polled while the
  restore waits for them. A DataVolume create answered NotFound means CDI is not installed: the claim
  is kept and the restore goes on without the DataVolume.
* An existing VM's instance type revision that is missing is recreated (KubeVirt errors), and a
  revision that already exists keeps its name on the VM (KubeVirt's client leaves it empty).
* Revisions are claimed after a fresh read from the API, so a just-created one is not missed.
* Backend storage (persistent TPM/EFI claims) is not handled.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from kubevirt.client import (
    PERSISTENT_VOLUME_CLAIMS,
    VIRTUAL_MACHINES,
    EventSink,
    KubeApi,
)
from kubevirt.client.errors import AlreadyExistsError, ApiError, NotFoundError
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    DATA_VOLUMES,
    VIRTUAL_MACHINE_RESTORES,
)
from kubevirt.controller import RequeueAfter, Store, key_for, key_of
from kubevirt.instancetype.revision import RevisionError, same_spec
from kubevirt.log import get_logger
from kubevirt.virt_controller.watch.common import (
    Clock,
    Enqueue,
    controller_ref_of_dict,
    finalizers_patch,
    format_time,
    parse_time,
    utc_now,
)
from kubevirt.virt_controller.watch.snapshot.common import (
    FAILURE,
    RESTORE_FINALIZER,
    RETRY_SECONDS,
    SNAPSHOT_API_VERSION,
    finalizers,
    owner_ref,
    with_condition,
)
from kubevirt.virt_controller.watch.snapshot.restore_spec import (
    POPULATED_FOR_ANNOTATION,
    PRE_POPULATED_ANNOTATION,
    RESTORE_NAME_ANNOTATION,
    RESTORE_OWNED_BY_VM_ANNOTATION,
    RestoreError,
    annotation_path,
    annotations_of,
    apply_vm_patches,
    data_volume_from_template,
    halt_patch,
    has_last_restore_annotation,
    is_in_place,
    meta_of,
    owned_by_source_vm,
    restore_pvc_definition,
    restore_volume_name,
    restored_vm,
    run_strategy,
    set_or_drop,
    status_of,
    stop_request_patch,
    template_index,
    templates_of,
    volumes_of,
)
from kubevirt.virt_controller.watch.snapshot.restore_status import (
    CREATING_PVCS,
    DEFAULT_GRACE_PERIOD,
    FAIL_IMMEDIATE,
    GRACE_PERIOD_EXCEEDED_ERROR,
    INITIALIZING,
    OPERATION_COMPLETE,
    RESTORE_COMPLETE_EVENT,
    RESTORE_DATA_VOLUME_CREATE_ERROR_EVENT,
    RESTORE_DELETING,
    RESTORE_ERROR_EVENT,
    RESTORE_FAILED_EVENT,
    RESTORE_TARGET_NOT_READY_EVENT,
    RESTORE_TO_EXISTING_TARGET_ERROR,
    STOP_TARGET,
    STOP_TARGET_MESSAGE,
    TARGET_NOT_READY_FAILURE_MESSAGE,
    UPDATING_TARGET,
    VMI_EXISTS_EVENT_MESSAGE,
    WAIT_EVENTUALLY,
    WAIT_EVENTUALLY_MESSAGE,
    WAIT_GRACE_PERIOD,
    WAIT_GRACE_PERIOD_MESSAGE,
    WAITING_FOR_PVCS,
    WAITING_FOR_TARGET,
    complete_message,
    is_progressing,
    set_conditions,
)
from kubevirt_api.core.v1 import (
    FINAL_VMI_PHASES,
    VirtualMachine,
    VirtualMachineInstance,
    VirtualMachineRunStrategy,
)
from kubevirt_api.core.v1.constants import API_VERSION, GROUP_NAME
from kubevirt_api.view import JSON

# The restore store's index of restores by target VM ("<namespace>/<vm name>").
RESTORE_TARGET_INDEX: Final = "vm"

# DataVolume phases in which a restored DataVolume needs nothing more.
_DATA_VOLUME_DONE_PHASES: Final = frozenset({"Succeeded", "WaitForFirstConsumer", "PendingPopulation"})
# Binding modes under which a Pending claim is waited for (None: no class, or the class names none).
_WAITED_BINDING_MODES: Final = frozenset({None, "Immediate"})
_REVISION_MATCHERS: Final = ("instancetype", "preference")
_RunStrategy = VirtualMachineRunStrategy

_log = get_logger(controller="restore")


class TargetLockedError(Exception):
    """Another restore holds the target VM: retried with backoff, nothing reported on the restore."""


def _error_text(err: Exception) -> str:
    """What Go's ``err.Error()`` prints: an API error's message, or the error's own text."""
    if isinstance(err, ApiError):
        return err.message or str(err)
    return str(err)


def _vm_owner_ref(vm: Mapping[str, Any]) -> JSON:
    return owner_ref(API_VERSION, "VirtualMachine", vm)


def _conflict(name: str, why: str) -> RestoreError:
    """virt-api's refusal of a stop request, as its client reports it."""
    return RestoreError(f'Operation cannot be fulfilled on virtualmachine.{GROUP_NAME} "{name}": {why}')


def restore_target_index(restore: Any) -> Iterable[str]:
    """The restore store's ``vm`` index: the key of the VM a restore targets."""
    target = ((restore.get("spec") or {}).get("target") or {}) if isinstance(restore, Mapping) else {}
    if target.get("apiGroup") != GROUP_NAME or target.get("kind") != "VirtualMachine":
        return ()
    return (key_for(meta_of(restore).get("namespace"), str(target.get("name") or "")),)


class RestoreController:
    """Reconciles VirtualMachineRestores. Reads restores, snapshots, contents, VMs, VMIs, claims,
    storage classes, VolumeSnapshots and ControllerRevisions from caches; watches restores, claims
    annotated with a restore's name, and target VMs."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        restore_store: Store[JSON],
        snapshot_store: Store[JSON],
        content_store: Store[JSON],
        vm_store: Store[VirtualMachine],
        vmi_store: Store[VirtualMachineInstance],
        pvc_store: Store[JSON],
        storage_class_store: Store[JSON],
        volume_snapshots: Callable[[], Store[JSON] | None],
        revision_store: Store[JSON],
        enqueue: Enqueue,
        clock: Clock = utc_now,
    ) -> None:
        self._api = api
        self._events = events
        self._restores = restore_store
        self._restores.add_indexers({RESTORE_TARGET_INDEX: restore_target_index})
        self._snapshots = snapshot_store
        self._contents = content_store
        self._vms = vm_store
        self._vmis = vmi_store
        self._pvcs = pvc_store
        self._storage_classes = storage_class_store
        # None while the VolumeSnapshot CRD is not installed: every VolumeSnapshot is missing then.
        self._volume_snapshots = volume_snapshots
        self._revisions = revision_store
        self._enqueue = enqueue
        self._clock = clock

    # Informer handlers.

    def on_restore_add(self, obj: Any) -> None:
        self._enqueue(key_of(obj))

    def on_restore_update(self, _old: Any, new: Any) -> None:
        self._enqueue(key_of(new))

    def on_restore_delete(self, obj: Any) -> None:
        self._enqueue(key_of(obj))

    def on_pvc_add(self, pvc: Any) -> None:
        self._enqueue_annotated(pvc)

    def on_pvc_update(self, _old: Any, new: Any) -> None:
        self._enqueue_annotated(new)

    def on_pvc_delete(self, _pvc: Any) -> None:
        """KubeVirt does not watch claim deletions."""

    def on_vm_add(self, vm: VirtualMachine) -> None:
        self._enqueue_for_vm(vm)

    def on_vm_update(self, _old: VirtualMachine, new: VirtualMachine) -> None:
        self._enqueue_for_vm(new)

    def on_vm_delete(self, _vm: VirtualMachine) -> None:
        """KubeVirt does not watch VM deletions: the restores it owns are garbage-collected with it."""

    def _enqueue_annotated(self, obj: Mapping[str, Any]) -> None:
        name = annotations_of(obj).get(RESTORE_NAME_ANNOTATION)
        if name is not None:
            self._enqueue(key_for(meta_of(obj).get("namespace"), name))

    def _enqueue_for_vm(self, vm: VirtualMachine) -> None:
        for restore in self._restores.by_index(RESTORE_TARGET_INDEX, key_of(vm)):
            self._enqueue(key_of(restore))

    # The pass.

    def reconcile(self, key: str) -> None:
        restore = self._restores.get_by_key(key)
        if restore is None:
            return
        self._sync(copy.deepcopy(restore))

    def _sync(self, restore: JSON) -> None:
        if restore.get("status") is None:
            initialised = copy.deepcopy(restore)
            initialised["status"] = {"complete": False}
            set_conditions(initialised, self._clock(), True, False, INITIALIZING)
            self._write_status(restore, initialised)
            return
        try:
            vm = self._target(restore)
        except RestoreError as err:
            self._report_error(restore, str(err))
            raise
        if meta_of(restore).get("deletionTimestamp"):
            self._handle_deletion(restore, vm)
            return
        if not is_progressing(restore):
            return
        restore = self._own(restore, vm)
        if vm is not None and self._vmis.get_by_key(target_key(restore)) is not None:
            self._handle_target_not_ready(restore, vm)
            return
        self._restore(restore, vm)

    def _restore(self, restore: JSON, vm: JSON | None) -> None:
        """Steps 6-9 of the module docstring; ``restore`` keeps the status as read, for errors."""
        out = copy.deepcopy(restore)
        try:
            snapshot = self._snapshot(restore)
            if vm is not None and not has_last_restore_annotation(restore, vm):
                source_uid = status_of(snapshot).get("sourceUID")
                if source_uid is not None and source_uid != meta_of(vm).get("uid"):
                    raise RestoreError(RESTORE_TO_EXISTING_TARGET_ERROR)
        except RestoreError as err:
            self._report_error(restore, str(err))
            raise
        vm = self._lock(restore, vm)
        now = self._clock()
        try:
            content = self._content(snapshot)
            if self._reconcile_volume_restores(out, vm, content):
                set_conditions(out, now, True, False, CREATING_PVCS, WAITING_FOR_PVCS)
                self._write_status(restore, out)
                return
            wait = self._reconcile_target(out, vm, content)
            if wait is not None:
                set_conditions(out, now, True, False, UPDATING_TARGET, WAITING_FOR_TARGET)
                self._write_status(restore, out)
                if wait > 0:
                    raise RequeueAfter(wait)
                return
            self._delete_obsolete_data_volumes(out)
            self._unlock(out, vm)
        except (RestoreError, ApiError) as err:
            self._report_error(restore, _error_text(err))
            raise
        self._events.event(_as_event_object(out), "Normal", RESTORE_COMPLETE_EVENT, complete_message(out))
        out["status"]["complete"] = True
        out["status"]["restoreTime"] = format_time(now)
        set_conditions(out, now, False, True, OPERATION_COMPLETE)
        self._write_status(restore, out)

    # Status writes.

    def _write_status(self, original: Mapping[str, Any], updated: JSON) -> None:
        """Written through the status subresource, and only when it changed."""
        if original.get("status") != updated.get("status"):
            self._api.update_status(VIRTUAL_MACHINE_RESTORES, meta_of(updated).get("namespace"), updated)

    def _report_error(self, restore: Mapping[str, Any], text: str, *, fail: bool = False) -> None:
        """KubeVirt's doUpdateErrorWithFailure: the text as both conditions' reason (and a Failure
        condition when ``fail``), and a Warning event."""
        updated = copy.deepcopy(dict(restore))
        now = self._clock()
        set_conditions(updated, now, False, False, text)
        reason, message = RESTORE_ERROR_EVENT, f"VirtualMachineRestore encountered error {text}"
        if fail:
            reason, message = RESTORE_FAILED_EVENT, f"VirtualMachineRestore failed {text}"
            updated["status"]["conditions"] = with_condition(
                updated["status"]["conditions"], FAILURE, True, text, now
            )
        self._events.event(_as_event_object(restore), "Warning", reason, message)
        self._write_status(restore, updated)

    # Target.

    def _target(self, restore: Mapping[str, Any]) -> JSON | None:
        """The target VM as JSON, None if it does not exist yet; only VMs can be restored."""
        target = (restore.get("spec") or {}).get("target") or {}
        if target.get("kind") != "VirtualMachine":
            shown = (
                f"{{APIGroup:{target.get('apiGroup')} Kind:{target.get('kind')} Name:{target.get('name')}}}"
            )
            raise RestoreError(f"unknown source {shown}")
        vm = self._vms.get_by_key(target_key(restore))
        return vm.to_dict() if vm is not None else None

    def _own(self, restore: JSON, vm: JSON | None) -> JSON:
        """The target VM owns the restore (once it exists), and the restore holds its finalizer."""
        updated = copy.deepcopy(restore)
        meta = updated.setdefault("metadata", {})
        if not meta.get("ownerReferences") and vm is not None:
            meta["ownerReferences"] = [_vm_owner_ref(vm)]
        if RESTORE_FINALIZER not in finalizers(updated):
            meta["finalizers"] = [*finalizers(updated), RESTORE_FINALIZER]
        if meta == meta_of(restore):
            return restore
        # A full update, as KubeVirt's; its errors are retried without a report.
        return self._api.update(VIRTUAL_MACHINE_RESTORES, meta.get("namespace"), updated)

    def _lock(self, restore: Mapping[str, Any], vm: JSON | None) -> JSON | None:
        """Marks the target VM as being restored (``status.restoreInProgress``), unless it already
        carries this restore's result."""
        if vm is None or has_last_restore_annotation(restore, vm):
            return vm
        name = meta_of(restore).get("name")
        holder = status_of(vm).get("restoreInProgress")
        if holder is not None and holder != name:
            raise TargetLockedError(f"vm restore {holder} in progress")
        if holder is not None:
            return vm
        locked = copy.deepcopy(vm)
        locked.setdefault("status", {})["restoreInProgress"] = name
        return self._api.update_status(VIRTUAL_MACHINES, meta_of(vm).get("namespace"), locked)

    def _unlock(self, restore: Mapping[str, Any], vm: JSON | None) -> None:
        """Clears this restore's lock on the VM, and any memory dump request with it."""
        if vm is None:
            raise RestoreError("At this point target should exist")
        if status_of(vm).get("restoreInProgress") != meta_of(restore).get("name"):
            return
        unlocked = copy.deepcopy(vm)
        unlocked["status"].pop("restoreInProgress", None)
        unlocked["status"].pop("memoryDumpRequest", None)
        self._api.update_status(VIRTUAL_MACHINES, meta_of(vm).get("namespace"), unlocked)

    # Deletion.

    def _handle_deletion(self, restore: JSON, vm: JSON | None) -> None:
        """Unlocks the VM and reports the deletion, then lets the restore go; nothing is rolled back."""
        current = finalizers(restore)
        if RESTORE_FINALIZER not in current:
            return
        if vm is not None:
            try:
                self._unlock(restore, vm)
            except ApiError as err:
                self._report_error(restore, _error_text(err))
                raise
        updated = copy.deepcopy(restore)
        set_conditions(updated, self._clock(), False, False, RESTORE_DELETING)
        if updated.get("status") != restore.get("status"):
            self._write_status(restore, updated)
            return
        wanted = [name for name in current if name != RESTORE_FINALIZER]
        meta = meta_of(restore)
        self._api.patch(
            VIRTUAL_MACHINE_RESTORES, meta.get("namespace"), meta["name"], finalizers_patch(current, wanted)
        )

    # targetReadinessPolicy.

    def _handle_target_not_ready(self, restore: JSON, vm: JSON) -> None:
        """A VMI of the target exists: wait for it to go, stop the VM, or fail, as the policy says."""
        policy = (restore.get("spec") or {}).get("targetReadinessPolicy")
        policy = WAIT_GRACE_PERIOD if policy is None else policy
        remaining: float | None = None
        if policy == WAIT_EVENTUALLY:
            reason = WAIT_EVENTUALLY_MESSAGE
        elif policy == STOP_TARGET:
            self._stop_target(restore, vm)
            return
        elif policy == WAIT_GRACE_PERIOD:
            remaining = self._grace_period_left(restore)
            if remaining < 0:
                self._report_error(restore, GRACE_PERIOD_EXCEEDED_ERROR, fail=True)
                return
            reason = WAIT_GRACE_PERIOD_MESSAGE
        elif policy == FAIL_IMMEDIATE:
            self._report_error(restore, TARGET_NOT_READY_FAILURE_MESSAGE, fail=True)
            return
        else:
            raise ValueError(f"unknown targetReadinessPolicy: {policy}")  # retried, not reported
        self._events.event(
            _as_event_object(restore), "Warning", RESTORE_TARGET_NOT_READY_EVENT, VMI_EXISTS_EVENT_MESSAGE
        )
        updated = copy.deepcopy(restore)
        set_conditions(updated, self._clock(), False, False, reason)
        self._write_status(restore, updated)
        if remaining is not None:
            # Unlike KubeVirt, look again at the deadline so that the failure is reported on time.
            raise RequeueAfter(remaining if remaining > 0 else 1.0)

    def _grace_period_left(self, restore: Mapping[str, Any]) -> float:
        created = meta_of(restore).get("creationTimestamp")
        if not created:
            return -1.0  # Go's zero time: long past
        deadline = parse_time(str(created)) + DEFAULT_GRACE_PERIOD
        return (deadline - self._clock()).total_seconds()

    def _stop_target(self, restore: JSON, vm: JSON) -> None:
        updated = copy.deepcopy(restore)
        self._events.event(
            _as_event_object(restore), "Warning", RESTORE_TARGET_NOT_READY_EVENT, STOP_TARGET_MESSAGE
        )
        set_conditions(updated, self._clock(), False, False, STOP_TARGET_MESSAGE)
        try:
            self._stop(vm)
        except (RestoreError, ApiError) as err:
            self._report_error(updated, _error_text(err))
            raise
        self._write_status(restore, updated)

    def _stop(self, vm: JSON) -> None:
        """virt-api's ``stop`` with no options: a Stop request for the VMI when the run strategy
        lets the user start and stop it, or the run strategy switched to Halted otherwise."""
        meta = meta_of(vm)
        name, namespace = str(meta.get("name", "")), meta.get("namespace")
        vmi = self._vmis.get_by_key(key_for(namespace, name))
        phase = vmi.status.phase if vmi is not None and vmi.status is not None else None
        running = vmi is not None and phase not in FINAL_VMI_PHASES
        strategy = run_strategy(vm)
        if (
            strategy in (_RunStrategy.HALTED, _RunStrategy.MANUAL, _RunStrategy.RERUN_ON_FAILURE)
            and not running
        ):
            raise _conflict(name, "VM is not running")
        if strategy == _RunStrategy.HALTED:
            raise _conflict(name, "Halted only supports manual stop requests with a shorter graceperiod")
        if strategy in (_RunStrategy.MANUAL, _RunStrategy.RERUN_ON_FAILURE):
            uid = vmi.metadata.uid if vmi is not None and vmi.metadata is not None else None
            self._api.patch(
                VIRTUAL_MACHINES, namespace, name, stop_request_patch(vm, uid), subresource="status"
            )
        elif strategy in (_RunStrategy.ALWAYS, _RunStrategy.ONCE):
            self._api.patch(VIRTUAL_MACHINES, namespace, name, halt_patch(vm))

    # Snapshot and content.

    def _snapshot(self, restore: Mapping[str, Any]) -> JSON:
        key = key_for(
            meta_of(restore).get("namespace"),
            str((restore.get("spec") or {}).get("virtualMachineSnapshotName", "")),
        )
        snapshot = self._snapshots.get_by_key(key)
        if snapshot is None:
            raise RestoreError(f"VMSnapshot {key} does not exist")
        status = status_of(snapshot)
        if status.get("phase") == "Failed":
            raise RestoreError(f"VMSnapshot {key} failed and is invalid to use")
        if status.get("readyToUse") is not True:
            raise RestoreError(f"VMSnapshot {key} not ready")
        if not status.get("virtualMachineSnapshotContentName"):
            raise RestoreError(f"no snapshot content name in {key}")
        return snapshot

    def _content(self, snapshot: Mapping[str, Any]) -> JSON:
        key = key_for(
            meta_of(snapshot).get("namespace"), str(status_of(snapshot)["virtualMachineSnapshotContentName"])
        )
        content = self._contents.get_by_key(key)
        if content is None:
            raise RestoreError(f"VMSnapshotContent {key} does not exist")
        if status_of(content).get("readyToUse") is not True:
            raise RestoreError(f"VMSnapshotContent {key} not ready")
        if not ((content.get("spec") or {}).get("source") or {}).get("virtualMachine"):
            raise RestoreError("unexpected snapshot source")
        return content

    # Claims.

    def _reconcile_volume_restores(self, restore: JSON, vm: JSON | None, content: Mapping[str, Any]) -> bool:
        """Lists one restored claim per backed-up volume, then creates the missing claims (an
        InPlace restore first deletes the claim it replaces). True while anything changed or a
        claim is not bound yet."""
        source_vm = content["spec"]["source"]["virtualMachine"]
        status = restore["status"]
        current = status.get("restores") or []
        restores = self._volume_restores(restore, current, content)
        if restores != current:
            if current:
                _log.warning("VMRestore in strange state", name=meta_of(restore).get("name"))
            status["restores"] = restores
            return True
        namespace = meta_of(restore).get("namespace")
        changed = False
        for index, entry in enumerate(restores):
            pvc = self._pvcs.get_by_key(key_for(namespace, entry["persistentVolumeClaim"]))
            if pvc is None:
                backup = _backup(content, entry["volumeName"])
                self._create_restore_pvc(restore, vm, backup, entry, source_vm)
                changed = True
            elif is_in_place(restore) and not has_last_restore_annotation(restore, pvc):
                self._replace_in_place(restore, pvc, status["restores"][index])
                changed = True
            elif status_of(pvc).get("phase") == "Pending":
                changed = self._waits_for_binding(pvc) or changed
            elif status_of(pvc).get("phase") != "Bound":
                phase = status_of(pvc).get("phase", "")
                raise RestoreError(f'PVC {namespace}/{meta_of(pvc).get("name")} in status "{phase}"')
        return changed

    @staticmethod
    def _volume_restores(
        restore: Mapping[str, Any], current: list[JSON], content: Mapping[str, Any]
    ) -> list[JSON]:
        source_vm = content["spec"]["source"]["virtualMachine"]
        memory_dumps = {v.get("name") for v in volumes_of(source_vm) if "memoryDump" in v}
        restores: list[JSON] = []
        for backup in (content.get("spec") or {}).get("volumeBackups") or []:
            name = backup.get("volumeName")
            if name in memory_dumps:
                continue
            existing = next((entry for entry in current if entry.get("volumeName") == name), None)
            if existing is not None:
                restores.append(existing)
                continue
            if not backup.get("volumeSnapshotName"):
                raise RestoreError(f"VolumeSnapshotName missing {json.dumps(backup, sort_keys=True)}")
            claim = str(meta_of(backup.get("persistentVolumeClaim") or {}).get("name", ""))
            restores.append(
                {
                    "volumeName": name,
                    "persistentVolumeClaim": restore_volume_name(restore, str(name), claim),
                    "volumeSnapshotName": backup["volumeSnapshotName"],
                }
            )
        return restores

    def _create_restore_pvc(
        self,
        restore: Mapping[str, Any],
        vm: JSON | None,
        backup: Mapping[str, Any],
        entry: Mapping[str, Any],
        source_vm: Mapping[str, Any],
    ) -> None:
        namespace = meta_of(restore).get("namespace")
        if not backup.get("volumeSnapshotName"):
            raise RestoreError("missing VolumeSnapshot name")
        snapshot_name = str(backup["volumeSnapshotName"])
        snapshots = self._volume_snapshots()
        volume_snapshot = (
            snapshots.get_by_key(key_for(namespace, snapshot_name)) if snapshots is not None else None
        )
        if volume_snapshot is None:
            raise RestoreError(f"missing volumeSnapshot {snapshot_name}")
        pvc = restore_pvc_definition(
            restore, entry["persistentVolumeClaim"], volume_snapshot, backup, source_vm
        )
        meta = pvc["metadata"]
        if entry.get("dataVolumeName"):
            # The DataVolume whose claim an InPlace restore replaced adopts the new one.
            meta["annotations"][POPULATED_FOR_ANNOTATION] = entry["dataVolumeName"]
        elif vm is not None:
            meta["ownerReferences"] = [_vm_owner_ref(vm)]
        elif owned_by_source_vm(backup, source_vm):
            # The VM does not exist yet: it takes the claim once created.
            meta["annotations"][RESTORE_OWNED_BY_VM_ANNOTATION] = meta_of(restore).get("name")
        self._api.create(PERSISTENT_VOLUME_CLAIMS, namespace, pvc)

    def _replace_in_place(self, restore: Mapping[str, Any], pvc: Mapping[str, Any], entry: JSON) -> None:
        """Deletes the claim an InPlace restore replaces; its DataVolume, if any, is first marked
        prepopulated so that CDI does not recreate the claim meanwhile."""
        namespace, restore_name = meta_of(restore).get("namespace"), str(meta_of(restore).get("name", ""))
        owner = controller_ref_of_dict(pvc)
        if owner is not None and owner.get("kind") == "DataVolume":
            entry["dataVolumeName"] = owner["name"]
            self._api.patch(
                DATA_VOLUMES,
                namespace,
                str(owner["name"]),
                [
                    {"op": "add", "path": annotation_path(RESTORE_NAME_ANNOTATION), "value": restore_name},
                    {"op": "add", "path": annotation_path(PRE_POPULATED_ANNOTATION), "value": "true"},
                ],
            )
        _log.info(
            "deleting claim replaced by an InPlace restore",
            namespace=namespace,
            name=meta_of(pvc).get("name"),
        )
        self._api.delete(PERSISTENT_VOLUME_CLAIMS, namespace, str(meta_of(pvc).get("name", "")))

    def _waits_for_binding(self, pvc: Mapping[str, Any]) -> bool:
        """A Pending claim is waited for unless its class binds on first consumer."""
        class_name = (pvc.get("spec") or {}).get("storageClassName")
        if class_name is None:
            return True
        storage_class = self._storage_classes.get_by_key(str(class_name))
        if storage_class is None:
            raise RestoreError(f"StorageClass {class_name} does not exist")
        return storage_class.get("volumeBindingMode") in _WAITED_BINDING_MODES

    # The target's spec.

    def _reconcile_target(self, restore: JSON, vm: JSON | None, content: Mapping[str, Any]) -> float | None:
        """Writes the restored VM (and what it needs first). None once the target is restored, else
        how long to wait before looking again (0: a write's watch event brings the restore back)."""
        if vm is not None and has_last_restore_annotation(restore, vm):
            return None
        source_vm = content["spec"]["source"]["virtualMachine"]
        if self._name_data_volumes(restore, source_vm):
            return 0.0
        new_vm = restored_vm(restore, vm, source_vm)
        wait = self._reconcile_data_volumes(restore, vm, new_vm)
        if wait is not None:
            return wait
        self._write_vm(restore, vm, new_vm)
        return 0.0

    def _name_data_volumes(self, restore: JSON, source_vm: Mapping[str, Any]) -> bool:
        """Each restored claim of a templated DataVolume gets the restored DataVolume's name, and the
        claim is handed over to it (``populatedFor``, no owner). True when ``status.restores`` changed."""
        namespace = meta_of(restore).get("namespace")
        current = restore["status"].get("restores") or []
        restores = copy.deepcopy(current)
        for entry in restores:
            volume = next((v for v in volumes_of(source_vm) if v.get("name") == entry["volumeName"]), None)
            if volume is None or "dataVolume" not in volume:
                continue
            dv = str(volume["dataVolume"].get("name", ""))
            if template_index(source_vm, dv) < 0:
                continue
            dv_name = restore_volume_name(restore, entry["volumeName"], dv)
            pvc = self._pvcs.get_by_key(key_for(namespace, entry["persistentVolumeClaim"]))
            if pvc is None:
                raise RestoreError(
                    f"pvc {namespace}/{entry['persistentVolumeClaim']} does not exist and should"
                )
            if annotations_of(pvc).get(POPULATED_FOR_ANNOTATION) != dv_name:
                handed = copy.deepcopy(pvc)
                handed["metadata"]["annotations"] = {**annotations_of(pvc), POPULATED_FOR_ANNOTATION: dv_name}
                handed["metadata"].pop("ownerReferences", None)  # the DataVolume takes ownership
                self._api.update(PERSISTENT_VOLUME_CLAIMS, namespace, handed)
            entry["dataVolumeName"] = dv_name
        if restores == current:
            return False
        restore["status"]["restores"] = restores
        return True

    def _reconcile_data_volumes(
        self, restore: JSON, vm: JSON | None, new_vm: Mapping[str, Any]
    ) -> float | None:
        """Creates the restored VM's DataVolumes over their restored claims and lists the existing
        VM's DataVolumes the restore makes obsolete. None once the DataVolumes are ready.

        Without a DataVolume informer nothing brings the restore back when a DataVolume progresses:
        while one is created or not ready, the restore looks again after ``RETRY_SECONDS``."""
        namespace = str(meta_of(restore).get("namespace", ""))
        busy = False
        for template in templates_of(new_vm):
            name = str(meta_of(template).get("name", ""))
            dv = self._data_volume(namespace, name)
            if dv is not None:
                busy = busy or status_of(dv).get("phase") not in _DATA_VOLUME_DONE_PHASES
                continue
            busy = self._create_data_volume(restore, vm, new_vm, template) or busy
        if vm is not None:
            kept = {meta_of(t).get("name") for t in templates_of(new_vm)}
            obsolete = [
                str(meta_of(t).get("name")) for t in templates_of(vm) if meta_of(t).get("name") not in kept
            ]
            if obsolete != (restore["status"].get("deletedDataVolumes") or []):
                set_or_drop(restore["status"], "deletedDataVolumes", obsolete)
                return RETRY_SECONDS if busy else 0.0
        return RETRY_SECONDS if busy else None

    def _data_volume(self, namespace: str, name: str) -> JSON | None:
        try:
            return self._api.get(DATA_VOLUMES, namespace, name)
        except NotFoundError:
            return None  # no such DataVolume, or no CDI

    def _create_data_volume(
        self,
        restore: Mapping[str, Any],
        vm: JSON | None,
        new_vm: Mapping[str, Any],
        template: Mapping[str, Any],
    ) -> bool:
        namespace = str(meta_of(restore).get("namespace", ""))
        name = str(meta_of(template).get("name", ""))
        pvc = self._pvcs.get_by_key(key_for(namespace, name))
        if pvc is None:
            raise RestoreError(f"when creating restore dv pvc {namespace}/{name} does not exist and should")
        if annotations_of(pvc).get(POPULATED_FOR_ANNOTATION) != name or meta_of(pvc).get("ownerReferences"):
            return False
        priority_class = str(
            ((new_vm["spec"].get("template") or {}).get("spec") or {}).get("priorityClassName") or ""
        )
        try:
            dv = data_volume_from_template(self._api, template, namespace, priority_class)
        except ApiError as err:
            raise RestoreError(f"Unable to create restore DataVolume manifest: {_error_text(err)}") from None
        dv["metadata"]["annotations"][RESTORE_NAME_ANNOTATION] = meta_of(restore).get("name")
        dv["metadata"]["annotations"][PRE_POPULATED_ANNOTATION] = "true"
        try:
            self._api.create(DATA_VOLUMES, namespace, dv)
        except NotFoundError:
            # No CDI in this cluster: the claim is restored, but no DataVolume adopts it.
            _log.info(
                "no DataVolume API: the restored claim stays without its DataVolume",
                namespace=namespace,
                name=name,
            )
            return False
        except ApiError as err:
            text = _error_text(err)
            if vm is not None:
                self._events.event(
                    _as_event_object(vm, VIRTUAL_MACHINES.kind, API_VERSION),
                    "Warning",
                    RESTORE_DATA_VOLUME_CREATE_ERROR_EVENT,
                    f"Error creating restore DataVolume {name}: {text}",
                )
            raise RestoreError(f"Failed to create restore DataVolume: {text}") from None
        return True

    def _write_vm(self, restore: Mapping[str, Any], vm: JSON | None, new_vm: JSON) -> None:
        """Creates (a new VM, with ``spec.patches``) or updates the target, then lets it own its
        instance type revisions and the claims the source VM owned."""
        self._restore_revisions(restore, vm, new_vm)
        namespace = meta_of(restore).get("namespace")
        if vm is None:
            try:
                new_vm = apply_vm_patches(new_vm, list((restore.get("spec") or {}).get("patches") or []))
            except RestoreError as err:
                raise RestoreError(f"error patching VM {meta_of(new_vm).get('name')}: {err}") from None
            written = self._api.create(VIRTUAL_MACHINES, namespace, new_vm)
        else:
            written = self._api.update(VIRTUAL_MACHINES, namespace, new_vm)
        self._claim_revisions(written)
        self._claim_restored_pvcs(restore, written)

    # Instance type and preference revisions.

    def _restore_revisions(self, restore: Mapping[str, Any], vm: JSON | None, new_vm: JSON) -> None:
        """The snapshot's copies of the VM's revisions, stored again under the VM's name."""
        for matcher in _REVISION_MATCHERS:
            ref = new_vm["spec"].get(matcher)
            if ref and ref.get("revisionName"):
                ref["revisionName"] = self._restore_revision(restore, vm, new_vm, str(ref["revisionName"]))

    def _restore_revision(
        self, restore: Mapping[str, Any], vm: JSON | None, new_vm: Mapping[str, Any], name: str
    ) -> str:
        namespace = meta_of(new_vm).get("namespace")
        snapshot_revision = self._revisions.get_by_key(key_for(namespace, name))
        if snapshot_revision is None:
            raise RestoreError(f"Unable to find ControllerRevision {key_for(namespace, name)}")
        snapshot_name = str((restore.get("spec") or {}).get("virtualMachineSnapshotName", ""))
        restored_name = name.replace(snapshot_name, str(meta_of(new_vm).get("name", "")), 1)
        revision = copy.deepcopy(snapshot_revision)
        revision["metadata"] = {"name": restored_name}
        if meta_of(snapshot_revision).get("labels"):
            revision["metadata"]["labels"] = copy.deepcopy(meta_of(snapshot_revision)["labels"])
        if vm is not None:
            existing = self._revisions.get_by_key(key_for(namespace, restored_name))
            if existing is not None:
                try:
                    if same_spec(snapshot_revision, existing):
                        return restored_name
                except RevisionError as err:
                    raise RestoreError(str(err)) from None
                # Revisions are immutable: replaced by the snapshot's copy, owned by the VM at once.
                self._api.delete(CONTROLLER_REVISIONS, namespace, restored_name)
                revision["metadata"]["ownerReferences"] = [_vm_owner_ref(vm)]
        with contextlib.suppress(AlreadyExistsError):  # created by an earlier pass
            self._api.create(CONTROLLER_REVISIONS, namespace, revision)
        return restored_name

    def _claim_revisions(self, vm: Mapping[str, Any]) -> None:
        namespace = meta_of(vm).get("namespace")
        for matcher in _REVISION_MATCHERS:
            name = ((vm.get("spec") or {}).get(matcher) or {}).get("revisionName")
            if not name:
                continue
            try:
                revision = self._api.get(CONTROLLER_REVISIONS, namespace, str(name))
            except NotFoundError:
                raise RestoreError(
                    f"Unable to find ControllerRevision {key_for(namespace, str(name))}"
                ) from None
            owner = controller_ref_of_dict(revision)
            if owner is None or owner.get("uid") != meta_of(vm).get("uid"):
                revision["metadata"]["ownerReferences"] = [_vm_owner_ref(vm)]
                self._api.update(CONTROLLER_REVISIONS, namespace, revision)

    def _claim_restored_pvcs(self, restore: Mapping[str, Any], vm: Mapping[str, Any]) -> None:
        """Claims restored for a VM that did not exist yet, from claims the source VM owned."""
        namespace = meta_of(restore).get("namespace")
        for volume in volumes_of(vm):
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim:
                continue
            pvc = self._api.get(PERSISTENT_VOLUME_CLAIMS, namespace, str(claim))
            owned = annotations_of(pvc).get(RESTORE_OWNED_BY_VM_ANNOTATION) == meta_of(restore).get("name")
            if meta_of(pvc).get("ownerReferences") or not owned:
                continue
            pvc["metadata"]["ownerReferences"] = [_vm_owner_ref(vm)]
            pvc["metadata"]["annotations"].pop(RESTORE_OWNED_BY_VM_ANNOTATION)
            self._api.update(PERSISTENT_VOLUME_CLAIMS, namespace, pvc)

    # Cleanup.

    def _delete_obsolete_data_volumes(self, restore: Mapping[str, Any]) -> None:
        namespace = meta_of(restore).get("namespace")
        for name in status_of(restore).get("deletedDataVolumes") or []:
            try:
                self._api.delete(DATA_VOLUMES, namespace, str(name))
            except NotFoundError:
                continue  # already gone, or no CDI


def target_key(restore: Mapping[str, Any]) -> str:
    """The cache key of the target VM (and of its VMI): ``<restore namespace>/<target name>``."""
    target = (restore.get("spec") or {}).get("target") or {}
    return key_for(meta_of(restore).get("namespace"), str(target.get("name") or ""))


def _backup(content: Mapping[str, Any], volume_name: str) -> JSON:
    for backup in (content.get("spec") or {}).get("volumeBackups") or []:
        if backup.get("volumeName") == volume_name:
            return dict(backup)
    raise RestoreError(f"volume backup for volume {volume_name} not found")


def _as_event_object(
    obj: Mapping[str, Any], kind: str = VIRTUAL_MACHINE_RESTORES.kind, api_version: str = SNAPSHOT_API_VERSION
) -> JSON:
    """The object with its kind and apiVersion (objects read from a list lack them)."""
    return {"kind": kind, "apiVersion": api_version, **obj}
