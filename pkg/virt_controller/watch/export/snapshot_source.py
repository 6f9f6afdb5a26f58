"""Exporting a VirtualMachineSnapshot (``spec.source``: kind VirtualMachineSnapshot, apiGroup
snapshot.kubevirt.io).

Once the snapshot is ready, every VolumeSnapshot its content backs up is restored into a claim named
``<export>-<backed-up claim>``, owned by the export (so they go with it), and those claims are served
under the backed-up claims' names. ``VolumesCreated`` tells how far the restores got; a snapshot without
volumes is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, AlreadyExistsError, KubeApi
from kubevirt.controller import Store, key_for
from kubevirt.virt_controller.watch.snapshot.common import owner_ref
from kubevirt.virt_controller.watch.snapshot.restore_spec import (
    CONTENT_TYPE_ANNOTATION,
    RestoreError,
    restored_claim,
    volumes_of,
)
from kubevirt_api.export.v1beta1.types import PHASE_SKIPPED
from kubevirt_api.view import JSON

from .conditions import (
    ALL_PVCS_READY,
    INITIALIZING,
    NOT_ALL_PVCS_CREATED,
    NOT_ALL_PVCS_READY,
    READY,
    VMSNAPSHOT_NO_VOLUMES,
    VOLUMES_CREATED,
    condition,
    update_condition,
)
from .names import EXPORT_API_VERSION, EXPORT_KIND
from .pvc_source import source_name
from .volumes import SourceError, SourceVolumes

VolumeSnapshots = Callable[[], Store[JSON] | None]


class SnapshotSource:
    """Reads snapshots, their contents, claims and VolumeSnapshots from caches; creates the claims."""

    def __init__(
        self,
        *,
        api: KubeApi,
        snapshots: Store[JSON],
        contents: Store[JSON],
        pvcs: Store[JSON],
        volume_snapshots: VolumeSnapshots,
    ) -> None:
        self._api = api
        self._snapshots = snapshots
        self._contents = contents
        self._pvcs = pvcs
        self._volume_snapshots = volume_snapshots

    def snapshot(self, export: Mapping[str, Any]) -> JSON | None:
        return self._snapshots.get_by_key(key_for(export["metadata"].get("namespace"), source_name(export)))

    def content(self, snapshot: Mapping[str, Any]) -> JSON | None:
        name = (snapshot.get("status") or {}).get("virtualMachineSnapshotContentName")
        if not name:
            return None
        return self._contents.get_by_key(key_for(snapshot["metadata"].get("namespace"), str(name)))

    def vm_name(self, export: Mapping[str, Any]) -> str:
        """The name of the snapshot's VM ("" while the snapshot does not exist)."""
        snapshot = self.snapshot(export)
        if snapshot is None:
            return ""
        return str(((snapshot.get("spec") or {}).get("source") or {}).get("name") or "")

    def volumes(self, export: Mapping[str, Any]) -> SourceVolumes:
        namespace = export["metadata"].get("namespace")
        where = f"VirtualMachineSnapshot {namespace}/{source_name(export)}"
        snapshot = self.snapshot(export)
        if snapshot is None:
            return SourceVolumes(message=f"{where} does not exist")
        if (snapshot.get("status") or {}).get("readyToUse") is not True:
            return SourceVolumes(message=f"{where} is not ready to use")
        pvcs, restorable = self._restored_claims(export, snapshot)
        if restorable > 0 and len(pvcs) == restorable:
            return SourceVolumes(pvcs, populated=True)
        if restorable == 0:
            return SourceVolumes(message=f"{where} does not contain any volume snapshots")
        return SourceVolumes(message="Not all PVCs have been successfully restored")

    def _restored_claims(
        self, export: Mapping[str, Any], snapshot: Mapping[str, Any]
    ) -> tuple[list[JSON], int]:
        content = self.content(snapshot)
        if content is None:
            return [], 0
        source_vm = ((content.get("spec") or {}).get("source") or {}).get("virtualMachine") or {}
        total = len((content.get("status") or {}).get("volumeSnapshotStatus") or ())
        backups = (content.get("spec") or {}).get("volumeBackups") or ()
        return [self._claim(export, backup, source_vm) for backup in backups], total

    def _claim(
        self, export: Mapping[str, Any], backup: Mapping[str, Any], source_vm: Mapping[str, Any]
    ) -> JSON:
        if not backup.get("volumeSnapshotName"):
            raise SourceError("missing VolumeSnapshot name")
        meta = export["metadata"]
        namespace = meta.get("namespace")
        backed_up = ((backup.get("persistentVolumeClaim") or {}).get("metadata") or {}).get("name")
        name = f"{meta['name']}-{backed_up}"
        existing = self._pvcs.get_by_key(key_for(namespace, name))
        if existing is not None:
            return existing
        store = self._volume_snapshots()
        volume_snapshot = (
            store.get_by_key(key_for(namespace, str(backup["volumeSnapshotName"])))
            if store is not None
            else None
        )
        if volume_snapshot is None:
            raise SourceError(f"VolumeSnapshot {namespace}/{backup['volumeSnapshotName']} missing")
        try:
            pvc = restored_claim(name, volume_snapshot, backup)
        except RestoreError as err:
            raise SourceError(str(err)) from None
        if _kubevirt_content(backup, source_vm):
            pvc["metadata"]["annotations"][CONTENT_TYPE_ANNOTATION] = "kubevirt"
        pvc["metadata"]["ownerReferences"] = [owner_ref(EXPORT_API_VERSION, EXPORT_KIND, export)]
        try:
            return self._api.create(PERSISTENT_VOLUME_CLAIMS, namespace, pvc)
        except AlreadyExistsError:
            return self._api.get(PERSISTENT_VOLUME_CLAIMS, namespace, name)

    def conditions(
        self, export: Mapping[str, Any], status: JSON, sources: SourceVolumes, now: datetime
    ) -> None:
        """``VolumesCreated`` (and ``Skipped`` for a snapshot without volumes)."""
        snapshot = self.snapshot(export)
        conditions = status.get("conditions")
        if snapshot is None:
            status["conditions"] = update_condition(
                conditions, condition(READY, False, INITIALIZING, "", now)
            )
            return
        content = self.content(snapshot)
        if content is None:
            return
        total = len((content.get("status") or {}).get("volumeSnapshotStatus") or ())
        if total == 0:
            new = condition(VOLUMES_CREATED, False, VMSNAPSHOT_NO_VOLUMES, sources.message, now)
            conditions = update_condition(conditions, new)
            conditions = update_condition(conditions, condition(READY, False, INITIALIZING, "", now))
            status["phase"] = PHASE_SKIPPED
        elif total != len(sources.volumes):
            conditions = update_condition(
                conditions, condition(VOLUMES_CREATED, False, NOT_ALL_PVCS_CREATED, sources.message, now)
            )
        elif all((pvc.get("status") or {}).get("phase") == "Bound" for pvc in sources.volumes):
            conditions = update_condition(
                conditions, condition(VOLUMES_CREATED, True, ALL_PVCS_READY, sources.message, now)
            )
        else:
            conditions = update_condition(
                conditions,
                condition(VOLUMES_CREATED, False, NOT_ALL_PVCS_READY, "Not all PVCs are ready", now),
            )
        status["conditions"] = conditions


def _kubevirt_content(backup: Mapping[str, Any], source_vm: Mapping[str, Any]) -> bool:
    """A backed-up claim a DataVolume or claim volume of the VM used holds a disk image."""
    return any(
        volume.get("name") == backup.get("volumeName")
        and (volume.get("dataVolume") is not None or volume.get("persistentVolumeClaim") is not None)
        for volume in volumes_of(source_vm)
    )


def snapshot_volume_name(pvc: Mapping[str, Any], export: Mapping[str, Any]) -> str:
    """A restored claim is served under the backed-up claim's name."""
    return str(pvc["metadata"]["name"]).removeprefix(f"{export['metadata']['name']}-")
