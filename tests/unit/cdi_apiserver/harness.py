"""The token API over a fake API server, as the aggregator reaches it: SubjectAccessReviews recorded and
answered alike, the front proxy's certificate taken as given unless a test says otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from cryptography.hazmat.primitives.asymmetric import rsa

from kubevirt.cdi import token
from kubevirt.cdi_apiserver.authorizer import TokenAuthorizer
from kubevirt.cdi_apiserver.server import UploadTokenAPI, application
from kubevirt.service.aggregation.front_proxy import FrontProxyTrust
from kubevirt.service.aggregation.identity import RequestHeaderNames

JSON = dict[str, Any]
NAMESPACE = "ns"
TOKENS = f"/apis/upload.cdi.kubevirt.io/v1beta1/namespaces/{NAMESPACE}/uploadtokenrequests"
USER_HEADERS = {"X-Remote-User": "alice", "X-Remote-Group": "devs"}
FRONT_PROXY = "front-proxy-client"
SIGNING_KEY = token.new_signing_key()


@dataclass
class Reviews:
    """The SubjectAccessReviews made, all answered alike (``fail``: the review cannot be made)."""

    allowed: bool = True
    reason: str = "no RBAC policy matched"
    fail: bool = False
    seen: list[JSON] = field(default_factory=list)

    def __call__(self, review: JSON) -> JSON:
        self.seen.append(review)
        if self.fail:
            raise RuntimeError("the API server is down")
        return {"status": {"allowed": self.allowed, "reason": "" if self.allowed else self.reason}}


def token_application(
    reviews: Reviews,
    *,
    trust: FrontProxyTrust | None = None,
    peer: str | None = FRONT_PROXY,
    key: rsa.RSAPrivateKey = SIGNING_KEY,
) -> web.Application:
    current = trust if trust is not None else FrontProxyTrust(client_ca="", headers=RequestHeaderNames())
    return application(
        UploadTokenAPI(key), TokenAuthorizer(reviews), lambda: current, peer=lambda _request: peer
    )


@dataclass
class Answer:
    status: int
    content_type: str
    text: str
    headers: Mapping[str, str]


def call(
    app: web.Application,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    async def main() -> Answer:
        async with TestClient(TestServer(app)) as client:
            response = await client.request(method, path, data=body, headers=dict(headers or {}))
            return Answer(response.status, response.content_type, await response.text(), response.headers)

    return asyncio.run(main())


def post_token(app: web.Application, body: bytes, headers: Mapping[str, str] | None = None) -> Answer:
    merged = {**USER_HEADERS, "Content-Type": "application/json", **(headers or {})}
    return call(app, "POST", TOKENS, body=body, headers=merged)
