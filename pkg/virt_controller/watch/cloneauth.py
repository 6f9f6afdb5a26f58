"""Whether a VM's service account may clone what a DataVolume clones: CDI's ``AuthorizeSA`` through
virt-controller's own lookups (KubeVirt's ``authProxy``).

The decision is :mod:`kubevirt.cdi.cloneauth`'s. What is virt-controller's is how a missing source
namespace or DataSource is told: as a plain error ("namespace X does not exist", "dataSource ns/name
does not exist"), not as the API's not-found, so the pre-populated and check-static-volume annotations
do not forgive it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubevirt.cdi.cloneauth import CloneAuthError, ClusterAccess, authorize_service_account
from kubevirt.client import ApiError, KubeApi, NotFoundError
from kubevirt.client.resources import DATA_SOURCES, NAMESPACES, SUBJECT_ACCESS_REVIEWS
from kubevirt_api.view import JSON

__all__ = ["CloneAuthError", "CloneAuthorizer"]

CreateReview = Callable[[JSON], Mapping[str, Any]]
NamespaceExists = Callable[[str], bool]
# A DataSource by namespace and name, None when there is none.
FindDataSource = Callable[[str, str], Mapping[str, Any] | None]


def _no_data_sources(_namespace: str, _name: str) -> Mapping[str, Any] | None:
    return None


@dataclass(frozen=True)
class CloneAuthorizer:
    """Decides clone permissions with ``create_review`` (a SubjectAccessReview round trip) and the
    lookups ``namespace_exists`` and ``find_data_source``."""

    create_review: CreateReview
    namespace_exists: NamespaceExists
    find_data_source: FindDataSource = _no_data_sources

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

        def find_data_source(namespace: str, name: str) -> Mapping[str, Any] | None:
            try:
                return api.get(DATA_SOURCES, namespace, name)
            except NotFoundError:
                return None

        return cls(create_review, namespace_exists, find_data_source)

    def refusal(self, dv: Mapping[str, Any], namespace: str, service_account: str) -> str | None:
        """Why ``service_account`` of ``namespace`` (the VM's) may not create ``dv``; None when it may.
        Raises CloneAuthError when that cannot be told."""
        decision = authorize_service_account(dv, namespace, self._access(), namespace, service_account)
        return None if decision.allowed else decision.reason

    def _access(self) -> ClusterAccess:
        def create_review(review: JSON) -> Mapping[str, Any]:
            try:
                return self.create_review(review)
            except ApiError:
                raise  # told by its Status message
            except Exception as err:
                # Any failure of the round trip is the clone's error, as the Go client's would be.
                raise CloneAuthError(str(err)) from err

        def get_namespace(name: str) -> Mapping[str, Any]:
            if not self.namespace_exists(name):
                raise CloneAuthError(f"namespace {name} does not exist")
            return {"metadata": {"name": name}}

        def get_data_source(namespace: str, name: str) -> Mapping[str, Any]:
            found = self.find_data_source(namespace, name)
            if found is None:
                raise CloneAuthError(f"dataSource {namespace}/{name} does not exist")
            return found

        return ClusterAccess(create_review, get_namespace, get_data_source)
