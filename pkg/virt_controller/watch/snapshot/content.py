"""The VirtualMachineSnapshotContent controller (KubeVirt's ``updateVMSnapshotContent``).

For each claim a content lists it takes a VolumeSnapshot (owned by the content, so they go with it),
freezing the guest once before the first one when a guest agent can do it, and thawing it once every
VolumeSnapshot has been cut. The content is created when all were cut and ready when all are ready.
"""

from __future__ import annotations

import contextlib
import copy
from datetime import datetime
from typing import Any

from kubevirt.client import AlreadyExistsError, ApiError, EventSink, KubeApi
from kubevirt.client.resources import (
    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
    VOLUME_SNAPSHOTS,
)
from kubevirt.controller import RequeueAfter, Store, key_for, key_of
from kubevirt.log import get_logger
from kubevirt.virt_controller.watch.common import Clock, Enqueue, finalizers_patch, format_time, utc_now
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.view import JSON

from .classes import SnapshotClasses, snapshot_class_for
from .common import (
    CONTENT_FINALIZER,
    RETRY_SECONDS,
    SNAPSHOT_API_VERSION,
    SOURCE_VM_NAME_LABEL,
    SOURCE_VM_NAMESPACE_LABEL,
    VOLUME_SNAPSHOT_GROUP,
    finalizers,
    finalizers_test_value,
    owner_ref,
)
from .freezer import Freezer
from .snapshot import (
    FREEZE_LIMIT,
    SnapshotSources,
    deleting,
    failure_deadline_seconds,
    should_delete_content,
    terminating,
    unfreeze_if_frozen,
)
from .source import SourceState

VOLUME_SNAPSHOT_CREATED_REASON = "SuccessfulVolumeSnapshotCreate"
VOLUME_SNAPSHOT_MISSING_REASON = "VolumeSnapshotMissing"
CONTENT_KIND = "VirtualMachineSnapshotContent"
VolumeSnapshots = SnapshotClasses  # the same shape: a store once the CRD is there, else None


class ContentError(Exception):
    """The content cannot go on (its text is what KubeVirt reports)."""


class ContentController:
    """Informers: contents, snapshots, VolumeSnapshots (through ``volume_snapshots``), VMs and VMIs."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        content_store: Store[JSON],
        snapshot_store: Store[JSON],
        sources: SnapshotSources,
        volume_snapshots: VolumeSnapshots,
        storage_class_store: Store[JSON],
        snapshot_classes: SnapshotClasses,
        freezer: Freezer,
        enqueue: Enqueue,
        clock: Clock = utc_now,
    ) -> None:
        self._api = api
        self._events = events
        self._contents = content_store
        self._snapshots = snapshot_store
        self._sources = sources
        self._volume_snapshots = volume_snapshots
        self._storage_classes = storage_class_store
        self._snapshot_classes = snapshot_classes
        self._freezer = freezer
        self._enqueue = enqueue
        self._clock = clock
        self._log = get_logger()

    def reconcile(self, key: str) -> None:
        content = self._contents.get_by_key(key)
        if content is None:
            return
        now = self._clock()
        namespace = content["metadata"].get("namespace") or ""
        snapshot_name = (content.get("spec") or {}).get("virtualMachineSnapshotName")
        if not snapshot_name:
            raise ContentError("VirtualMachineSnapshotName is not initialized in vm snapshot content")
        snapshot = self._snapshots.get_by_key(key_for(namespace, snapshot_name))
        if snapshot is None or terminating(snapshot, now):
            self._thaw_quietly(snapshot)
            content = self._drop_finalizer(content)
            if snapshot is not None and should_delete_content(snapshot, content):
                return  # the snapshot controller deletes it
        if content["metadata"].get("deletionTimestamp") is not None:
            raise RequeueAfter(RETRY_SECONDS)
        self._sync(content, snapshot, now)

    def _sync(self, content: JSON, snapshot: JSON | None, now: datetime) -> None:
        before = content.get("status")
        status: dict[str, Any] = copy.deepcopy(before) if before is not None else {}
        created_before = status.get("creationTime") is not None
        volume_snapshots = self._volume_snapshots()
        entries: list[JSON] = []
        missing: list[str] = []
        skipped: list[str] = []
        froze = False
        for backup in (content.get("spec") or {}).get("volumeBackups") or ():
            name = backup.get("volumeSnapshotName")
            if not name:
                continue
            key = key_for(content["metadata"].get("namespace"), name)
            volume_snapshot = volume_snapshots.get_by_key(key) if volume_snapshots is not None else None
            if volume_snapshot is None:
                if created_before:
                    message = f"VolumeSnapshot {name} no longer exists"
                    self._events.event(content, "Warning", VOLUME_SNAPSHOT_MISSING_REASON, message)
                    missing.append(name)
                    continue
                if snapshot is None or deleting(snapshot):
                    skipped.append(name)
                    continue
                if not froze:
                    failure = self._freeze(snapshot)
                    if failure is not None:
                        status["error"] = {"time": format_time(now), "message": failure}
                        status["readyToUse"] = False
                        self._write_status(content, before, status)
                        raise RequeueAfter(RETRY_SECONDS)
                    froze = True
                volume_snapshot = self._create_volume_snapshot(content, backup)
            entries.append(_volume_snapshot_status(name, volume_snapshot))
        created, ready, problem = _aggregate(entries, missing, skipped)
        if created and status.get("creationTime") is None:
            status["creationTime"] = format_time(now)
            failure = self._thaw(snapshot)
            if failure is not None:
                if FREEZE_LIMIT not in failure:
                    raise ContentError(failure)
                status.pop("creationTime")
                status["error"] = {"time": format_time(now), "message": failure}
                self._write_status(content, before, status)
                raise RequeueAfter(RETRY_SECONDS)
        if problem and not ready:
            if (status.get("error") or {}).get("message") != problem:
                status["error"] = {"time": format_time(now), "message": problem}
        elif not problem:
            status.pop("error", None)
        status["readyToUse"] = ready
        if entries:
            status["volumeSnapshotStatus"] = entries
        else:
            status.pop("volumeSnapshotStatus", None)
        self._write_status(content, before, status)

    def _write_status(self, content: JSON, before: JSON | None, status: JSON) -> None:
        if status != before:
            namespace = content["metadata"].get("namespace")
            self._api.update_status(
                VIRTUAL_MACHINE_SNAPSHOT_CONTENTS, namespace, {**content, "status": status}
            )

    def _drop_finalizer(self, content: JSON) -> JSON:
        current = finalizers(content)
        if CONTENT_FINALIZER not in current:
            return content
        wanted = [name for name in current if name != CONTENT_FINALIZER]
        meta = content["metadata"]
        return self._api.patch(
            VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
            meta.get("namespace"),
            meta["name"],
            finalizers_patch(finalizers_test_value(content), wanted),
        )

    def _source(self, snapshot: JSON) -> tuple[SourceState, VirtualMachineInstance | None]:
        state, vmi = self._sources.state(snapshot)
        if state is None:
            raise ContentError("unable to get snapshot source")
        return state, vmi

    def _freeze(self, snapshot: JSON) -> str | None:
        """Freezes the guest if it can be (locked, running, not paused, with an agent); the failure's text."""
        state, vmi = self._source(snapshot)
        if not state.locked:
            return "attempting to freeze unlocked VM"
        if vmi is None or state.frozen or state.paused or not state.guest_agent:
            return None
        try:
            self._freezer.freeze(
                vmi.metadata.namespace or "" if vmi.metadata else "",
                vmi.metadata.name or "" if vmi.metadata else "",
                failure_deadline_seconds(snapshot),
            )
        except ApiError as err:
            return err.message or str(err)
        return None

    def _thaw(self, snapshot: JSON | None) -> str | None:
        if snapshot is None:
            return None
        state, vmi = self._sources.state(snapshot)
        try:
            unfreeze_if_frozen(self._freezer, state, vmi)
        except ApiError as err:
            return err.message or str(err)
        return None

    def _thaw_quietly(self, snapshot: JSON | None) -> None:
        failure = self._thaw(snapshot)
        if failure is not None:
            self._log.warning("failed to unfreeze the snapshot's source", reason=failure)

    def _create_volume_snapshot(self, content: JSON, backup: JSON) -> JSON:
        namespace = content["metadata"].get("namespace") or ""
        claim = backup.get("persistentVolumeClaim") or {}
        storage_class = (claim.get("spec") or {}).get("storageClassName")
        claim_name = (claim.get("metadata") or {}).get("name")
        if not storage_class:
            raise ContentError(f"{namespace}/{claim_name} VolumeSnapshot requested but no storage class")
        classes = self._snapshot_classes()
        snapshot_class = snapshot_class_for(
            storage_class, self._storage_classes, classes.list() if classes is not None else ()
        )
        if not snapshot_class:
            raise ContentError(f"no VolumeSnapshotClass for StorageClass {storage_class}")
        source_vm = (((content.get("spec") or {}).get("source") or {}).get("virtualMachine") or {}).get(
            "metadata"
        ) or {}
        name = backup["volumeSnapshotName"]
        volume_snapshot = {
            "apiVersion": f"{VOLUME_SNAPSHOT_GROUP}/v1",
            "kind": "VolumeSnapshot",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {
                    SOURCE_VM_NAME_LABEL: source_vm.get("name", ""),
                    SOURCE_VM_NAMESPACE_LABEL: source_vm.get("namespace", ""),
                },
                "ownerReferences": [owner_ref(SNAPSHOT_API_VERSION, CONTENT_KIND, content)],
            },
            "spec": {
                "source": {"persistentVolumeClaimName": claim_name},
                "volumeSnapshotClassName": snapshot_class,
            },
        }
        created: JSON = volume_snapshot
        with contextlib.suppress(AlreadyExistsError):
            created = self._api.create(VOLUME_SNAPSHOTS, namespace, volume_snapshot)
        message = f"Successfully created VolumeSnapshot {name}"
        self._events.event(content, "Normal", VOLUME_SNAPSHOT_CREATED_REASON, message)
        return created

    # Informer events.
    def on_content_add(self, content: JSON) -> None:
        self._enqueue(key_of(content))

    def on_content_update(self, old: JSON, new: JSON) -> None:
        self._enqueue(key_of(new))

    def on_content_delete(self, content: JSON) -> None:
        pass

    def on_volume_snapshot_add(self, volume_snapshot: JSON) -> None:
        self._enqueue_owner(volume_snapshot)

    def on_volume_snapshot_update(self, old: JSON, new: JSON) -> None:
        self._enqueue_owner(new)

    def on_volume_snapshot_delete(self, volume_snapshot: JSON) -> None:
        self._enqueue_owner(volume_snapshot)

    def on_snapshot_add(self, snapshot: JSON) -> None:
        self._enqueue_content_of(snapshot)

    def on_snapshot_update(self, old: JSON, new: JSON) -> None:
        self._enqueue_content_of(new)

    def on_snapshot_delete(self, snapshot: JSON) -> None:
        self._enqueue_content_of(snapshot)

    def _enqueue_owner(self, volume_snapshot: JSON) -> None:
        meta = volume_snapshot.get("metadata") or {}
        for ref in meta.get("ownerReferences") or ():
            if ref.get("kind") == CONTENT_KIND:
                self._enqueue(key_for(meta.get("namespace"), ref.get("name") or ""))

    def _enqueue_content_of(self, snapshot: JSON) -> None:
        """A snapshot being deleted or failing lets its content drop its finalizer."""
        name = (snapshot.get("status") or {}).get("virtualMachineSnapshotContentName")
        if name:
            self._enqueue(key_for(snapshot["metadata"].get("namespace"), name))


def _volume_snapshot_status(name: str, volume_snapshot: JSON) -> JSON:
    entry: dict[str, Any] = {"volumeSnapshotName": name}
    observed = volume_snapshot.get("status")
    if observed is not None:
        for field in ("readyToUse", "creationTime"):
            if observed.get(field) is not None:
                entry[field] = observed[field]
        error = observed.get("error")
        if error is not None:
            entry["error"] = {key: error[key] for key in ("time", "message") if error.get(key) is not None}
    return entry


def _aggregate(entries: list[JSON], missing: list[str], skipped: list[str]) -> tuple[bool, bool, str]:
    """(all cut, all ready, the error to report)."""
    if missing:
        return False, False, f"VolumeSnapshots ({','.join(missing)}) missing"
    if skipped:
        return False, False, f"VolumeSnapshots ({','.join(skipped)}) skipped because vm snapshot is deleted"
    created = all(entry.get("creationTime") is not None for entry in entries)
    ready = all(entry.get("readyToUse") is True for entry in entries)
    for entry in entries:
        message = (entry.get("error") or {}).get("message")
        if message is not None:
            return created, ready, f"VolumeSnapshot {entry['volumeSnapshotName']} error: {message}"
    return created, ready, ""
