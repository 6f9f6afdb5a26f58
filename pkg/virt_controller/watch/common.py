"""Small pieces every reconciler shares: sync errors, clocks and times, owner references, annotations."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from kubevirt.client import KubeApi, Resource
from kubevirt.controller import Store
from kubevirt.controller.store import OWNER_INDEX
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstanceReplicaSet
from kubevirt_api.core.v1.constants import (
    CONTROLLER_API_LATEST_VERSION_OBSERVED_ANNOTATION,
    CONTROLLER_API_STORAGE_VERSION_OBSERVED_ANNOTATION,
)
from kubevirt_api.k8s.meta_v1 import ObjectMeta, OwnerReference

Clock = Callable[[], datetime]
StampedModel = VirtualMachine | VirtualMachineInstanceReplicaSet
Enqueue = Callable[[str], None]

# KubeVirt's newest and storage API versions, stamped on every object a controller handles.
API_LATEST_VERSION: Final = "v1"
API_STORAGE_VERSION: Final = "v1"


def utc_now() -> datetime:
    return datetime.now(UTC)


class SyncError(Exception):
    """A reconcile step that failed in a way worth reporting on the object (a condition's reason)."""

    def __init__(self, message: str, reason: str, *, requeue: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.requeue = requeue


def format_time(moment: datetime) -> str:
    """``metav1.Time`` on the wire: RFC 3339 in UTC, whole seconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """Reads an RFC 3339 timestamp; raises ``ValueError`` on anything else."""
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def controller_ref(meta: ObjectMeta | None) -> OwnerReference | None:
    """The owner reference marked ``controller: true``, if any."""
    for ref in (meta.owner_references if meta is not None else None) or []:
        if ref.controller:
            return ref
    return None


def controller_ref_of_dict(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The controlling owner reference of a plain-JSON object (a Pod)."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def controlled_pods(pods: Store[Any], owner_uid: str) -> list[Any]:
    """The pods in ``pods`` whose controlling owner is the object ``owner_uid`` (the store's owner index)."""
    return [
        pod
        for pod in pods.by_index(OWNER_INDEX, owner_uid)
        if (ref := controller_ref_of_dict(pod)) is not None and ref.get("uid") == owner_uid
    ]


def owner_reference(api_version: str, kind: str, name: str, uid: str) -> OwnerReference:
    """A controller reference that also blocks the owner's foreground deletion, as KubeVirt sets it."""
    return OwnerReference(
        api_version=api_version, kind=kind, name=name, uid=uid, controller=True, block_owner_deletion=True
    )


def has_observed_api_version(meta: ObjectMeta | None) -> bool:
    annotations = (meta.annotations if meta is not None else None) or {}
    return annotations.get(CONTROLLER_API_LATEST_VERSION_OBSERVED_ANNOTATION) == API_LATEST_VERSION


def stamp_api_version(meta: ObjectMeta) -> None:
    """Records the API versions this controller read the object with (KubeVirt does this first)."""
    annotations = dict(meta.annotations or {})
    annotations[CONTROLLER_API_LATEST_VERSION_OBSERVED_ANNOTATION] = API_LATEST_VERSION
    annotations[CONTROLLER_API_STORAGE_VERSION_OBSERVED_ANNOTATION] = API_STORAGE_VERSION
    meta.annotations = annotations


def write_api_version_stamp(api: KubeApi, resource: Resource, obj: StampedModel) -> bool:
    """KubeVirt's first step: an object not yet stamped is stamped and written, and the pass ends.

    Writing it once with the newest API version keeps the stored version current. Only the annotations
    are sent (a merge patch guarded by the resourceVersion, as strict as an update): an update of the
    whole object as this model writes it could drop what a Go client stored, such as a template's
    ``creationTimestamp: null``, and a changed spec would raise the generation KubeVirt's clients
    compare. Returns whether it wrote (the write's watch event brings the object back for the real pass).
    """
    if has_observed_api_version(obj.metadata):
        return False
    meta = (obj.metadata or ObjectMeta()).model_copy(deep=True)
    stamp_api_version(meta)
    body = {"metadata": {"annotations": meta.annotations, "resourceVersion": meta.resource_version}}
    api.patch(resource, meta.namespace, meta.name or "", body, patch_type="merge")
    return True


def describe_api_error(err: Exception) -> str:
    """The server's message plus each cause (field: message) when the error carries them."""
    message = getattr(err, "message", "") or str(err)
    causes = getattr(err, "causes", None) or []
    details = [f"{c.get('field', '')}: {c.get('message', '')}".lstrip(": ") for c in causes]
    missing = [d for d in details if d not in message]
    return "; ".join([message, *missing]) if missing else message


def finalizers_patch(current: list[str] | None, wanted: list[str]) -> list[dict[str, Any]]:
    """A JSON patch setting the finalizers only if nobody changed them meanwhile (the ``test`` fails
    otherwise). ``add`` rather than ``replace``: it also works when the object has no finalizers yet."""
    return [
        {"op": "test", "path": "/metadata/finalizers", "value": current},
        {"op": "add", "path": "/metadata/finalizers", "value": wanted},
    ]
