"""Adopting orphans and releasing objects a controller no longer selects, by patching owner references.

Both patches first test the object's uid and its current references, so a change made meanwhile makes
the patch fail (and the key is retried) instead of overwriting someone else's reference.
"""

from __future__ import annotations

from typing import Any, Protocol

from kubevirt.client import KubeApi, Resource
from kubevirt_api.k8s.meta_v1 import ObjectMeta, OwnerReference


class _WithMeta(Protocol):
    @property
    def metadata(self) -> ObjectMeta | None: ...


def _references_patch(meta: ObjectMeta, refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    current = [r.to_dict() for r in meta.owner_references] if meta.owner_references else None
    path = "/metadata/ownerReferences"
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/uid", "value": meta.uid},
        {"op": "test", "path": path, "value": current},
    ]
    ops.append({"op": "add", "path": path, "value": refs} if refs else {"op": "remove", "path": path})
    return ops


def adopt(api: KubeApi, resource: Resource, obj: _WithMeta, owner: OwnerReference) -> dict[str, Any]:
    """Makes ``owner`` the controller of an object that has none; returns the patched object."""
    meta = obj.metadata or ObjectMeta()
    refs = [r.to_dict() for r in meta.owner_references or ()] + [owner.to_dict()]
    return api.patch(resource, meta.namespace, meta.name or "", _references_patch(meta, refs))


def release(api: KubeApi, resource: Resource, obj: _WithMeta, owner_uid: str) -> dict[str, Any]:
    """Drops the reference to ``owner_uid`` from an object its owner no longer selects."""
    meta = obj.metadata or ObjectMeta()
    refs = [r.to_dict() for r in meta.owner_references or () if r.uid != owner_uid]
    return api.patch(resource, meta.namespace, meta.name or "", _references_patch(meta, refs))
