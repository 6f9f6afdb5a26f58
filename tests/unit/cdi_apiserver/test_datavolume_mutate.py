"""CDI's DataVolume mutating webhook: clones are authorized as the requesting user (SubjectAccessReviews
in the source namespace), a clone created gets a clone token, everything else passes unchanged."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubevirt.admission import jsonpatch
from kubevirt.cdi import token
from kubevirt.cdi.cloneauth import ClusterAccess
from kubevirt.cdi_apiserver.admission import answer
from kubevirt.cdi_apiserver.authorizer import TokenAuthorizer
from kubevirt.cdi_apiserver.datavolume_mutate import CLONE_TOKEN_ANNOTATION, PATH, DataVolumeMutator
from kubevirt.cdi_apiserver.server import UploadTokenAPI, application
from kubevirt.client import ApiError, NotFoundError

from .harness import SIGNING_KEY, Reviews, call

JSON = dict[str, Any]
TARGET_NS = "target"
SOURCE_NS = "golden"


@dataclass
class Cluster:
    """The namespaces and DataSources there are, and the reviews (allowed per resource and subresource)."""

    namespaces: set[str] = field(default_factory=lambda: {TARGET_NS, SOURCE_NS})
    data_sources: dict[tuple[str, str], JSON] = field(default_factory=dict)
    allowed: set[str] = field(default_factory=set)  # "datavolumes/source", "pods", "pvcs"
    fail_reviews: bool = False
    reviews: list[JSON] = field(default_factory=list)

    def create_review(self, review: JSON) -> Mapping[str, Any]:
        self.reviews.append(review)
        if self.fail_reviews:
            raise ApiError(500, "InternalError", "the authorizer is down")
        attributes = review["spec"]["resourceAttributes"]
        key = "/".join(filter(None, (attributes["resource"], attributes.get("subresource"))))
        return {"status": {"allowed": key in self.allowed}}

    def get_namespace(self, name: str) -> Mapping[str, Any]:
        if name not in self.namespaces:
            raise NotFoundError(404, "NotFound", f'namespaces "{name}" not found')
        return {"metadata": {"name": name}}

    def get_data_source(self, namespace: str, name: str) -> Mapping[str, Any]:
        if (namespace, name) not in self.data_sources:
            raise NotFoundError(404, "NotFound", f'datasources.cdi.kubevirt.io "{name}" not found')
        return self.data_sources[(namespace, name)]

    def access(self) -> ClusterAccess:
        return ClusterAccess(self.create_review, self.get_namespace, self.get_data_source)


def _dv(
    source: JSON | None = None,
    *,
    source_ref: JSON | None = None,
    annotations: dict[str, str] | None = None,
    **metadata: Any,
) -> JSON:
    spec: JSON = {"storage": {"resources": {"requests": {"storage": "1Gi"}}}}
    if source is not None:
        spec["source"] = source
    if source_ref is not None:
        spec["sourceRef"] = source_ref
    meta: JSON = {"name": "disk", "namespace": TARGET_NS, **metadata}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume", "metadata": meta, "spec": spec}


def _review(dv: JSON, operation: str = "CREATE", *, resource: str = "datavolumes", api: str = "v1") -> JSON:
    request: JSON = {
        "uid": "uid-1",
        "kind": {"group": "cdi.kubevirt.io", "version": "v1beta1", "kind": "DataVolume"},
        "resource": {"group": "cdi.kubevirt.io", "version": "v1beta1", "resource": resource},
        "name": "disk",
        "namespace": TARGET_NS,
        "operation": operation,
        "userInfo": {
            "username": "alice",
            "groups": ["devs", "system:authenticated"],
            "extra": {"scopes": ["a"]},
        },
        "object": dv,
    }
    if operation == "UPDATE":
        request["oldObject"] = dv
    return {"apiVersion": f"admission.k8s.io/{api}", "kind": "AdmissionReview", "request": request}


def _post(cluster: Cluster, review: JSON, *, content_type: str = "application/json") -> tuple[int, str]:
    mutator = DataVolumeMutator(SIGNING_KEY, cluster.access())
    # No front proxy trusted and no client certificate: the API server calls webhooks directly.
    app = application(
        UploadTokenAPI(SIGNING_KEY),
        TokenAuthorizer(Reviews(allowed=False)),
        lambda: None,
        peer=lambda _request: None,
        webhooks={PATH: mutator.admit},
    )
    answer = call(app, "POST", PATH, body=json.dumps(review).encode(), headers={"Content-Type": content_type})
    return answer.status, answer.text


def _admit(cluster: Cluster, dv: JSON, operation: str = "CREATE", **kwargs: Any) -> JSON:
    status, text = _post(cluster, _review(dv, operation, **kwargs))
    assert status == 200
    document = json.loads(text)
    assert document["kind"] == "AdmissionReview"
    response: JSON = document["response"]
    assert response["uid"] == "uid-1"
    return response


def _patched(response: JSON, dv: JSON) -> JSON:
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    result: JSON = jsonpatch.apply(dv, patch)
    return result


def _clone_token(response: JSON, dv: JSON) -> token.Payload:
    annotated = _patched(response, dv)
    minted = annotated["metadata"]["annotations"][CLONE_TOKEN_ANNOTATION]
    # Issued now, valid five minutes, signed with the upload tokens' key.
    claims = json.loads(base64.urlsafe_b64decode(minted.split(".")[1] + "=="))
    assert claims["iss"] == "cdi-apiserver"
    assert claims["exp"] - claims["iat"] == 300
    return token.validate(minted, SIGNING_KEY.public_key())


PVC_SOURCE = {"pvc": {"name": "golden-disk"}}
CROSS_PVC_SOURCE = {"pvc": {"name": "golden-disk", "namespace": SOURCE_NS}}
CROSS_SNAPSHOT_SOURCE = {"snapshot": {"name": "golden-snap", "namespace": SOURCE_NS}}


def test_a_same_namespace_clone_gets_a_token_without_any_review() -> None:
    cluster = Cluster()
    dv = _dv(PVC_SOURCE)
    payload = _clone_token(_admit(cluster, dv), dv)
    assert payload == token.Payload(
        operation="Clone",
        name="golden-disk",
        namespace=TARGET_NS,
        resource={"group": "", "version": "v1", "resource": "persistentvolumeclaims"},
        params={"targetNamespace": TARGET_NS, "targetName": "disk"},
    )
    assert cluster.reviews == []


def test_a_cross_namespace_clone_the_user_may_not_make_is_refused_with_cdis_cause() -> None:
    cluster = Cluster()
    response = _admit(cluster, _dv(CROSS_PVC_SOURCE))
    assert response["allowed"] is False
    assert "patch" not in response
    reason = f"User alice has insufficient permissions in clone source namespace {SOURCE_NS}"
    assert response["status"] == {
        "metadata": {},
        "message": f" {reason}",
        "details": {
            "causes": [
                {"reason": "FieldValueInvalid", "message": reason, "field": "spec.source.PVC.namespace"}
            ]
        },
        "code": 422,
    }
    # The explicit subresource first, then pods, as the user with groups and extras.
    assert [review["spec"]["resourceAttributes"] for review in cluster.reviews] == [
        {
            "namespace": SOURCE_NS,
            "verb": "create",
            "group": "cdi.kubevirt.io",
            "resource": "datavolumes",
            "subresource": "source",
            "name": "golden-disk",
        },
        {"namespace": SOURCE_NS, "verb": "create", "resource": "pods", "name": "golden-disk"},
    ]
    spec = cluster.reviews[0]["spec"]
    assert (spec["user"], spec["groups"], spec["extra"]) == (
        "alice",
        ["devs", "system:authenticated"],
        {"scopes": ["a"]},
    )
    assert cluster.reviews[0]["kind"] == "SubjectAccessReview"


@pytest.mark.parametrize("allowed", [{"datavolumes/source"}, {"pods"}])
def test_a_cross_namespace_clone_allowed_by_either_review_gets_a_token_for_the_source(
    allowed: set[str],
) -> None:
    cluster = Cluster(allowed=allowed)
    dv = _dv(CROSS_PVC_SOURCE)
    payload = _clone_token(_admit(cluster, dv), dv)
    assert (payload.name, payload.namespace) == ("golden-disk", SOURCE_NS)
    assert payload.params == {"targetNamespace": TARGET_NS, "targetName": "disk"}
    assert len(cluster.reviews) == (1 if "datavolumes/source" in allowed else 2)


def test_a_snapshot_clone_needs_the_subresource_or_both_pods_and_claims() -> None:
    refused = Cluster(allowed={"pods"})
    assert _admit(refused, _dv(CROSS_SNAPSHOT_SOURCE))["allowed"] is False
    assert [r["spec"]["resourceAttributes"]["resource"] for r in refused.reviews] == [
        "datavolumes",
        "pods",
        "pvcs",
    ]
    cluster = Cluster(allowed={"pods", "pvcs"})
    dv = _dv(CROSS_SNAPSHOT_SOURCE)
    payload = _clone_token(_admit(cluster, dv), dv)
    assert payload.resource == {
        "group": "snapshot.storage.k8s.io",
        "version": "v1",
        "resource": "volumesnapshots",
    }
    assert (payload.name, payload.namespace) == ("golden-snap", SOURCE_NS)


def test_a_datasource_reference_clones_what_the_datasource_names() -> None:
    cluster = Cluster(allowed={"datavolumes/source"})
    cluster.data_sources[(SOURCE_NS, "fedora")] = {"spec": {"source": CROSS_PVC_SOURCE}}
    dv = _dv(source_ref={"kind": "DataSource", "name": "fedora", "namespace": SOURCE_NS})
    payload = _clone_token(_admit(cluster, dv), dv)
    assert (payload.name, payload.namespace, payload.resource["resource"]) == (
        "golden-disk",
        SOURCE_NS,
        "persistentvolumeclaims",
    )
    assert cluster.reviews[0]["spec"]["resourceAttributes"]["namespace"] == SOURCE_NS


def test_a_datasource_pointing_at_another_clones_what_its_status_resolved() -> None:
    cluster = Cluster()
    cluster.data_sources[(TARGET_NS, "latest")] = {
        "spec": {"source": {"dataSource": {"name": "fedora", "namespace": SOURCE_NS}}},
        "status": {"source": {"snapshot": {"name": "snap-1"}}},
    }
    dv = _dv(source_ref={"kind": "DataSource", "name": "latest"})
    payload = _clone_token(_admit(cluster, dv), dv)
    # No namespace in the resolved source: the target's, so no review either.
    assert (payload.name, payload.namespace, payload.resource["resource"]) == (
        "snap-1",
        TARGET_NS,
        "volumesnapshots",
    )
    assert cluster.reviews == []


def test_a_missing_datasource_or_source_namespace_is_an_error_unless_no_token_is_needed() -> None:
    missing_source = _dv(source_ref={"kind": "DataSource", "name": "gone"})
    response = _admit(Cluster(), missing_source)
    assert response["allowed"] is False
    assert response["status"] == {
        "metadata": {},
        "message": 'datasources.cdi.kubevirt.io "gone" not found',
        "code": 400,
    }
    missing_namespace = _dv({"pvc": {"name": "d", "namespace": "nowhere"}})
    assert _admit(Cluster(), missing_namespace)["status"]["message"] == 'namespaces "nowhere" not found'
    for annotation in ("cdi.kubevirt.io/storage.prePopulated", "cdi.kubevirt.io/storage.checkStaticVolume"):
        for dv in (missing_source, missing_namespace):
            dv["metadata"]["annotations"] = {annotation: "disk"}
            response = _admit(Cluster(), dv)
            assert response == {"uid": "uid-1", "allowed": True}


def test_a_refused_clone_of_a_prepopulated_datavolume_passes_without_a_token() -> None:
    dv = _dv(CROSS_PVC_SOURCE, annotations={"cdi.kubevirt.io/storage.prePopulated": "disk"})
    assert _admit(Cluster(), dv) == {"uid": "uid-1", "allowed": True}


def test_a_review_that_fails_is_a_400() -> None:
    response = _admit(Cluster(fail_reviews=True), _dv(CROSS_PVC_SOURCE))
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert response["status"]["message"] == "the authorizer is down"


def test_an_update_is_authorized_but_gets_no_token() -> None:
    assert _admit(Cluster(), _dv(PVC_SOURCE), "UPDATE") == {"uid": "uid-1", "allowed": True}
    assert _admit(Cluster(allowed={"pods"}), _dv(CROSS_PVC_SOURCE), "UPDATE") == {
        "uid": "uid-1",
        "allowed": True,
    }
    assert _admit(Cluster(), _dv(CROSS_PVC_SOURCE), "UPDATE")["status"]["code"] == 422


@pytest.mark.parametrize(
    "dv",
    [
        _dv({"http": {"url": "http://example.test/disk.img"}}),
        _dv({"blank": {}}),
        _dv(source_ref={"kind": "Other", "name": "x"}),
        _dv(CROSS_PVC_SOURCE, deletionTimestamp="2026-01-01T00:00:00Z"),
    ],
)
def test_a_datavolume_that_does_not_clone_or_is_going_passes_unchanged(dv: JSON) -> None:
    cluster = Cluster()
    assert _admit(cluster, dv) == {"uid": "uid-1", "allowed": True}
    assert cluster.reviews == []


def test_the_token_annotation_is_added_beside_others_and_replaces_a_forged_one() -> None:
    dv = _dv(PVC_SOURCE, annotations={"team": "a", CLONE_TOKEN_ANNOTATION: "forged"})
    response = _admit(Cluster(), dv)
    patch = json.loads(base64.b64decode(response["patch"]))
    assert [(op["op"], op["path"]) for op in patch] == [
        ("replace", "/metadata/annotations/cdi.kubevirt.io~1storage.clone.token")
    ]
    annotated = _patched(response, dv)
    assert annotated["metadata"]["annotations"]["team"] == "a"
    assert annotated["metadata"]["annotations"][CLONE_TOKEN_ANNOTATION] != "forged"
    assert annotated["spec"] == dv["spec"]


def test_another_resource_is_refused() -> None:
    response = _admit(Cluster(), _dv(PVC_SOURCE), resource="persistentvolumeclaims")
    assert response["allowed"] is False
    assert response["status"] == {
        "metadata": {},
        "message": "expect resource to be 'datavolumes'",
        "code": 400,
    }


def test_the_answer_has_the_reviews_api_version() -> None:
    status, text = _post(Cluster(), _review(_dv({"blank": {}}), api="v1beta1"))
    assert status == 200
    assert json.loads(text)["apiVersion"] == "admission.k8s.io/v1beta1"


def test_a_body_that_is_not_a_review_is_answered_with_a_400_response() -> None:
    status, text = _post(Cluster(), {"kind": "Pod"})
    assert status == 200
    response = json.loads(text)["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 400


def test_another_content_type_gets_an_empty_answer_as_from_cdi() -> None:
    status, text = _post(Cluster(), _review(_dv(PVC_SOURCE)), content_type="text/plain")
    assert (status, text) == (200, "")


def test_the_clone_payload_names_source_and_target() -> None:
    payload = token.clone_payload("src", "pvc-a", "dst", "dv-b")
    minted = token.generate(payload, SIGNING_KEY)
    assert token.validate(minted, SIGNING_KEY.public_key()) == payload
    claims = json.loads(base64.urlsafe_b64decode(minted.split(".")[1] + "=="))
    assert claims["operation"] == "Clone"
    assert claims["params"] == {"targetNamespace": "dst", "targetName": "dv-b"}


def test_an_admitter_that_fails_answers_500() -> None:
    def broken(_request: Any) -> Any:
        raise RuntimeError("boom")

    body = json.dumps(_review(_dv(PVC_SOURCE))).encode()
    assert json.loads(answer(body, broken))["response"]["status"] == {
        "metadata": {},
        "message": "boom",
        "code": 500,
    }
