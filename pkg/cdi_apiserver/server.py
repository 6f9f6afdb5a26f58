"""The token API's HTTP surface: discovery, health, OpenAPI and the UploadTokenRequest create.

The admission webhooks (:mod:`kubevirt.cdi_apiserver.admission`) are served on their own paths, open as
CDI serves them: the API server calls them, not the aggregator.

Only the create route is authorised, by the shared authorising middleware driving CDI's authorizer: a
refusal is 401 with the reason as plain text, a review that could not be made 500 with no body. Every
other path is open, and an unknown path or method is the router's 404 or 405, as in CDI. A body that
is not an UploadTokenRequest is 400 with Go's decoding error as plain text.

JSON answers are indented by one space, as go-restful writes them.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

from kubevirt.cdi_apiserver import discovery
from kubevirt.cdi_apiserver.admission import Admit, admission_handler
from kubevirt.cdi_apiserver.authorizer import TokenAuthorizer
from kubevirt.cdi_apiserver.token_request import DecodeError, answer, decode
from kubevirt.input_limits import MAX_OBJECT_BYTES
from kubevirt.log import get_logger
from kubevirt.service.aggregation.front_proxy import FrontProxyTrust
from kubevirt.service.aggregation.middleware import authorizing_middleware
from kubevirt_api.view import JSON

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
TOKEN_ROUTE = "create-uploadtokenrequest"
# An AdmissionReview carries an object and its old version, each at most what the API server stores.
MAX_BODY_BYTES = 2 * MAX_OBJECT_BYTES + 256 * 1024


def json_response(document: Any) -> web.Response:
    return web.Response(text=json.dumps(document, indent=1), content_type="application/json")


def _serve(produce: Callable[[], JSON]) -> Handler:
    async def handle(_request: web.Request) -> web.Response:
        return json_response(produce())

    return handle


async def _healthz(_request: web.Request) -> web.Response:
    return web.Response(text="OK")


class UploadTokenAPI:
    """The routes; tokens are signed with ``signing_key``."""

    def __init__(self, signing_key: rsa.RSAPrivateKey, *, now: Callable[[], float] | None = None) -> None:
        self._key = signing_key
        self._now = now

    def install(self, app: web.Application) -> None:
        router = app.router
        # go-restful ignores trailing slashes: both spellings of each discovery path answer.
        router.add_get("/", _serve(discovery.root_paths))
        for path in ("/apis", "/apis/"):
            router.add_get(path, _serve(discovery.api_group_list))
        for path in (discovery.GROUP_PATH, f"{discovery.GROUP_PATH}/"):
            router.add_get(path, _serve(discovery.api_group))
        for version in discovery.VERSIONS:
            listing = _serve(functools.partial(discovery.api_resource_list, version))
            router.add_get(discovery.version_path(version), listing)
            router.add_get(f"{discovery.version_path(version)}/", listing)
            router.add_post(discovery.token_path(version), self._create, name=f"{TOKEN_ROUTE}-{version}")
        router.add_get(discovery.OPENAPI, _serve(discovery.openapi_v2))
        router.add_get(discovery.HEALTHZ, _healthz)

    async def _create(self, request: web.Request) -> web.Response:
        namespace = request.match_info["namespace"]
        body = await request.read()
        try:
            # Decoding and signing take a little CPU: off the loop, so health checks keep answering.
            document = await asyncio.to_thread(self._answer, body, namespace)
        except DecodeError as err:
            get_logger().error("bad UploadTokenRequest", namespace=namespace, reason=str(err))
            return web.Response(status=400, text=str(err))
        get_logger().info("issued an upload token", namespace=namespace, pvc=document["spec"]["pvcName"])
        return json_response(document)

    def _answer(self, body: bytes, namespace: str) -> JSON:
        return answer(decode(body), namespace, self._key, now=self._now)


def token_routes_only(inner: Any) -> Any:
    """``inner`` (a middleware) for the create routes; every other request goes straight through."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        name = request.match_info.route.name or ""
        if not name.startswith(TOKEN_ROUTE):
            return await handler(request)
        response: web.StreamResponse = await inner(request, handler)
        return response

    return middleware


def application(
    api: UploadTokenAPI,
    authorizer: TokenAuthorizer,
    trust: Callable[[], FrontProxyTrust | None],
    *,
    peer: Callable[[web.Request], str | None] | None = None,
    webhooks: Mapping[str, Admit] | None = None,
) -> web.Application:
    """The application; ``trust`` is the front proxy's current identity (None: nobody is authenticated),
    ``peer`` reads the client certificate's common name (the TLS connection's by default), ``webhooks``
    the admitters by path."""
    middleware = authorizing_middleware(authorizer, trust, exempt=(), peer=peer)
    app = web.Application(middlewares=[token_routes_only(middleware)], client_max_size=MAX_BODY_BYTES)
    api.install(app)
    for path, admit in (webhooks or {}).items():
        # Any method, as Go's ServeMux routes a path.
        app.router.add_route("*", path, admission_handler(admit))
    return app
