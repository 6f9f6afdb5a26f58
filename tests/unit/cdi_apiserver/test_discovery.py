"""Discovery, health and OpenAPI: open to anyone (no front-proxy identity needed), in CDI's shapes."""

from __future__ import annotations

import json

import pytest

from .harness import Reviews, call, token_application

GROUP = "upload.cdi.kubevirt.io"


def _get(path: str) -> tuple[int, object]:
    reviews = Reviews()
    answer = call(token_application(reviews, peer=None), "GET", path)
    assert reviews.seen == [], "discovery must not need a SubjectAccessReview"
    assert answer.content_type == "application/json"
    return answer.status, json.loads(answer.text)


@pytest.mark.parametrize("path", ["/apis", "/apis/"])
def test_api_group_list_names_the_upload_group(path: str) -> None:
    status, document = _get(path)
    assert status == 200
    assert document == {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "kind": "APIGroup",
                "apiVersion": "v1",
                "name": GROUP,
                "versions": [{"groupVersion": f"{GROUP}/v1beta1", "version": "v1beta1"}],
                "preferredVersion": {"groupVersion": f"{GROUP}/v1beta1", "version": "v1beta1"},
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
            }
        ],
    }


def test_api_group() -> None:
    status, document = _get(f"/apis/{GROUP}")
    assert status == 200
    assert isinstance(document, dict)
    assert document["kind"] == "APIGroup"
    assert document["preferredVersion"] == {"groupVersion": f"{GROUP}/v1beta1", "version": "v1beta1"}


@pytest.mark.parametrize("path", [f"/apis/{GROUP}/v1beta1", f"/apis/{GROUP}/v1beta1/"])
def test_resource_list_offers_create_on_uploadtokenrequests(path: str) -> None:
    status, document = _get(path)
    assert status == 200
    assert document == {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{GROUP}/v1beta1",
        "resources": [
            {
                "name": "uploadtokenrequests",
                "singularName": "uploadtokenrequest",
                "namespaced": True,
                "group": GROUP,
                "version": "v1beta1",
                "kind": "UploadTokenRequest",
                "verbs": ["create"],
                "shortNames": ["utr", "utrs"],
            }
        ],
    }


def test_root_paths_are_cdis_sorted_list() -> None:
    status, document = _get("/")
    assert status == 200
    assert document == {
        "paths": [
            "/apis",
            "/apis/",
            f"/apis/{GROUP}",
            f"/apis/{GROUP}/v1beta1",
            "/healthz",
            "/openapi/v2",
        ]
    }


def test_openapi_documents_every_operation_completely() -> None:
    status, document = _get("/openapi/v2")
    assert status == 200
    assert isinstance(document, dict)
    assert document["swagger"] == "2.0"
    create = document["paths"][f"/apis/{GROUP}/v1beta1/namespaces/{{namespace}}/uploadtokenrequests"]["post"]
    assert create["operationId"] == "createNamespacedUploadTokenRequest-v1beta1"
    # The aggregator's v2 -> v3 conversion needs parameters and responses on every operation.
    for operations in document["paths"].values():
        for operation in operations.values():
            assert "parameters" in operation
            assert operation["responses"]
    spec = document["definitions"]["v1beta1.UploadTokenRequestSpec"]
    assert spec["properties"]["pvcName"]["type"] == "string"
    # Every reference resolves inside the document.
    for ref in _refs(document):
        assert ref.removeprefix("#/definitions/") in document["definitions"]


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if "$ref" in node else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def test_healthz_is_plain_ok_without_identity() -> None:
    answer = call(token_application(Reviews(), peer=None), "GET", "/healthz")
    assert (answer.status, answer.text, answer.content_type) == (200, "OK", "text/plain")


def test_json_is_indented_as_go_restful_writes_it() -> None:
    answer = call(token_application(Reviews()), "GET", "/apis")
    assert answer.text.startswith('{\n "kind": "APIGroupList",')
