"""Reading object metadata alike from plain JSON dicts (Kubernetes kinds) and kubevirt_api models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubevirt_api.k8s.meta_v1 import ObjectMeta

__all__ = [
    "labels_of",
    "name_of",
    "namespace_of",
    "node_name_of",
    "owner_uids_of",
    "resource_version_of",
    "uid_of",
]


def _meta(obj: Any) -> Mapping[str, Any] | ObjectMeta | None:
    if isinstance(obj, Mapping):
        meta = obj.get("metadata")
        return meta if isinstance(meta, Mapping) else None
    meta = getattr(obj, "metadata", None)
    return meta if isinstance(meta, ObjectMeta) else None


def _field(obj: Any, json_name: str, attribute: str) -> Any:
    meta = _meta(obj)
    if meta is None:
        return None
    if isinstance(meta, Mapping):
        return meta.get(json_name)
    return getattr(meta, attribute)


def name_of(obj: Any) -> str:
    name = _field(obj, "name", "name")
    if not isinstance(name, str) or not name:
        raise ValueError("metadata.name: required to key an object")
    return name


def namespace_of(obj: Any) -> str | None:
    namespace = _field(obj, "namespace", "namespace")
    return namespace if isinstance(namespace, str) and namespace else None


def uid_of(obj: Any) -> str | None:
    uid = _field(obj, "uid", "uid")
    return uid if isinstance(uid, str) and uid else None


def resource_version_of(obj: Any) -> str | None:
    version = _field(obj, "resourceVersion", "resource_version")
    return version if isinstance(version, str) and version else None


def labels_of(obj: Any) -> Mapping[str, str]:
    labels = _field(obj, "labels", "labels")
    return labels if isinstance(labels, Mapping) else {}


def owner_uids_of(obj: Any) -> list[str]:
    refs = _field(obj, "ownerReferences", "owner_references") or []
    uids: list[str] = []
    for ref in refs:
        uid = ref.get("uid") if isinstance(ref, Mapping) else getattr(ref, "uid", None)
        if isinstance(uid, str) and uid:
            uids.append(uid)
    return uids


def node_name_of(obj: Any) -> str | None:
    """The node an object runs on: a pod's ``spec.nodeName``, a VMI's ``status.nodeName``."""
    if isinstance(obj, Mapping):
        spec = obj.get("spec")
        node = spec.get("nodeName") if isinstance(spec, Mapping) else None
        if node is None:
            status = obj.get("status")
            node = status.get("nodeName") if isinstance(status, Mapping) else None
    else:
        status = getattr(obj, "status", None)
        node = getattr(status, "node_name", None) if status is not None else None
    return node if isinstance(node, str) and node else None
