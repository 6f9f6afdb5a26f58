"""Reading and changing the few fields of plain JSON objects (DataVolumes, claims, pods) used here."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubevirt_api.view import JSON

FILESYSTEM = "Filesystem"
BLOCK = "Block"
CLAIM_PENDING = "Pending"
CLAIM_BOUND = "Bound"
CLAIM_LOST = "Lost"


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def name(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def namespace(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "")


def key(obj: Mapping[str, Any]) -> str:
    return f"{namespace(obj)}/{name(obj)}"


def uid(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid") or "")


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(meta(obj).get("annotations") or {})


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(meta(obj).get("labels") or {})


def deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def editable(obj: Mapping[str, Any]) -> JSON:
    """A deep copy to change (cached objects are shared), with its annotations and labels present."""
    result: JSON = copy.deepcopy(dict(obj))
    metadata = result.setdefault("metadata", {})
    metadata.setdefault("annotations", {})
    metadata.setdefault("labels", {})
    return result


def set_annotations(obj: JSON, values: Mapping[str, str]) -> None:
    obj.setdefault("metadata", {}).setdefault("annotations", {}).update(values)


def owner_reference(obj: Mapping[str, Any], api_version: str, kind: str) -> JSON:
    """A controller owner reference to ``obj`` (deletion of the owner waits for the dependant)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name(obj),
        "uid": uid(obj),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controlled_by(obj: Mapping[str, Any], owner_uid: str) -> bool:
    refs = meta(obj).get("ownerReferences") or []
    return any(ref.get("controller") and ref.get("uid") == owner_uid for ref in refs)


def claim_phase(pvc: Mapping[str, Any]) -> str:
    return str((pvc.get("status") or {}).get("phase") or "")


def volume_mode(spec: Mapping[str, Any]) -> str:
    """A claim spec's volume mode, Filesystem when unset (Kubernetes' default)."""
    return BLOCK if spec.get("volumeMode") == BLOCK else FILESYSTEM


def storage_request(spec: Mapping[str, Any]) -> str | None:
    requests = (spec.get("resources") or {}).get("requests") or {}
    value = requests.get("storage")
    return None if value is None else str(value)


def storage_class_name(spec: Mapping[str, Any]) -> str | None:
    value = spec.get("storageClassName")
    return value if isinstance(value, str) else None


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def first_container_status(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The status of the pod's first container (the worker; a registry node pull adds a server beside
    it), whatever order the kubelet lists them in."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    containers = (pod.get("spec") or {}).get("containers") or []
    first = containers[0].get("name") if containers else None
    return next((s for s in statuses if s.get("name") == first), statuses[0] if statuses else None)
