"""virt-controller's clone authorization (CDI's ``AuthorizeSA`` over KubeVirt's lookups): the VM's
service account is reviewed in the source namespace; a missing source namespace or DataSource is an
error whatever the DataVolume's annotations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubevirt.client import ApiError
from kubevirt.client.resources import DATA_SOURCES, NAMESPACES, SUBJECT_ACCESS_REVIEWS, Resource
from kubevirt.virt_controller.watch.cloneauth import CloneAuthError, CloneAuthorizer

from .fakes import JSON, FakeApi

VM_NS = "vms"
SOURCE_NS = "golden"
NO_TOKEN_ANNOTATIONS = ("cdi.kubevirt.io/storage.prePopulated", "cdi.kubevirt.io/storage.checkStaticVolume")


@dataclass
class Lookups:
    """The namespaces and DataSources there are, and the reviews (allowed per resource and subresource)."""

    namespaces: set[str] = field(default_factory=lambda: {VM_NS, SOURCE_NS})
    data_sources: dict[tuple[str, str], JSON] = field(default_factory=dict)
    allowed: set[str] = field(default_factory=set)
    failure: Exception | None = None
    reviews: list[JSON] = field(default_factory=list)

    def create_review(self, review: JSON) -> Mapping[str, Any]:
        self.reviews.append(review)
        if self.failure is not None:
            raise self.failure
        return {"status": {"allowed": _key(review["spec"]["resourceAttributes"]) in self.allowed}}

    def authorizer(self) -> CloneAuthorizer:
        return CloneAuthorizer(
            create_review=self.create_review,
            namespace_exists=self.namespaces.__contains__,
            find_data_source=lambda namespace, name: self.data_sources.get((namespace, name)),
        )

    def attributes(self) -> list[str]:
        return [_key(review["spec"]["resourceAttributes"]) for review in self.reviews]


def _key(attributes: JSON) -> str:
    """``resource`` or ``resource/subresource``."""
    return "/".join(filter(None, (attributes["resource"], attributes.get("subresource"))))


def _dv(spec: JSON, annotations: dict[str, str] | None = None) -> JSON:
    metadata: JSON = {"name": "rootdisk", "namespace": VM_NS}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": spec}


CROSS_PVC = {"source": {"pvc": {"name": "disk", "namespace": SOURCE_NS}}}
CROSS_SNAPSHOT = {"source": {"snapshot": {"name": "snap", "namespace": SOURCE_NS}}}
REFUSAL = (
    f"User system:serviceaccount:{VM_NS}:default has insufficient permissions "
    f"in clone source namespace {SOURCE_NS}"
)


def test_a_cross_namespace_clone_is_reviewed_as_the_service_account() -> None:
    lookups = Lookups()
    assert lookups.authorizer().refusal(_dv(CROSS_PVC), VM_NS, "default") == REFUSAL
    assert lookups.attributes() == ["datavolumes/source", "pods"]
    spec = lookups.reviews[0]["spec"]
    assert spec["user"] == f"system:serviceaccount:{VM_NS}:default"
    assert spec["groups"] == [
        "system:serviceaccounts",
        f"system:serviceaccounts:{VM_NS}",
        "system:authenticated",
    ]
    assert "extra" not in spec
    assert lookups.reviews[0]["kind"] == "SubjectAccessReview"


@pytest.mark.parametrize("allowed", [{"datavolumes/source"}, {"pods"}])
def test_either_review_allows_a_claim_clone(allowed: set[str]) -> None:
    lookups = Lookups(allowed=allowed)
    assert lookups.authorizer().refusal(_dv(CROSS_PVC), VM_NS, "default") is None
    assert len(lookups.reviews) == (1 if "datavolumes/source" in allowed else 2)


def test_a_snapshot_clone_needs_the_subresource_or_both_pods_and_claims() -> None:
    refused = Lookups(allowed={"pods"})
    assert refused.authorizer().refusal(_dv(CROSS_SNAPSHOT), VM_NS, "default") == REFUSAL
    assert refused.attributes() == ["datavolumes/source", "pods", "pvcs"]
    assert Lookups(allowed={"pods", "pvcs"}).authorizer().refusal(_dv(CROSS_SNAPSHOT), VM_NS, "sa") is None


def test_a_clone_from_the_service_accounts_namespace_or_no_clone_needs_no_review() -> None:
    lookups = Lookups()
    authorizer = lookups.authorizer()
    assert authorizer.refusal(_dv({"source": {"pvc": {"name": "disk"}}}), VM_NS, "default") is None
    assert authorizer.refusal(_dv({"source": {"blank": {}}}), VM_NS, "default") is None
    assert authorizer.refusal(_dv({"source": {}}), VM_NS, "default") is None
    assert authorizer.refusal(_dv({"sourceRef": {"kind": "Other", "name": "x"}}), VM_NS, "default") is None
    assert lookups.reviews == []


def test_a_datasource_reference_is_resolved_as_cdi_does() -> None:
    lookups = Lookups(allowed={"pods"})
    lookups.data_sources[(VM_NS, "fedora")] = {"spec": {"source": CROSS_PVC["source"]}}
    lookups.data_sources[(SOURCE_NS, "latest")] = {
        "spec": {"source": {"dataSource": {"name": "fedora", "namespace": VM_NS}}},
        "status": {"source": {"snapshot": {"name": "snap-1", "namespace": SOURCE_NS}}},
    }
    authorizer = lookups.authorizer()
    assert (
        authorizer.refusal(_dv({"sourceRef": {"kind": "DataSource", "name": "fedora"}}), VM_NS, "d") is None
    )
    assert lookups.reviews[-1]["spec"]["resourceAttributes"]["name"] == "disk"
    ref = {"sourceRef": {"kind": "DataSource", "name": "latest", "namespace": SOURCE_NS}}
    refusal = authorizer.refusal(_dv(ref), VM_NS, "default")
    assert refusal == REFUSAL
    assert lookups.reviews[-1]["spec"]["resourceAttributes"]["name"] == "snap-1"


@pytest.mark.parametrize("annotations", [None, *({a: "rootdisk"} for a in NO_TOKEN_ANNOTATIONS)])
def test_a_missing_source_namespace_or_datasource_is_an_error_whatever_the_annotations(
    annotations: dict[str, str] | None,
) -> None:
    authorizer = Lookups().authorizer()
    missing_namespace = _dv({"source": {"pvc": {"name": "d", "namespace": "nowhere"}}}, annotations)
    with pytest.raises(CloneAuthError, match=r"^namespace nowhere does not exist$"):
        authorizer.refusal(missing_namespace, VM_NS, "default")
    missing_source = _dv({"sourceRef": {"kind": "DataSource", "name": "gone"}}, annotations)
    with pytest.raises(CloneAuthError, match=f"^dataSource {VM_NS}/gone does not exist$"):
        authorizer.refusal(missing_source, VM_NS, "default")


@pytest.mark.parametrize("annotation", NO_TOKEN_ANNOTATIONS)
def test_a_refused_clone_annotated_as_needing_no_token_is_allowed(annotation: str) -> None:
    lookups = Lookups()
    assert lookups.authorizer().refusal(_dv(CROSS_PVC, {annotation: "rootdisk"}), VM_NS, "default") is None
    assert lookups.attributes() == ["datavolumes/source", "pods"]


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (ApiError(500, "InternalError", "the authorizer is down"), "the authorizer is down"),
        (ConnectionError("connection refused"), "connection refused"),
    ],
)
def test_a_review_that_fails_cannot_tell(failure: Exception, message: str) -> None:
    with pytest.raises(CloneAuthError) as caught:
        Lookups(failure=failure).authorizer().refusal(_dv(CROSS_PVC), VM_NS, "default")
    assert str(caught.value) == message


class _ReviewingApi(FakeApi):
    """The fake API server, allowing every SubjectAccessReview posted (they have no name to store by)."""

    def __init__(self) -> None:
        super().__init__()
        self.reviews: list[JSON] = []

    def create(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        if resource != SUBJECT_ACCESS_REVIEWS:
            return super().create(resource, namespace, body)
        self.reviews.append(dict(body))
        return {**body, "status": {"allowed": True}}


def test_over_the_api_reads_namespaces_and_datasources_and_posts_reviews() -> None:
    api = _ReviewingApi()
    for name in (VM_NS, SOURCE_NS):
        api.objects[(NAMESPACES.plural, None, name)] = {"metadata": {"name": name}}
    api.objects[(DATA_SOURCES.plural, VM_NS, "fedora")] = {
        "metadata": {"name": "fedora", "namespace": VM_NS},
        "spec": {"source": CROSS_PVC["source"]},
    }
    authorizer = CloneAuthorizer.over(api)
    assert (
        authorizer.refusal(_dv({"sourceRef": {"kind": "DataSource", "name": "fedora"}}), VM_NS, "d") is None
    )
    assert [r["spec"]["resourceAttributes"]["name"] for r in api.reviews] == ["disk"]
    with pytest.raises(CloneAuthError, match=r"^namespace nowhere does not exist$"):
        authorizer.refusal(_dv({"source": {"pvc": {"name": "d", "namespace": "nowhere"}}}), VM_NS, "d")
    with pytest.raises(CloneAuthError, match=f"^dataSource {VM_NS}/gone does not exist$"):
        authorizer.refusal(_dv({"sourceRef": {"kind": "DataSource", "name": "gone"}}), VM_NS, "d")
