"""Creating an UploadTokenRequest: the token, who may ask for one, and what a bad body gets back."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import pytest

from kubevirt.cdi import token
from kubevirt.service.aggregation.front_proxy import FrontProxyTrust
from kubevirt.service.aggregation.identity import RequestHeaderNames
from kubevirt_api.cdi.constants import Upload

from .harness import (
    NAMESPACE,
    SIGNING_KEY,
    TOKENS,
    USER_HEADERS,
    Reviews,
    call,
    post_token,
    token_application,
)

REQUEST = {
    "apiVersion": "upload.cdi.kubevirt.io/v1beta1",
    "kind": "UploadTokenRequest",
    "spec": {"pvcName": "disk"},
}


def _body(document: object = REQUEST) -> bytes:
    return json.dumps(document).encode()


# -- the token ------------------------------------------------------------------------------------------


def test_the_answer_is_the_request_with_a_token_for_the_claim() -> None:
    reviews = Reviews()
    before = int(time.time())
    answer = post_token(token_application(reviews), _body())
    assert answer.status == 200
    assert answer.content_type == "application/json"
    document = json.loads(answer.text)
    minted = document["status"].pop("token")
    assert document == {
        "kind": "UploadTokenRequest",
        "apiVersion": "upload.cdi.kubevirt.io/v1beta1",
        "metadata": {"creationTimestamp": None},
        "spec": {"pvcName": "disk"},
        "status": {},
    }
    payload = token.validate(minted, SIGNING_KEY.public_key())
    assert payload == token.upload_payload(NAMESPACE, "disk")
    assert payload.resource == {"group": "", "version": "v1", "resource": "persistentvolumeclaims"}
    claims = _claims(minted)
    assert claims["iss"] == "cdi-apiserver"
    assert claims["exp"] - claims["iat"] == Upload.TOKEN_LIFETIME_SECONDS == 300
    assert before <= claims["iat"] <= int(time.time())


def _claims(minted: str) -> dict[str, Any]:
    return dict(jwt.decode(minted, options={"verify_signature": False}))


def test_a_token_from_another_key_does_not_verify() -> None:
    answer = post_token(token_application(Reviews()), _body())
    minted = json.loads(answer.text)["status"]["token"]
    with pytest.raises(token.TokenError):
        token.validate(minted, token.new_signing_key().public_key())


def test_the_namespace_comes_from_the_path_and_metadata_is_echoed_as_go_writes_it() -> None:
    request = {**REQUEST, "metadata": {"name": "utr", "namespace": "elsewhere", "unknown": 1}}
    answer = post_token(token_application(Reviews()), _body(request))
    document = json.loads(answer.text)
    assert document["metadata"] == {"name": "utr", "namespace": "elsewhere", "creationTimestamp": None}
    assert token.validate(document["status"]["token"], SIGNING_KEY.public_key()).namespace == NAMESPACE


def test_field_names_match_in_any_case_as_in_go() -> None:
    answer = post_token(token_application(Reviews()), _body({"Spec": {"PVCName": "disk"}}))
    document = json.loads(answer.text)
    assert document["spec"] == {"pvcName": "disk"}
    assert "kind" not in document  # TypeMeta is omitempty
    assert token.validate(document["status"]["token"], SIGNING_KEY.public_key()).name == "disk"


# -- who may ask ----------------------------------------------------------------------------------------


def test_the_review_asks_whether_the_user_may_create_uploadtokenrequests_in_the_namespace() -> None:
    reviews = Reviews()
    headers = {"X-Remote-Extra-Scopes": "a", "X-Remote-Extra-Acme.com%2Fteam": "storage"}
    assert post_token(token_application(reviews), _body(), headers).status == 200
    [review] = reviews.seen
    assert review["kind"] == "SubjectAccessReview"
    assert review["spec"]["user"] == "alice"
    assert review["spec"]["groups"] == ["devs"]
    assert review["spec"]["extra"] == {"scopes": ["a"], "acme.com/team": ["storage"]}
    assert review["spec"]["resourceAttributes"] == {
        "namespace": NAMESPACE,
        "verb": "create",
        "group": "upload.cdi.kubevirt.io",
        "version": "v1beta1",
        "resource": "uploadtokenrequests",
    }


def test_without_the_front_proxy_certificate_the_request_is_not_authenticated() -> None:
    reviews = Reviews()
    answer = post_token(token_application(reviews, peer=None), _body())
    assert (answer.status, answer.text) == (401, "request is not authenticated")
    assert reviews.seen == []


def test_a_certificate_with_a_name_the_aggregator_does_not_use_is_not_authenticated() -> None:
    trust = FrontProxyTrust(client_ca="", allowed_names=["front-proxy-client"])
    answer = post_token(token_application(Reviews(), trust=trust, peer="someone-else"), _body())
    assert (answer.status, answer.text) == (401, "request is not authenticated")


def test_a_denied_review_is_refused_with_its_reason_as_cdi_does() -> None:
    # CDI answers a denial 401 with the review's reason as plain text (uploadHandler's WriteErrorString).
    reviews = Reviews(allowed=False, reason="alice may not create uploadtokenrequests")
    answer = post_token(token_application(reviews), _body())
    assert (answer.status, answer.text) == (401, "alice may not create uploadtokenrequests")
    assert answer.content_type == "text/plain"


def test_missing_user_headers_are_named_in_the_refusal() -> None:
    reviews = Reviews()
    answer = call(
        token_application(reviews), "POST", TOKENS, body=_body(), headers={"X-Remote-Group": "devs"}
    )
    assert (answer.status, answer.text) == (
        401,
        "one of these headers required for authorization: [X-Remote-User]",
    )
    answer = call(
        token_application(reviews), "POST", TOKENS, body=_body(), headers={"X-Remote-User": "alice"}
    )
    assert (answer.status, answer.text) == (
        401,
        "one of these headers required for authorization: [X-Remote-Group]",
    )
    assert reviews.seen == []


def test_header_names_come_from_the_front_proxy_configuration() -> None:
    names = RequestHeaderNames(user=["X-Remote-User", "X-Who"], group=["X-Remote-Group", "X-Teams"])
    trust = FrontProxyTrust(client_ca="", headers=names)
    reviews = Reviews()
    answer = call(
        token_application(reviews, trust=trust),
        "POST",
        TOKENS,
        body=_body(),
        headers={"X-Who": "bob", "X-Teams": "ops"},
    )
    assert answer.status == 200
    assert (reviews.seen[0]["spec"]["user"], reviews.seen[0]["spec"]["groups"]) == ("bob", ["ops"])


def test_a_review_that_cannot_be_made_is_a_500_without_body() -> None:
    answer = post_token(token_application(Reviews(fail=True)), _body())
    assert (answer.status, answer.text) == (500, "")


def test_other_methods_on_the_collection_are_the_routers_405_without_a_review() -> None:
    reviews = Reviews()
    answer = call(token_application(reviews), "GET", TOKENS, headers=USER_HEADERS)
    assert answer.status == 405
    assert reviews.seen == []


def test_an_impossible_namespace_is_not_reviewed() -> None:
    reviews = Reviews()
    path = TOKENS.replace(f"/{NAMESPACE}/", "/Not_A_Namespace/")
    answer = call(token_application(reviews), "POST", path, body=_body(), headers=USER_HEADERS)
    assert answer.status == 404
    assert reviews.seen == []


# -- bad bodies ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "unexpected end of JSON input"),
        (b'{"spec": {', "unexpected end of JSON input"),
        (b"xyz", "invalid character 'x' looking for beginning of value"),
        (b"}", "invalid character '}' looking for beginning of value"),
        (b"{} {}", "invalid character '{' after top-level value"),
        (b"[]", "json: cannot unmarshal array into Go value of type v1beta1.UploadTokenRequest"),
        (
            b'{"spec": {"pvcName": 7}}',
            "json: cannot unmarshal number into Go struct field UploadTokenRequest.spec.pvcName "
            "of type string",
        ),
        (
            b'{"spec": ["disk"]}',
            "json: cannot unmarshal array into Go struct field UploadTokenRequest.spec of type "
            "v1beta1.UploadTokenRequestSpec",
        ),
    ],
)
def test_a_body_that_is_not_an_upload_token_request_is_a_400(body: bytes, message: str) -> None:
    reviews = Reviews()
    answer = post_token(token_application(reviews), body)
    assert (answer.status, answer.text) == (400, message)
    assert len(reviews.seen) == 1, "authorised before the body is read, as CDI does"


def test_a_bad_body_from_an_unauthenticated_caller_is_refused_as_unauthenticated() -> None:
    answer = post_token(token_application(Reviews(), peer=None), b"{")
    assert answer.status == 401
