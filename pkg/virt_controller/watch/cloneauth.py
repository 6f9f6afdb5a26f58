"""Whether a VM's service account may clone what a DataVolume clones (CDI's ``AuthorizeSA``).

A DataVolume cloning a PVC or a VolumeSnapshot of another namespace is created only if the service
account the VM runs as could read the source: SubjectAccessReviews ask the API server, for the
``datavolumes/source`` subresource CDI defines (or, implicitly, for creating pods, and for snapshots
also claims, in the source namespace). Sources in the VM's own namespace need no review.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubevirt.client import KubeApi, NotFoundError
from kubevirt.client.resources import DATA_VOLUMES, NAMESPACES, SUBJECT_ACCESS_REVIEWS
from kubevirt_api.view import JSON

CLONE_SOURCE_SUBRESOURCE: Final = "source"
# A DataVolume whose claim is already populated, or may be, needs no clone permission.
PRE_POPULATED_ANNOTATION: Final = "cdi.kubevirt.io/storage.prePopulated"
CHECK_STATIC_VOLUME_ANNOTATION: Final = "cdi.kubevirt.io/storage.checkStaticVolume"

CreateReview = Callable[[JSON], Mapping[str, Any]]
NamespaceExists = Callable[[str], bool]


class CloneAuthError(Exception):
    """The authorization could not be decided (a review failed, the source namespace is missing)."""


@dataclass(frozen=True)
class CloneAuthorizer:
    """Decides clone permissions with ``create_review`` (a SubjectAccessReview round trip)."""

    create_review: CreateReview
    namespace_exists: NamespaceExists

    @classmethod
    def over(cls, api: KubeApi) -> CloneAuthorizer:
        def create_review(review: JSON) -> Mapping[str, Any]:
            return api.create(SUBJECT_ACCESS_REVIEWS, None, review)

        def namespace_exists(name: str) -> bool:
            try:
                api.get(NAMESPACES, None, name)
            except NotFoundError:
                return False
            return True

        return cls(create_review=create_review, namespace_exists=namespace_exists)

    def refusal(self, dv: Mapping[str, Any], namespace: str, service_account: str) -> str | None:
        """Why ``service_account`` of ``namespace`` may not create ``dv``; None when it may.
        Raises CloneAuthError when that cannot be told."""
        meta = dv.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        no_token_okay = (
            PRE_POPULATED_ANNOTATION in annotations or CHECK_STATIC_VOLUME_ANNOTATION in annotations
        )
        target_namespace = meta.get("namespace") or namespace
        source = (dv.get("spec") or {}).get("source") or {}
        kind = (
            "pvc"
            if source.get("pvc") is not None
            else "snapshot"
            if source.get("snapshot") is not None
            else None
        )
        if kind is None:
            return None  # not a clone
        source_name = str(source[kind].get("name") or "")
        source_namespace = source[kind].get("namespace") or target_namespace
        if not self.namespace_exists(source_namespace):
            raise CloneAuthError(f"namespace {source_namespace} does not exist")
        if source_namespace == namespace:
            return None
        user = f"system:serviceaccount:{namespace}:{service_account}"
        subject = {
            "user": user,
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{namespace}",
                "system:authenticated",
            ],
        }
        allowed = (
            self._pvc_allowed(subject, source_namespace, source_name)
            if kind == "pvc"
            else self._snapshot_allowed(subject, source_namespace, source_name)
        )
        if allowed or no_token_okay:
            return None
        return f"User {user} has insufficient permissions in clone source namespace {source_namespace}"

    def _pvc_allowed(self, subject: JSON, namespace: str, name: str) -> bool:
        """Either attribute allowed is enough."""
        return any(
            self._allowed(subject, attributes)
            for attributes in (_clone_source(namespace, name), _create(namespace, name, "pods"))
        )

    def _snapshot_allowed(self, subject: JSON, namespace: str, name: str) -> bool:
        """Explicitly allowed, or both implicit attributes allowed."""
        if self._allowed(subject, _clone_source(namespace, name)):
            return True
        return all(self._allowed(subject, _create(namespace, name, kind)) for kind in ("pods", "pvcs"))

    def _allowed(self, subject: JSON, attributes: JSON) -> bool:
        review = {
            "apiVersion": SUBJECT_ACCESS_REVIEWS.api_version,
            "kind": SUBJECT_ACCESS_REVIEWS.kind,
            "spec": {**subject, "resourceAttributes": attributes},
        }
        try:
            answer = self.create_review(review)
        except Exception as err:
            raise CloneAuthError(str(err)) from err
        return bool((answer.get("status") or {}).get("allowed"))


def _clone_source(namespace: str, name: str) -> JSON:
    return {
        "namespace": namespace,
        "verb": "create",
        "group": DATA_VOLUMES.group,
        "resource": DATA_VOLUMES.plural,
        "subresource": CLONE_SOURCE_SUBRESOURCE,
        "name": name,
    }


def _create(namespace: str, name: str, resource: str) -> JSON:
    return {"namespace": namespace, "verb": "create", "resource": resource, "name": name}
