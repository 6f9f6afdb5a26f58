"""Field paths, response encoding, AdmissionReview decoding and JSON patches."""

from __future__ import annotations

import base64
import json

import pytest

from kubevirt.admission import jsonpatch, response
from kubevirt.admission.causes import StatusCause, invalid
from kubevirt.admission.field import Path
from kubevirt.admission.review import ReviewDecodeError, decode_review


def test_field_paths_print_like_kubernetes() -> None:
    spec = Path("spec")
    assert (
        str(spec.child("domain", "devices", "disks").index(1).child("name"))
        == "spec.domain.devices.disks[1].name"
    )
    assert str(Path().child("a")) == "a"
    # KubeVirt's odd path for a disk's PCI address composes the same way.
    disks = spec.child("domain", "devices", "disks")
    assert str(disks.child("domain", "devices", "disks", "disk").index(0)) == (
        "spec.domain.devices.disks.domain.devices.disks.disk[0]"
    )


def _causes(n: int) -> list[StatusCause]:
    return [invalid(Path("spec").child(f"f{i}"), f"m{i}") for i in range(n)]


def test_invalid_response_truncates_to_ten_causes_and_counts_the_rest() -> None:
    answer = response.invalid(_causes(13))
    assert not answer.allowed
    assert answer.status is not None
    assert answer.status["code"] == 422
    assert answer.status["reason"] == "Invalid"
    assert len(answer.status["details"]["causes"]) == 10
    assert (
        answer.status["message"] == ", ".join(f"m{i}" for i in range(10)) + ", and 3 more validation errors"
    )
    assert len(answer.causes) == 13


def test_invalid_response_with_few_causes_joins_all_messages() -> None:
    answer = response.invalid(_causes(2))
    assert answer.status is not None
    assert answer.status["message"] == "m0, m1"
    assert answer.status["details"]["causes"][1] == {
        "reason": "FieldValueInvalid",
        "message": "m1",
        "field": "spec.f1",
    }


def test_status_causes_use_the_go_wire_names() -> None:
    # metav1.StatusCause: the type travels as "reason", and empty values are left out.
    schema_error = StatusCause("", "spec.domain in body is required", "")
    answer = response.invalid([schema_error, *_causes(1)])
    assert answer.status is not None
    assert answer.status["details"]["causes"] == [
        {"message": "spec.domain in body is required"},
        {"reason": "FieldValueInvalid", "message": "m0", "field": "spec.f0"},
    ]
    # virtctl validate keeps the corpus' form.
    assert schema_error.to_dict() == {"type": "", "message": "spec.domain in body is required", "field": ""}


def test_from_causes_allows_when_empty() -> None:
    assert response.from_causes([]).allowed
    assert not response.from_causes(_causes(1)).allowed


def test_error_and_eviction_codes() -> None:
    assert response.error("boom").to_dict("u")["status"]["code"] == 400
    denied = response.too_many_requests("Eviction triggered evacuation of VMI").to_dict("u")
    assert denied["allowed"] is False
    assert denied["status"]["code"] == 429


def test_patch_is_base64_json_with_patch_type() -> None:
    ops = [{"op": "add", "path": "/a", "value": 1}]
    wire = response.patched(ops).to_dict("uid-1")
    assert wire["uid"] == "uid-1"
    assert wire["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(wire["patch"])) == ops


def _review(**request: object) -> bytes:
    base: dict[str, object] = {
        "uid": "u1",
        "operation": "CREATE",
        "resource": {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachineinstances"},
        "userInfo": {"username": "alice", "groups": ["dev"]},
        "object": {"kind": "VirtualMachineInstance"},
    }
    base.update(request)
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": base}
    ).encode()


def test_decode_review_reads_the_request() -> None:
    review = decode_review(_review(namespace="ns", dryRun=True))
    request = review.request
    assert review.api_version == "admission.k8s.io/v1"
    assert (request.uid, request.operation, request.namespace) == ("u1", "CREATE", "ns")
    assert request.resource.resource == "virtualmachineinstances"
    assert request.username == "alice"
    assert request.groups == ("dev",)
    assert request.dry_run is True
    assert request.object == {"kind": "VirtualMachineInstance"}


def test_decode_review_reads_the_user_extra() -> None:
    node = {"authentication.kubernetes.io/node-name": ["node-a"], "empty": None}
    request = decode_review(_review(userInfo={"username": "sa", "extra": node})).request
    assert request.extra == {"authentication.kubernetes.io/node-name": ["node-a"], "empty": []}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "must be an object"),
        (json.dumps({"kind": "Pod", "apiVersion": "v1"}).encode(), "expected kind AdmissionReview"),
        (json.dumps({"kind": "AdmissionReview", "apiVersion": "v9"}).encode(), "unsupported apiVersion"),
        (json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}).encode(), "no request"),
        (_review(uid=""), "uid is required"),
        (_review(operation="EXPLODE"), "operation"),
        (_review(object=[1, 2]), "request.object must be an object"),
        (_review(userInfo={"groups": "admins"}), "groups must be a list"),
        (_review(userInfo={"extra": {"k": "v"}}), r"extra\[k\] must be a list of strings"),
        (_review(userInfo={"extra": ["k"]}), "extra must be an object"),
        (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
        (b'{"kind": ' + b"9" * 5000 + b"}", "not valid JSON"),
        (b"\xff\xfe{}", "not valid JSON"),
    ],
)
def test_decode_review_refuses_with_a_reason(body: bytes, reason: str) -> None:
    with pytest.raises(ReviewDecodeError, match=reason):
        decode_review(body)


def test_diff_then_apply_round_trips() -> None:
    before = {"a": 1, "b": {"c": [1, 2], "d": "x"}, "gone": True, "s/l~": 1}
    after = {"a": 2, "b": {"c": [1, 2, 3], "d": "x", "e": None}, "new": {"k": "v"}, "s/l~": 2}
    patch = jsonpatch.diff(before, after)
    assert {"op": "remove", "path": "/gone"} in patch
    assert {"op": "replace", "path": "/s~1l~0", "value": 2} in patch
    assert jsonpatch.apply(before, patch) == after
    assert jsonpatch.diff(after, after) == []


def test_diff_distinguishes_types_that_compare_equal() -> None:
    assert jsonpatch.diff({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]


def test_top_level_patch_replaces_whole_fields() -> None:
    before = {"metadata": {"name": "x"}, "spec": {"a": 1}}
    after = {"metadata": {"name": "x"}, "spec": {"a": 2}, "status": {"phase": "Pending"}}
    patch = jsonpatch.top_level(before, after, ("spec", "metadata", "status"))
    assert patch == [
        {"op": "replace", "path": "/spec", "value": {"a": 2}},
        {"op": "add", "path": "/status", "value": {"phase": "Pending"}},
    ]
    assert jsonpatch.apply(before, patch) == after


def test_apply_refuses_bad_paths() -> None:
    with pytest.raises(jsonpatch.PatchError):
        jsonpatch.apply({"a": 1}, [{"op": "replace", "path": "/b", "value": 1}])


def test_schema_findings_are_worded_like_go_openapi() -> None:
    from kubevirt.admission.schema import schema_check

    def messages(document: dict[str, object]) -> list[str]:
        return [cause.message for cause in schema_check("VirtualMachineInstance", document)]

    assert messages({"spec": {"domain": {"devices": {"disks": {}}}}}) == [
        'spec.domain.devices.disks in body must be of type array: "object"'
    ]
    assert messages({"spec": {"domain": {"devices": {"disks": None}}}}) == [
        'spec.domain.devices.disks in body must be of type array: "null"'
    ]
    assert messages({"spec": {"domain": {"devices": {"disks": [{"name": "a", "turbo": True}]}}}}) == [
        "spec.domain.devices.disks.turbo in body is a forbidden property"
    ]
    assert messages({"spec": {}}) == ["spec.domain in body is required"]
    # Quantities are only type-checked; their syntax is left to decoding.
    assert (
        messages({"spec": {"domain": {"devices": {}, "resources": {"requests": {"memory": "lots"}}}}}) == []
    )
    # Object metadata belongs to the API server.
    assert (
        messages({"metadata": {"creationTimestamp": None, "x": 1}, "spec": {"domain": {"devices": {}}}}) == []
    )
