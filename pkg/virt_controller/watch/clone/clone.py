"""The VirtualMachineClone controller (KubeVirt v1.6's ``pkg/virt-controller/watch/clone``).

A clone of a VM is made through a VirtualMachineSnapshot of it (``tmp-snapshot-<clone uid>``) and a
VirtualMachineRestore of that snapshot to a new VM (``tmp-restore-<clone uid>``, whose ``patches`` make
the copy a new machine: see :mod:`.spec`); a clone of a snapshot only needs the restore. Both are owned
by the clone. The phases:

* ``SnapshotInProgress``: the snapshot is taken (a VM source) and waited for; once ready, its content
  must hold the VM and a backup of each claim volume, else the clone fails;
* ``RestoreInProgress``: the restore is created and waited for until complete (or failed);
* ``CreatingTargetVM``: the target VM is waited for;
* ``Succeeded``: once every claim the restore made is Bound, the restore (and a VM source's snapshot)
  are deleted and their names dropped from the status. A succeeded clone whose target VM is deleted
  is deleted too.

A source that does not exist keeps the clone pending (conditions say why, the phase is unchanged); a
source VM needing backend storage, a snapshot deleted under the clone or an unusable content fail it.
Conditions, events and texts are KubeVirt's. As in KubeVirt, a pass over a clone that already failed
reports it "Still processing" again (only the phase keeps saying Failed), and ``status.creationTime``
is never set.

One difference: a succeeded clone whose restore is already gone (its deletion done, the status write
lost) finishes its cleanup; KubeVirt retries "restore ... is not created yet" forever.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubevirt.admission.k8s_names import random_suffix
from kubevirt.client import EventSink, KubeApi, Resource
from kubevirt.client.errors import AlreadyExistsError, ApiError, NotFoundError
from kubevirt.client.resources import (
    VIRTUAL_MACHINE_CLONES,
    VIRTUAL_MACHINE_RESTORES,
    VIRTUAL_MACHINE_SNAPSHOTS,
)
from kubevirt.controller import Store, key_for, key_of
from kubevirt.log import get_logger
from kubevirt.virt_controller.watch.clone.spec import (
    CLONE_API_VERSION,
    CLONE_KIND,
    SNAPSHOT_KIND,
    SOURCE_DOES_NOT_EXIST,
    SOURCE_WITH_BACKEND_STORAGE,
    VM_KIND,
    content_problems,
    generate_patches,
    new_restore,
    new_snapshot,
    owning_clone_key,
    template_needs_backend_storage,
    volume_snapshot_problems,
)
from kubevirt.virt_controller.watch.common import Clock, Enqueue, format_time, utc_now
from kubevirt.virt_controller.watch.conditions import update_condition
from kubevirt.virt_controller.watch.snapshot.common import content_name
from kubevirt.virt_controller.watch.snapshot.restore_spec import RESTORE_NAME_ANNOTATION, meta_of, status_of
from kubevirt.virt_controller.watch.snapshot.restore_status import is_progressing
from kubevirt_api.clone.v1beta1.types import CloneCondition
from kubevirt_api.core.v1 import VirtualMachine
from kubevirt_api.core.v1.constants import GROUP_NAME
from kubevirt_api.snapshot.v1beta1.types import SNAPSHOT_GROUP_NAME
from kubevirt_api.view import JSON

# Phases.
PHASE_UNSET: Final = ""
SNAPSHOT_IN_PROGRESS: Final = "SnapshotInProgress"
CREATING_TARGET_VM: Final = "CreatingTargetVM"
RESTORE_IN_PROGRESS: Final = "RestoreInProgress"
SUCCEEDED: Final = "Succeeded"
FAILED: Final = "Failed"
UNKNOWN: Final = "Unknown"

# Condition types and the reasons the controller sets besides the error texts.
READY: Final = "Ready"
PROGRESSING: Final = "Progressing"
STILL_PROCESSING: Final = "Still processing"
PENDING: Final = "Pending"

# Event reasons.
SNAPSHOT_CREATED: Final = "SnapshotCreated"
SNAPSHOT_READY: Final = "SnapshotReady"
RESTORE_CREATED: Final = "RestoreCreated"
RESTORE_CREATION_FAILED: Final = "RestoreCreationFailed"
RESTORE_READY: Final = "RestoreReady"
TARGET_VM_CREATED: Final = "TargetVMCreated"
PVC_BOUND: Final = "PVCBound"
SNAPSHOT_DELETED: Final = "SnapshotDeleted"
SNAPSHOT_CONTENT_INVALID: Final = "SnapshotContentInvalid"
SOURCE_DOES_NOT_EXIST_EVENT: Final = "SourceDoesNotExist"
SOURCE_WITH_BACKEND_STORAGE_INVALID: Final = "SourceVMWithBackendStorageInvalid"
VM_VOLUME_SNAPSHOTS_INVALID: Final = "VMVolumeSnapshotsInvalid"

# The clone store's indexes (KubeVirt's names): the key they map a clone to.
VM_SOURCE_INDEX: Final = "vmSource"  # its source VM
VM_TARGET_INDEX: Final = "vmTarget"  # its target VM
SNAPSHOT_SOURCE_INDEX: Final = "snapshotSource"  # its source snapshot
SNAPSHOT_WAITING_INDEX: Final = SNAPSHOT_IN_PROGRESS  # the snapshot it waits for
RESTORE_WAITING_INDEX: Final = RESTORE_IN_PROGRESS  # the restore it waits for
SUCCEEDED_INDEX: Final = SUCCEEDED  # the restore whose claims it waits for

_log = get_logger(controller="clone")


class CloneError(Exception):
    """A pass that cannot go on (retried with backoff)."""


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _error_text(err: Exception) -> str:
    """What Go's ``err.Error()`` prints: an API error's message, or the error's own text."""
    if isinstance(err, ApiError):
        return err.message or str(err)
    return str(err)


# Indexes.


def _reference_key(clone: Any, field: str, group: str, kind: str) -> Iterable[str]:
    if not isinstance(clone, Mapping):
        return ()
    reference = _spec(clone).get(field) or {}
    if reference.get("apiGroup") != group or reference.get("kind") != kind:
        return ()
    return (key_for(meta_of(clone).get("namespace"), str(reference.get("name") or "")),)


def _status_key(clone: Any, phase: str, field: str) -> Iterable[str]:
    if not isinstance(clone, Mapping):
        return ()
    status = status_of(clone)
    if status.get("phase") != phase or status.get(field) is None:
        return ()
    return (key_for(meta_of(clone).get("namespace"), str(status[field])),)


def clone_indexers() -> dict[str, Callable[[Any], Iterable[str]]]:
    """KubeVirt's VirtualMachineClone informer indexes (the controller adds them to its store)."""
    return {
        VM_SOURCE_INDEX: lambda clone: _reference_key(clone, "source", GROUP_NAME, VM_KIND),
        VM_TARGET_INDEX: lambda clone: _reference_key(clone, "target", GROUP_NAME, VM_KIND),
        SNAPSHOT_SOURCE_INDEX: lambda clone: _reference_key(
            clone, "source", SNAPSHOT_GROUP_NAME, SNAPSHOT_KIND
        ),
        SNAPSHOT_WAITING_INDEX: lambda clone: _status_key(clone, SNAPSHOT_IN_PROGRESS, "snapshotName"),
        RESTORE_WAITING_INDEX: lambda clone: _status_key(clone, RESTORE_IN_PROGRESS, "restoreName"),
        SUCCEEDED_INDEX: lambda clone: _status_key(clone, SUCCEEDED, "restoreName"),
    }


# What a pass found.


@dataclass
class SyncInfo:
    """KubeVirt's syncInfoType: what the pass did and found, turned into the status afterwards."""

    err: CloneError | None = None
    snapshot_name: str = ""
    snapshot_ready: bool = False
    restore_name: str = ""
    restore_ready: bool = False
    target_vm_name: str = ""
    target_vm_created: bool = False
    pvc_bound: bool = False
    event: str = ""
    reason: str = ""
    failing: bool = False
    pending: bool = False

    def failing_or_error(self) -> bool:
        return self.err is not None or self.failing

    def fail(self, event: str, reason: str) -> None:
        self.failing, self.event, self.reason = True, event, reason


@dataclass
class CloneInfo:
    """The clone with its source: the source VM (as JSON), or the snapshot the restore is made from."""

    clone: JSON
    source_kind: str
    snapshot_name: str = ""
    snapshot: JSON | None = None
    source_vm: JSON | None = None


class _SourceUnusableError(Exception):
    def __init__(self, event: str, reason: str, *, failing: bool) -> None:
        super().__init__(reason)
        self.event, self.reason, self.failing = event, reason, failing


class CloneController:
    """Reconciles VirtualMachineClones. Reads clones, snapshots, contents, restores, VMs and claims from
    caches; watches clones, snapshots, restores, claims a restore made, and VMs."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        clone_store: Store[JSON],
        snapshot_store: Store[JSON],
        content_store: Store[JSON],
        restore_store: Store[JSON],
        vm_store: Store[VirtualMachine],
        pvc_store: Store[JSON],
        enqueue: Enqueue,
        clock: Clock = utc_now,
        name_suffix: Callable[[], str] = random_suffix,
    ) -> None:
        self._api = api
        self._events = events
        self._clones = clone_store
        self._clones.add_indexers(clone_indexers())
        self._snapshots = snapshot_store
        self._contents = content_store
        self._restores = restore_store
        self._vms = vm_store
        self._pvcs = pvc_store
        self._enqueue = enqueue
        self._clock = clock
        self._name_suffix = name_suffix

    # Informer handlers.

    def on_clone_add(self, clone: Any) -> None:
        self._enqueue(key_of(clone))

    def on_clone_update(self, _old: Any, new: Any) -> None:
        self._enqueue(key_of(new))

    def on_clone_delete(self, clone: Any) -> None:
        self._enqueue(key_of(clone))

    def on_snapshot_add(self, snapshot: Any) -> None:
        self._snapshot_changed(snapshot)

    def on_snapshot_update(self, _old: Any, new: Any) -> None:
        self._snapshot_changed(new)

    def on_snapshot_delete(self, snapshot: Any) -> None:
        self._snapshot_changed(snapshot)

    def on_restore_add(self, restore: Any) -> None:
        self._restore_changed(restore)

    def on_restore_update(self, _old: Any, new: Any) -> None:
        self._restore_changed(new)

    def on_restore_delete(self, restore: Any) -> None:
        self._restore_changed(restore)

    def on_pvc_add(self, pvc: Any) -> None:
        self._pvc_changed(pvc)

    def on_pvc_update(self, _old: Any, new: Any) -> None:
        self._pvc_changed(new)

    def on_pvc_delete(self, pvc: Any) -> None:
        self._pvc_changed(pvc)

    def on_vm_add(self, vm: VirtualMachine) -> None:
        self._enqueue_indexed(VM_SOURCE_INDEX, key_of(vm))

    def on_vm_update(self, old: VirtualMachine, new: VirtualMachine) -> None:
        """Only a change of which volumes can be snapshotted matters to a clone of the VM."""
        if _volume_snapshot_statuses(old) != _volume_snapshot_statuses(new):
            self._enqueue_indexed(VM_SOURCE_INDEX, key_of(new))

    def on_vm_delete(self, vm: VirtualMachine) -> None:
        self._enqueue_indexed(VM_TARGET_INDEX, key_of(vm))

    def _enqueue_indexed(self, index: str, key: str) -> None:
        for clone in self._clones.by_index(index, key):
            self._enqueue(key_of(clone))

    def _enqueue_owner(self, obj: Mapping[str, Any]) -> None:
        owner = owning_clone_key(obj)
        if owner is not None:
            self._enqueue(owner)

    def _snapshot_changed(self, snapshot: Mapping[str, Any]) -> None:
        self._enqueue_owner(snapshot)
        key = key_of(snapshot)
        self._enqueue_indexed(SNAPSHOT_SOURCE_INDEX, key)
        self._enqueue_indexed(SNAPSHOT_WAITING_INDEX, key)

    def _restore_changed(self, restore: Mapping[str, Any]) -> None:
        self._enqueue_owner(restore)
        self._enqueue_indexed(RESTORE_WAITING_INDEX, key_of(restore))

    def _pvc_changed(self, pvc: Mapping[str, Any]) -> None:
        """A Bound claim a restore made may be the last one a succeeded clone waits for."""
        restore = (meta_of(pvc).get("annotations") or {}).get(RESTORE_NAME_ANNOTATION)
        if restore is None or status_of(pvc).get("phase") != "Bound":
            return
        self._enqueue_indexed(SUCCEEDED_INDEX, key_for(meta_of(pvc).get("namespace"), restore))

    # The pass.

    def reconcile(self, key: str) -> None:
        cached = self._clones.get_by_key(key)
        if cached is None:
            return
        clone = copy.deepcopy(cached)
        if self._target_deleted(clone):
            return
        sync = self._sync(clone)
        self._update_status(clone, sync)
        if sync.err is not None:
            raise CloneError(f"sync error: {sync.err}")

    def _target_deleted(self, clone: JSON) -> bool:
        """A succeeded clone goes with its target VM; returns whether the pass is over."""
        status = status_of(clone)
        target = status.get("targetName")
        if status.get("phase") != SUCCEEDED or target is None:
            return False
        namespace = meta_of(clone).get("namespace")
        if self._vms.get_by_key(key_for(namespace, str(target))) is not None:
            return False
        if not meta_of(clone).get("deletionTimestamp"):
            _log.info(
                "deleting the clone of a deleted VM", namespace=namespace, name=meta_of(clone).get("name")
            )
            with contextlib.suppress(NotFoundError):
                self._api.delete(VIRTUAL_MACHINE_CLONES, namespace, str(meta_of(clone).get("name")))
        return True

    def _sync(self, clone: JSON) -> SyncInfo:
        try:
            info = self._clone_info(clone)
        except _SourceUnusableError as unusable:
            return SyncInfo(
                pending=not unusable.failing,
                failing=unusable.failing,
                event=unusable.event,
                reason=unusable.reason,
            )
        target = _spec(clone).get("target")
        target_kind = str(target.get("kind") or "") if target else VM_KIND
        if target_kind != VM_KIND:
            return SyncInfo(err=CloneError(f"target type is unknown: {target_kind}"))
        return self._sync_target_vm(info)

    def _clone_info(self, clone: JSON) -> CloneInfo:
        """The clone's source from the caches; raises _SourceUnusableError when the clone cannot start."""
        source = _spec(clone).get("source") or {}
        kind, name = str(source.get("kind") or ""), str(source.get("name") or "")
        namespace = meta_of(clone).get("namespace")
        info = CloneInfo(clone=clone, source_kind=kind)
        if kind == VM_KIND:
            vm = self._vms.get_by_key(key_for(namespace, name))
            if vm is None:
                raise _SourceUnusableError(
                    SOURCE_DOES_NOT_EXIST_EVENT,
                    f"{SOURCE_DOES_NOT_EXIST}: {kind} {namespace}/{name}",
                    failing=False,
                )
            info.source_vm = vm.to_dict()
            if template_needs_backend_storage(info.source_vm):
                raise _SourceUnusableError(
                    SOURCE_WITH_BACKEND_STORAGE_INVALID,
                    f"{SOURCE_WITH_BACKEND_STORAGE}: VM {namespace}/{name}",
                    failing=True,
                )
        elif kind == SNAPSHOT_KIND:
            snapshot = self._snapshots.get_by_key(key_for(namespace, name))
            if snapshot is None:
                raise _SourceUnusableError(
                    SOURCE_DOES_NOT_EXIST_EVENT,
                    f"{SOURCE_DOES_NOT_EXIST}: {kind} {namespace}/{name}",
                    failing=False,
                )
            info.snapshot, info.snapshot_name = copy.deepcopy(snapshot), name
        else:
            clone_name = meta_of(clone).get("name")
            raise CloneError(f"sync error: clone {clone_name} is defined with an unknown source type {kind}")
        if not info.snapshot_name and status_of(clone).get("snapshotName") is not None:
            info.snapshot_name = str(status_of(clone)["snapshotName"])
        return info

    def _sync_target_vm(self, info: CloneInfo) -> SyncInfo:
        """KubeVirt's phase switch with its fallthroughs: each step returns whether the next one runs."""
        phase = status_of(info.clone).get("phase") or PHASE_UNSET
        sync = SyncInfo()
        if phase not in (
            PHASE_UNSET,
            SNAPSHOT_IN_PROGRESS,
            RESTORE_IN_PROGRESS,
            CREATING_TARGET_VM,
            SUCCEEDED,
        ):
            _log.info("nothing to do in this phase", name=meta_of(info.clone).get("name"), phase=phase)
            return sync
        if phase in (PHASE_UNSET, SNAPSHOT_IN_PROGRESS):
            if info.source_kind == VM_KIND and status_of(info.clone).get("snapshotName") is None:
                return self._create_snapshot(info.clone, info.source_vm or {})
            if not self._snapshot_ready(info, sync):
                return sync
        if phase != SUCCEEDED and phase != CREATING_TARGET_VM and not self._restore_ready(info, sync):
            return sync
        if phase != SUCCEEDED and not self._target_ready(info.clone, sync):
            return sync
        if status_of(info.clone).get("restoreName") is not None:
            self._clean_up(info, sync)
        return sync

    # Snapshot.

    def _create_snapshot(self, clone: JSON, vm: JSON) -> SyncInfo:
        problems = volume_snapshot_problems(vm)
        if problems is not None:
            return SyncInfo(pending=True, event=VM_VOLUME_SNAPSHOTS_INVALID, reason=problems)
        snapshot = new_snapshot(clone, vm)
        name, clone_name = snapshot["metadata"]["name"], meta_of(clone).get("name")
        try:
            self._api.create(VIRTUAL_MACHINE_SNAPSHOTS, snapshot["metadata"]["namespace"], snapshot)
        except AlreadyExistsError:
            return SyncInfo(snapshot_name=name)
        except ApiError as err:
            message = f"failed creating snapshot {name} for clone {clone_name}: {_error_text(err)}"
            return SyncInfo(err=CloneError(message))
        self._record(clone, SNAPSHOT_CREATED, f"created snapshot {name} for clone {clone_name}")
        return SyncInfo(snapshot_name=name)

    def _snapshot_ready(self, info: CloneInfo, sync: SyncInfo) -> bool:
        """The snapshot is ready and its content usable (else the clone fails)."""
        namespace, clone_name = meta_of(info.clone).get("namespace"), meta_of(info.clone).get("name")
        snapshot = self._snapshots.get_by_key(key_for(namespace, info.snapshot_name))
        if snapshot is None:
            sync.err = CloneError(f"snapshot {info.snapshot_name} is not created yet for clone {clone_name}")
            return False
        info.snapshot = copy.deepcopy(snapshot)
        if status_of(snapshot).get("readyToUse") is not True:
            return False
        problems = content_problems(snapshot, self._content(snapshot), content_name(snapshot))
        if problems is not None:
            info.snapshot = None
            sync.fail(SNAPSHOT_CONTENT_INVALID, problems)
            return False
        name = meta_of(snapshot).get("name")
        self._record(info.clone, SNAPSHOT_READY, f"snapshot {name} for clone {clone_name} is ready to use")
        sync.snapshot_ready = True
        return True

    def _content(self, snapshot: JSON) -> JSON | None:
        return self._contents.get_by_key(key_for(meta_of(snapshot).get("namespace"), content_name(snapshot)))

    # Restore.

    def _restore_ready(self, info: CloneInfo, sync: SyncInfo) -> bool:
        """The restore exists (created here if not) and is no longer progressing."""
        clone = info.clone
        namespace, clone_name = meta_of(clone).get("namespace"), meta_of(clone).get("name")
        if info.snapshot is None:
            snapshot = self._snapshots.get_by_key(key_for(namespace, info.snapshot_name))
            if snapshot is None:
                sync.fail(SNAPSHOT_DELETED, f"snapshot {info.snapshot_name} does not exist anymore")
                return False
            info.snapshot = copy.deepcopy(snapshot)
        restore_name = status_of(clone).get("restoreName")
        if restore_name is None:
            self._create_restore(info, sync)
            return False
        restore = self._restores.get_by_key(key_for(namespace, str(restore_name)))
        if restore is None:
            sync.err = CloneError(f"restore {restore_name} is not created yet for clone {clone_name}")
            return False
        if is_progressing(restore):
            return False
        self._record(clone, RESTORE_READY, f"restore {restore_name} for clone {clone_name} is ready to use")
        sync.restore_ready = True
        sync.target_vm_name = str((_spec(restore).get("target") or {}).get("name") or "")
        return True

    def _create_restore(self, info: CloneInfo, sync: SyncInfo) -> None:
        clone, snapshot = info.clone, info.snapshot or {}
        clone_name = meta_of(clone).get("name")
        content = self._content(snapshot)
        if content is None:
            namespace = meta_of(snapshot).get("namespace")
            missing = f"snapshot content {content_name(snapshot)} in namespace {namespace} does not exist"
            sync.err = CloneError(f"cannot get VM manifest from snapshot: {missing}")
            return
        vm = (_spec(content).get("source") or {}).get("virtualMachine") or {}
        patches = generate_patches(vm, _spec(clone))
        restore = new_restore(
            clone, str(meta_of(vm).get("name") or ""), info.snapshot_name, patches, self._name_suffix()
        )
        name = restore["metadata"]["name"]
        try:
            self._api.create(VIRTUAL_MACHINE_RESTORES, restore["metadata"]["namespace"], restore)
        except AlreadyExistsError:
            sync.restore_name = name
            return
        except ApiError as err:
            message = f"failed creating restore {name} for clone {clone_name}: {_error_text(err)}"
            self._events.event(_event_object(clone), "Warning", RESTORE_CREATION_FAILED, message)
            sync.err = CloneError(message)
            return
        self._record(clone, RESTORE_CREATED, f"created restore {name} for clone {clone_name}")
        sync.restore_name = name

    # Target and cleanup.

    def _target_ready(self, clone: JSON, sync: SyncInfo) -> bool:
        name = str((_spec(clone).get("target") or {}).get("name") or sync.target_vm_name or "")
        clone_name = meta_of(clone).get("name")
        if self._vms.get_by_key(key_for(meta_of(clone).get("namespace"), name)) is None:
            sync.err = CloneError(f"target VM {name} is not created yet for clone {clone_name}")
            return False
        self._record(clone, TARGET_VM_CREATED, f"created target VM {name} for clone {clone_name}")
        sync.target_vm_created = True
        return True

    def _clean_up(self, info: CloneInfo, sync: SyncInfo) -> None:
        """Once the restored claims are Bound (their VolumeSnapshots are no longer needed), the restore
        and the snapshot the clone took are deleted."""
        if not self._claims_bound(info.clone, sync):
            return
        status = status_of(info.clone)
        namespace, clone_name = meta_of(info.clone).get("namespace"), meta_of(info.clone).get("name")
        restore = str(status["restoreName"])
        if not self._delete(VIRTUAL_MACHINE_RESTORES, namespace, restore):
            sync.err = CloneError(f"cannot clean up restore {restore} for clone {clone_name}")
            return
        snapshot = status.get("snapshotName")
        if info.source_kind != VM_KIND or snapshot is None:
            return  # a source snapshot is the user's
        if not self._delete(VIRTUAL_MACHINE_SNAPSHOTS, namespace, str(snapshot)):
            sync.err = CloneError(f"cannot clean up snapshot {snapshot} for clone {clone_name}")

    def _claims_bound(self, clone: JSON, sync: SyncInfo) -> bool:
        namespace, clone_name = meta_of(clone).get("namespace"), meta_of(clone).get("name")
        restore_name = str(status_of(clone)["restoreName"])
        restore = self._restores.get_by_key(key_for(namespace, restore_name))
        if restore is None and status_of(clone).get("phase") != SUCCEEDED:
            sync.err = CloneError(f"restore {restore_name} is not created yet for clone {clone_name}")
            return False
        for volume in status_of(restore or {}).get("restores") or ():
            claim_name = volume.get("persistentVolumeClaim")
            pvc = self._pvcs.get_by_key(key_for(namespace, str(claim_name)))
            if pvc is None:
                sync.err = CloneError(f"PVC {claim_name} is not created yet for clone {clone_name}")
                return False
            if status_of(pvc).get("phase") != "Bound":
                return False
        self._record(clone, PVC_BOUND, f"all PVC for clone {clone_name} are bound")
        sync.pvc_bound = True
        return True

    def _delete(self, resource: Resource, namespace: str | None, name: str) -> bool:
        try:
            self._api.delete(resource, namespace, name)
        except NotFoundError:
            return True
        except ApiError as err:
            _log.info(
                "cleanup failed",
                resource=resource.plural,
                namespace=namespace,
                name=name,
                reason=_error_text(err),
            )
            return False
        return True

    # Status.

    def _record(self, clone: JSON, reason: str, message: str) -> None:
        """KubeVirt's logAndRecord: a Normal event (failures included) and a log line."""
        self._events.event(_event_object(clone), "Normal", reason, message)
        _log.info(message, namespace=meta_of(clone).get("namespace"), name=meta_of(clone).get("name"))

    def _update_status(self, clone: JSON, sync: SyncInfo) -> None:
        status: JSON = copy.deepcopy(dict(status_of(clone)))
        wanted: dict[str, tuple[bool, str]] = {}
        if sync.pending:
            self._record(clone, sync.event, sync.reason)
            wanted.update({PROGRESSING: (False, PENDING), READY: (False, sync.reason)})
        elif sync.failing:
            self._record(clone, sync.event, sync.reason)
            status["phase"] = FAILED
            wanted.update({PROGRESSING: (False, FAILED), READY: (False, sync.reason)})
        else:
            wanted.update({PROGRESSING: (True, STILL_PROCESSING), READY: (False, STILL_PROCESSING)})
        _advance_phase(status, sync)
        if status.get("phase") == SUCCEEDED:
            wanted.update({PROGRESSING: (False, READY), READY: (True, READY)})
        if sync.pvc_bound:
            status.pop("snapshotName", None)
            status.pop("restoreName", None)
        status["conditions"] = self._conditions(status.get("conditions"), wanted)
        if status == status_of(clone):
            return
        if status.get("phase") != status_of(clone).get("phase"):
            _log.info(
                "changing phase",
                namespace=meta_of(clone).get("namespace"),
                name=meta_of(clone).get("name"),
                phase=status.get("phase"),
            )
        self._api.update_status(
            VIRTUAL_MACHINE_CLONES, meta_of(clone).get("namespace"), {**clone, "status": status}
        )

    def _conditions(self, current: list[JSON] | None, wanted: Mapping[str, tuple[bool, str]]) -> list[JSON]:
        """Progressing and Ready, in that order when new; a condition keeps its transition time while its
        status and reason stay (KubeVirt's intermediate settings within a pass leave no trace)."""
        conditions = [CloneCondition.from_dict(condition) for condition in current or ()]
        now = format_time(self._clock())
        for type_, (status, reason) in wanted.items():
            new = CloneCondition(
                type=type_, status="True" if status else "False", reason=reason, last_transition_time=now
            )
            conditions = update_condition(conditions, new)
        return [condition.to_dict() for condition in conditions]


def _advance_phase(status: JSON, sync: SyncInfo) -> None:
    """The phases a pass moves through, and the names it records on the way."""
    if status.get("phase", PHASE_UNSET) == PHASE_UNSET and not sync.pending:
        status["phase"] = SNAPSHOT_IN_PROGRESS
    if status.get("phase") == SNAPSHOT_IN_PROGRESS:
        if sync.snapshot_name:
            status["snapshotName"] = sync.snapshot_name
        if sync.snapshot_ready:
            status["phase"] = RESTORE_IN_PROGRESS
    if status.get("phase") == RESTORE_IN_PROGRESS:
        if sync.restore_name:
            status["restoreName"] = sync.restore_name
        if sync.restore_ready:
            status["phase"] = CREATING_TARGET_VM
    if status.get("phase") == CREATING_TARGET_VM:
        if sync.target_vm_name:
            status["targetName"] = sync.target_vm_name
        if sync.target_vm_created:
            status["phase"] = SUCCEEDED


def _volume_snapshot_statuses(vm: VirtualMachine) -> Any:
    statuses = vm.status.volume_snapshot_statuses if vm.status is not None else None
    return [status.to_dict() for status in statuses or ()]


def _event_object(clone: Mapping[str, Any]) -> JSON:
    """The clone with its kind and apiVersion (objects read from a list lack them)."""
    return {"kind": CLONE_KIND, "apiVersion": CLONE_API_VERSION, **clone}
