"""CDI's DataVolume mutating webhook (``/datavolume-mutate``): clones are authorized as the requesting
user, and a DataVolume created to clone gets the token cdi-deployment checks before cloning.

For each CREATE or UPDATE of a ``cdi.kubevirt.io/v1beta1`` DataVolume:

- a DataVolume being deleted passes;
- a clone the user may not make is refused (422, CDI's reason, cause field ``spec.source.PVC.namespace``);
- a DataVolume that clones, on CREATE, gets the annotation ``cdi.kubevirt.io/storage.clone.token``: a
  ``Clone`` token for the source (claim or VolumeSnapshot) naming the target, valid five minutes, signed
  with the upload tokens' key; any other passes unchanged.

A lookup or review that fails answers 400 with its message, as CDI's handler does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric import rsa

from kubevirt.admission import jsonpatch
from kubevirt.admission.causes import FIELD_VALUE_INVALID, StatusCause
from kubevirt.admission.response import AdmissionResponse, allowed, patched
from kubevirt.admission.review import CREATE, AdmissionRequest
from kubevirt.cdi import token
from kubevirt.cdi.cloneauth import CloneAuthError, ClusterAccess, Subject, authorize
from kubevirt.cdi_apiserver.admission import error, rejected
from kubevirt.client.resources import DATA_VOLUMES
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import Annotation

PATH: Final = "/datavolume-mutate"
CLONE_TOKEN_ANNOTATION: Final = Annotation.CLONE_TOKEN
# Where CDI's refusal points, whatever the source's kind (k8s field path of spec.source.PVC.namespace).
REFUSAL_FIELD: Final = "spec.source.PVC.namespace"


def _is_datavolumes(request: AdmissionRequest) -> bool:
    resource = request.resource
    return (resource.group, resource.version, resource.resource) == (
        DATA_VOLUMES.group,
        DATA_VOLUMES.version,
        DATA_VOLUMES.plural,
    )


def _annotated(dv: dict[str, Any], value: str) -> AdmissionResponse:
    """A patch adding (or replacing) the clone token annotation, and touching nothing else."""
    before = dv.get("metadata")
    if not isinstance(before, dict):
        return patched(
            [{"op": "add", "path": "/metadata", "value": {"annotations": {CLONE_TOKEN_ANNOTATION: value}}}]
        )
    after = copy.deepcopy(before)
    annotations = after.get("annotations")
    after["annotations"] = {
        **(annotations if isinstance(annotations, dict) else {}),
        CLONE_TOKEN_ANNOTATION: value,
    }
    return patched(jsonpatch.diff(before, after, "/metadata"))


class DataVolumeMutator:
    """Answers the webhook's AdmissionRequests; tokens are signed with ``signing_key``."""

    def __init__(
        self,
        signing_key: rsa.RSAPrivateKey,
        access: ClusterAccess,
        *,
        now: Callable[[], float] | None = None,
    ) -> None:
        self._key = signing_key
        self._access = access
        self._now = now

    def admit(self, request: AdmissionRequest) -> AdmissionResponse:
        if not _is_datavolumes(request):
            return error(f"expect resource to be '{DATA_VOLUMES.plural}'")
        dv = request.object
        if dv is None:
            return error("unexpected end of JSON input")
        if (dv.get("metadata") or {}).get("deletionTimestamp"):
            return allowed()  # nothing to authorize on the way out
        subject = Subject(user=request.username, groups=request.groups, extra=request.extra)
        try:
            decision = authorize(dv, request.namespace, self._access, subject)
        except CloneAuthError as err:
            return error(str(err))
        if not decision.allowed:
            get_logger().info(
                "refused a DataVolume clone",
                namespace=request.namespace,
                name=request.name,
                reason=decision.reason,
            )
            return rejected([StatusCause(FIELD_VALUE_INVALID, decision.reason, REFUSAL_FIELD)])
        if not decision.token_needed or decision.source is None or request.operation != CREATE:
            return allowed()  # tokens are only handed out at creation
        metadata = dv.get("metadata") or {}
        target_namespace = str(metadata.get("namespace") or request.namespace)
        target_name = str(metadata.get("name") or request.name)
        payload = token.clone_payload(
            decision.source_namespace,
            decision.source.name,
            target_namespace,
            target_name,
            snapshot=decision.source.is_snapshot,
        )
        minted = token.generate(payload, self._key, now=None if self._now is None else self._now())
        get_logger().info(
            "issued a clone token",
            namespace=target_namespace,
            name=target_name,
            source_namespace=decision.source_namespace,
            source=decision.source.name,
        )
        return _annotated(dv, minted)
