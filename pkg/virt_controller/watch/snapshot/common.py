"""Names, strings and small helpers the snapshot and restore controllers share (KubeVirt v1.6's)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from kubevirt.virt_controller.watch.common import format_time
from kubevirt.virt_controller.watch.conditions import update_condition
from kubevirt_api.snapshot.v1beta1.types import SNAPSHOT_GROUP_NAME, SNAPSHOT_VERSIONS, SnapshotCondition
from kubevirt_api.view import JSON

SNAPSHOT_API_VERSION: Final = f"{SNAPSHOT_GROUP_NAME}/{SNAPSHOT_VERSIONS[0]}"
VOLUME_SNAPSHOT_GROUP: Final = "snapshot.storage.k8s.io"

SNAPSHOT_FINALIZER: Final = "snapshot.kubevirt.io/vmsnapshot-protection"
CONTENT_FINALIZER: Final = "snapshot.kubevirt.io/vmsnapshotcontent-protection"
SOURCE_FINALIZER: Final = "snapshot.kubevirt.io/snapshot-source-protection"
RESTORE_FINALIZER: Final = "snapshot.kubevirt.io/vmrestore-protection"

SOURCE_VM_NAME_LABEL: Final = "snapshot.kubevirt.io/source-vm-name"
SOURCE_VM_NAMESPACE_LABEL: Final = "snapshot.kubevirt.io/source-vm-namespace"
DEFAULT_SNAPSHOT_CLASS_ANNOTATION: Final = "snapshot.storage.kubernetes.io/is-default-class"

# Condition types and the phases of a snapshot.
READY: Final = "Ready"
PROGRESSING: Final = "Progressing"
FAILURE: Final = "Failure"
IN_PROGRESS: Final = "InProgress"
SUCCEEDED: Final = "Succeeded"
FAILED: Final = "Failed"
DELETING: Final = "Deleting"

# Snapshots and contents waiting on something outside any watch look again after this long.
RETRY_SECONDS: Final = 5.0
DEFAULT_FAILURE_DEADLINE_SECONDS: Final = 300.0


def content_name(snapshot: JSON) -> str:
    status = snapshot.get("status") or {}
    name = status.get("virtualMachineSnapshotContentName")
    return str(name) if name else f"vmsnapshot-content-{snapshot['metadata']['uid']}"


def volume_snapshot_name(snapshot_uid: str, volume: str) -> str:
    return f"vmsnapshot-{snapshot_uid}-volume-{volume}"


def with_condition(
    conditions: list[JSON] | None, type_: str, status: bool, reason: str, now: datetime
) -> list[JSON]:
    """The conditions with ``type_`` set (KubeVirt's snapshot conditions carry their text in the reason,
    and keep their transition time while status and reason stay the same)."""
    current = [SnapshotCondition.from_dict(condition) for condition in conditions or ()]
    new = SnapshotCondition(
        type=type_, status="True" if status else "False", reason=reason, last_transition_time=format_time(now)
    )
    return [condition.to_dict() for condition in update_condition(current, new)]


def finalizers(obj: Mapping[str, Any]) -> list[str]:
    return list((obj.get("metadata") or {}).get("finalizers") or [])


def finalizers_test_value(obj: Mapping[str, Any]) -> list[str] | None:
    """The finalizers as stored, for a JSON patch's ``test``: null when the object has none (the API
    server's test of ``[]`` against a missing field fails)."""
    found = (obj.get("metadata") or {}).get("finalizers")
    return list(found) if found is not None else None


def owner_ref(api_version: str, kind: str, obj: Mapping[str, Any]) -> JSON:
    """A controller reference to ``obj`` that blocks its owner's deletion (KubeVirt's NewControllerRef)."""
    meta = obj["metadata"]
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def without_managed_fields(meta: Mapping[str, Any]) -> JSON:
    return {key: value for key, value in meta.items() if key != "managedFields"}
