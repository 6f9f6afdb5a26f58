"""The subresource API's authorisation: which paths are open, and the SubjectAccessReview it builds."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import ApiError
from kubevirt.virt_api.rest.authorizer import (
    Authorizer,
    ReviewNotPossibleError,
    path_refusal,
    rbac_verb,
    resource_attributes,
)

USER = [("X-Remote-User", "alice"), ("X-Remote-Group", "devs"), ("X-Remote-Group", "system:authenticated")]


class Reviews:
    def __init__(self, allowed: bool, reason: str = "") -> None:
        self.seen: list[dict[str, Any]] = []
        self.answer = {"status": {"allowed": allowed, "reason": reason}}

    def __call__(self, review: dict[str, Any]) -> dict[str, Any]:
        self.seen.append(review)
        return self.answer


def test_open_paths_need_nothing() -> None:
    authorizer = Authorizer(Reviews(False))
    for path in (
        "/apis",
        "/apis/subresources.kubevirt.io/v1alpha3/version",
        "/healthz",
        "/metrics",
        "/openapi/v2",
    ):
        assert authorizer.decide(path, "GET", False, []).allowed


def test_a_request_without_a_certificate_is_not_authenticated() -> None:
    decision = Authorizer(Reviews(True)).decide(
        "/apis/x/v1/namespaces/ns/virtualmachines/vm/start", "PUT", False, USER
    )
    assert (decision.allowed, decision.reason) == (False, "request is not authenticated")


def test_the_review_names_user_groups_extras_and_the_subresource() -> None:
    reviews = Reviews(True)
    headers = [*USER, ("X-Remote-Extra-Scopes", "a"), ("X-Remote-Extra-Scopes", "b")]
    path = "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachines/vm/start"
    assert Authorizer(reviews).decide(path, "PUT", True, headers).allowed
    [review] = reviews.seen
    assert review["spec"] == {
        "user": "alice",
        "groups": ["devs", "system:authenticated"],
        "extra": {"scopes": ["a", "b"]},
        "resourceAttributes": {
            "namespace": "ns",
            "verb": "update",
            "group": "subresources.kubevirt.io",
            "version": "v1",
            "resource": "virtualmachines",
            "subresource": "start",
            "name": "vm",
        },
    }


def test_a_denial_is_the_reviews_reason() -> None:
    path = "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm/console"
    decision = Authorizer(Reviews(False, "no RBAC policy matched")).decide(path, "GET", True, USER)
    assert (decision.allowed, decision.reason) == (False, "no RBAC policy matched")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/metricsz", "unknown api endpoint: /metricsz"),
        ("/apis/g/v1/namespaces/ns/pods/p/log", "unknown resource type pods"),
        ("/apis/g/v1/namespaces/ns/other", "unknown resource type other"),
    ],
)
def test_paths_outside_the_api_are_refused(path: str, reason: str) -> None:
    decision = Authorizer(Reviews(True)).decide(path, "GET", True, USER)
    assert (decision.allowed, decision.reason) == (False, reason)


def test_missing_user_or_group_headers() -> None:
    path = "/apis/g/v1/namespaces/ns/virtualmachines/vm/start"
    assert Authorizer(Reviews(True)).decide(path, "PUT", True, []).reason == (
        "a valid user header is required for authorization"
    )
    assert Authorizer(Reviews(True)).decide(path, "PUT", True, USER[:1]).reason == (
        "a valid group header is required for authorization"
    )


def test_port_forward_reviews_ignore_port_and_protocol() -> None:
    path = "/apis/g/v1/namespaces/ns/virtualmachineinstances/vm/portforward/22/tcp"
    assert resource_attributes(path, "GET")["subresource"] == "portforward"
    nested = "/apis/g/v1/namespaces/ns/virtualmachineinstances/vm/sev/fetchcertchain"
    assert resource_attributes(nested, "GET")["subresource"] == "sev/fetchcertchain"
    assert resource_attributes("/apis/g/v1/namespaces/ns/expand-vm-spec", "PUT")["verb"] == "update"


def test_the_review_reads_the_encoded_path_as_the_router_does() -> None:
    """Each segment of the encoded path is decoded on its own: an encoded '/' never splits one."""
    path = "/apis/g/v1/namespaces/ns/virtualmachines/%76m/start"  # %76 is "v"
    assert resource_attributes(path, "PUT")["name"] == "vm"
    for ambiguous in (
        "/apis/g/v1/namespaces/ns/virtualmachines/a%2F..%2Fvm/start",
        "/apis/g/v1/namespaces/ns/virtualmachines/%2E%2E/start",
    ):
        with pytest.raises(ReviewNotPossibleError, match="invalid path segment"):
            resource_attributes(ambiguous, "PUT")
        assert Authorizer(Reviews(True)).decide(ambiguous, "PUT", True, USER).allowed is False
    # An encoded path that would decode to an open one is not open.
    assert Authorizer(Reviews(False)).decide("/openapi%2Fv2", "GET", True, USER).allowed is False


@pytest.mark.parametrize(
    ("path", "routed", "code", "message"),
    [
        ("/apis/g/v1/namespaces/ns/virtualmachines/vm/start", {"namespace": "ns", "name": "vm"}, None, ""),
        ("/apis/g/v1/namespaces/ns/expand-vm-spec", {"namespace": "ns"}, None, ""),
        ("/healthz", {}, None, ""),
        (
            "/apis/g/v1/namespaces/ns/virtualmachines/a%2fb/start",
            {"namespace": "ns", "name": "a/b"},
            400,
            "invalid path segment \"a/b\": may not contain '/'",
        ),
        (
            "/apis/g/v1/namespaces/ns/virtualmachineinstances/%2e%2e/console",
            {"namespace": "ns", "name": ".."},
            400,
            "invalid path segment \"..\": may not be '..'",
        ),
        (
            "/apis/g/v1/namespaces/ns/virtualmachines/vm/start",
            {"namespace": "ns", "name": "other"},
            400,
            "the path's name could not be read unambiguously",
        ),
        (
            "/apis/g/v1/namespaces/-ns/expand-vm-spec",
            {"namespace": "-ns"},
            404,
            'namespaces "-ns" not found',
        ),
        (
            "/apis/g/v1/namespaces/ns/virtualmachines/VM/start",
            {"namespace": "ns", "name": "VM"},
            404,
            'virtualmachine.kubevirt.io "VM" not found',
        ),
        (
            "/apis/g/v1/namespaces/ns/virtualmachineinstances/a%20b/vnc",
            {"namespace": "ns", "name": "a b"},
            404,
            'virtualmachineinstance.kubevirt.io "a b" not found',
        ),
    ],
)
def test_paths_refused_before_any_review(
    path: str, routed: dict[str, str], code: int | None, message: str
) -> None:
    refusal = path_refusal(path, routed)
    if code is None:
        assert refusal is None
        return
    assert refusal is not None
    assert (refusal.code, refusal.message) == (code, message)


def test_http_verbs_map_to_rbac_verbs() -> None:
    assert [rbac_verb(m, "x") for m in ("POST", "GET", "HEAD", "PUT", "PATCH", "DELETE")] == [
        "create",
        "get",
        "get",
        "update",
        "patch",
        "delete",
    ]
    assert (rbac_verb("GET", ""), rbac_verb("DELETE", "")) == ("list", "deletecollection")
    with pytest.raises(ReviewNotPossibleError, match="unknown http verb in request: TRACE"):
        rbac_verb("TRACE", "x")


def test_a_failed_review_propagates() -> None:
    def failing(_review: dict[str, Any]) -> dict[str, Any]:
        raise ApiError(503, "ServiceUnavailable", "down")

    path = "/apis/g/v1/namespaces/ns/virtualmachines/vm/start"
    with pytest.raises(ApiError):
        Authorizer(failing).decide(path, "PUT", True, USER)
