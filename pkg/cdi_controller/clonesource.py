"""The DataVolume side of a ``pvc`` clone, as CDI v1.63 clones on its annotation-driven (non-populator)
path, host-assisted: before the target claim exists the source must exist, match the DataVolume's
content type and volume mode, fit in the target, and not be in use by a running pod; a cross-namespace
clone needs the webhook's token. The target claim then carries the clone request (``k8s.io/CloneRequest:
<ns>/<name>``) that the upload controller (clone-mode server) and the clone controller (source pod) act on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubevirt.cdi_controller import meta
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.clonetoken import source_of
from kubevirt.cdi_controller.render import content_type
from kubevirt.cdi_controller.workerpod import pods_using
from kubevirt_api.cdi.constants import Annotation, Clone, Phase, Reason
from kubevirt_api.resource import Quantity
from kubevirt_api.view import JSON

SOURCE_KIND = "pvc"
SMALLER_TARGET = "target resources requests storage size is smaller than the source"


@dataclass(frozen=True)
class Refusal:
    """Why the clone cannot start now: the DataVolume's phase and the event that says so."""

    phase: str
    event_type: str
    reason: str
    message: str
    retry_after: float | None = None


def source_claim(dv: Mapping[str, Any], caches: Caches) -> Mapping[str, Any] | None:
    namespace, name = source_of(dv)
    return caches.pvcs.get_by_key(f"{namespace}/{name}")


def _size(spec: Mapping[str, Any], status: Mapping[str, Any] | None = None) -> int | None:
    text = ((status or {}).get("capacity") or {}).get("storage") or meta.storage_request(spec)
    try:
        return Quantity(str(text)).value() if text else None
    except ValueError:
        return None


def incompatibility(
    source: Mapping[str, Any], dv: Mapping[str, Any], claim_spec: Mapping[str, Any]
) -> str | None:
    """CDI's ValidateCanCloneSourceAndTargetContentType/Spec for the rendered target claim, as a
    message, or None when the source can be cloned into it."""
    source_content = meta.annotations_of(source).get(Annotation.CONTENT_TYPE) or "kubevirt"
    target_content = content_type(dv)
    if source_content != target_content:
        return f"source contentType ({source_content}) and target contentType ({target_content}) do not match"
    source_spec = source.get("spec") or {}
    source_mode, target_mode = meta.volume_mode(source_spec), meta.volume_mode(claim_spec)
    if source_mode != target_mode:
        return f"source volumeMode ({source_mode}) and target volumeMode ({target_mode}) do not match"
    # Requests, not capacities, as CDI compares them (a provisioner may round the capacity up).
    source_size, target_size = _size(source_spec), _size(claim_spec)
    if source_size is not None and target_size is not None and target_size < source_size:
        return SMALLER_TARGET
    return None


def size_from_source(dv: Mapping[str, Any], source: Mapping[str, Any]) -> JSON | None:
    """A copy of ``dv`` whose ``spec.storage`` asks for the source's size when it names none (CDI's
    clone size detection for claims of the same volume mode), else None."""
    storage = (dv.get("spec") or {}).get("storage")
    if storage is None or meta.storage_request(storage) is not None:
        return None
    size = _size(source.get("spec") or {}, source.get("status"))
    if size is None:
        return None
    sized = dict(dv) | {"spec": dict(dv.get("spec") or {})}
    sized["spec"]["storage"] = dict(storage) | {
        "resources": dict(storage.get("resources") or {})
        | {"requests": {"storage": str(Quantity.from_int(size))}}
    }
    return sized


def refusal_before_claim(dv: Mapping[str, Any], caches: Caches) -> Refusal | None:
    """Why the target claim cannot be made yet: no source (Pending, CloneWithoutSource), a source in
    use by a pod (CloneScheduled, CloneSourceInUse, looked at again in 5 s)."""
    name = source_of(dv)[1]
    source = source_claim(dv, caches)
    if source is None:
        message = Clone.MESSAGE_WITHOUT_SOURCE % ("pvc", name)
        return Refusal(Phase.PENDING, "Warning", Reason.CLONE_WITHOUT_SOURCE, message)
    users = [pod for pod in pods_using(caches, source) if meta.pod_phase(pod) == "Running"]
    if users:
        names = ", ".join(meta.key(pod) for pod in users)
        message = f"pod {names} using PersistentVolumeClaim {name}"
        return Refusal(
            Phase.CLONE_SCHEDULED,
            "Warning",
            Reason.CLONE_SOURCE_IN_USE,
            message,
            retry_after=Clone.SOURCE_IN_USE_REQUEUE_SECONDS,
        )
    return None


def claim_annotations(dv: Mapping[str, Any], extended_token: str | None) -> dict[str, str]:
    """What the target claim carries for the clone controllers."""
    namespace, name = source_of(dv)
    annotations = {
        Annotation.CLONE_REQUEST: f"{namespace}/{name}",
        Annotation.CLONE_TYPE: Clone.STRATEGY_COPY,
    }
    if extended_token:
        annotations[Annotation.EXTENDED_CLONE_TOKEN] = extended_token
    return annotations


def clone_phase(pvc: Mapping[str, Any], dv: Mapping[str, Any], status: JSON) -> tuple[str, str, str] | None:
    """The DataVolume's phase from the target claim (the upload server's pod phase on it) and the event of
    a new phase (type, reason, message); None leaves the phase as it is (CDI's updateStatusPhase)."""
    annotations = meta.annotations_of(pvc)
    pod_phase = annotations.get(Annotation.POD_PHASE, "")
    if pod_phase != "Succeeded":
        if Annotation.CLONE_REQUEST not in annotations or meta.claim_phase(pvc) != meta.CLAIM_BOUND:
            return None
        status["phase"] = Phase.CLONE_SCHEDULED
    namespace, name = source_of(dv)
    names = (namespace, name, meta.namespace(pvc), meta.name(pvc))
    if pod_phase == "Pending":
        status["phase"] = Phase.CLONE_SCHEDULED
        return "Normal", Reason.CLONE_SCHEDULED, Clone.MESSAGE_SCHEDULED % names
    if pod_phase == "Running":
        status["phase"] = Phase.CLONE_IN_PROGRESS
        return "Normal", Reason.CLONE_IN_PROGRESS, Clone.MESSAGE_IN_PROGRESS % names
    if pod_phase == "Failed":
        return "Warning", Reason.CLONE_FAILED, Clone.MESSAGE_FAILED % names
    if pod_phase == "Succeeded":
        status["phase"] = Phase.SUCCEEDED
        status["progress"] = "100.0%"
        return "Normal", Reason.CLONE_SUCCEEDED, Clone.MESSAGE_SUCCEEDED % names
    return None
