"""A worker pod's scratch claim (``<claim>-scratch``, owned by the pod): made when missing, its binding
reported on the target claim through the bound-condition annotations, as CDI's import and upload
controllers both do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubevirt.cdi_controller import meta
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.importerpod import scratch_claim, scratch_volume_claim
from kubevirt.cdi_controller.workerpod import delete_pod
from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, AlreadyExistsError, ApiError, EventSink, KubeApi
from kubevirt_api.cdi.constants import Annotation, Reason
from kubevirt_api.view import JSON

CREATING_SCRATCH_MESSAGE = "Creating scratch space"


def ensure_scratch(
    api: KubeApi,
    events: EventSink,
    caches: Caches,
    pvc: JSON,
    pod: Mapping[str, Any],
    *,
    owned: bool = False,
) -> None:
    """Creates the pod's scratch claim, or reports its binding on the target claim (annotations only:
    the caller writes the claim). ``owned``: an existing scratch claim must be the pod's (the upload
    controller's check)."""
    name = scratch_volume_claim(pod)
    if name is None:
        raise ApiError(422, "Invalid", "Scratch Volume not configured for pod")
    annotations = pvc["metadata"]["annotations"]
    existing = caches.pvcs.get_by_key(f"{meta.namespace(pvc)}/{name}")
    if existing is None:
        try:
            api.create(PERSISTENT_VOLUME_CLAIMS, meta.namespace(pvc), scratch_claim(pvc, pod, caches))
        except AlreadyExistsError:
            pass
        except ApiError as err:
            if "exceeded quota" in str(err):
                events.event(pvc, "Warning", Reason.EXCEEDED_QUOTA, str(err))
            raise
        annotations[Annotation.BOUND_CONDITION] = "false"
        annotations[Annotation.BOUND_CONDITION_MESSAGE] = CREATING_SCRATCH_MESSAGE
        annotations[Annotation.BOUND_CONDITION_REASON] = Reason.CREATING_SCRATCH
    elif owned and not meta.controlled_by(existing, meta.uid(pod)):
        # An earlier pod's, on its way out with that pod: wait for it.
        raise ApiError(409, "Conflict", f"{name} scratch PVC not controlled by pod {meta.name(pod)}")
    elif meta.deleting(existing):
        delete_pod(api, pod)
        raise ApiError(409, "Conflict", f"terminating scratch space found, deleting pod {meta.name(pod)}")
    else:
        annotations.update(bound_from_claim(existing))


def bound_from_claim(claim: Mapping[str, Any]) -> dict[str, str]:
    prefix = Annotation.BOUND_CONDITION
    phase = meta.claim_phase(claim)
    if phase == meta.CLAIM_BOUND:
        status, text = "true", ""
    elif phase == meta.CLAIM_PENDING:
        status, text = "false", "Claim Pending"
    elif phase == meta.CLAIM_LOST:
        status, text = "false", "ClaimLost"
    else:
        status, text = "false", "Unknown"
    return {prefix: status, f"{prefix}.message": text, f"{prefix}.reason": text}
