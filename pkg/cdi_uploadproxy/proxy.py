"""The proxy's HTTP side (CDI's ``uploadProxyApp``): routes, the checks before an upload, and the relay to
the claim's upload server.

Answers as CDI's does: ``/healthz`` says OK; on an upload path a missing or malformed ``Authorization`` is
400, a token that does not verify 401, one that grants no upload to a claim 400; a claim that cannot take
the upload is 503 with CDI's reason (HTML-escaped) as the body; a client for upload servers that cannot be
made is 500; an upload server that cannot be reached is 502 with ``error in upload-proxy: ...``. Everything
else is the upload server's own answer. Other paths are 404, and every path answers CORS.

The request goes on as Go's ``httputil.ReverseProxy`` sends it (see ``kubevirt.service.relay``, shared
with virt-exportproxy): to a URL of CDI's making (so the query is not kept), hop-by-hop headers
dropped, the client's address added to ``X-Forwarded-For``, ``Host`` and the body unchanged, no
``User-Agent`` added. Bodies stream both ways: a disk image is never held whole.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import hdrs, web
from aiohttp.abc import AbstractResolver
from cryptography.hazmat.primitives.asymmetric import rsa
from yarl import URL

from kubevirt.cdi_uploadproxy import cors
from kubevirt.cdi_uploadproxy.auth import RejectedError, authorize
from kubevirt.cdi_uploadproxy.backend import TrustUnavailableError, UploadServerTrust
from kubevirt.cdi_uploadproxy.claims import (
    POLL_INTERVAL,
    POLL_TIMEOUT,
    UploadNotPossibleError,
    look_at_claim,
    upload_url,
    wait_until_ready,
)
from kubevirt.client import KubeReader
from kubevirt.log import get_logger
from kubevirt.service import relay
from kubevirt_api.cdi.constants import Upload

# An upload may take as long as the disk needs; reaching the server may not.
REQUEST_TIMEOUT = 24 * 3600.0
CONNECT_TIMEOUT = 30.0
_TEXT = "text/plain; charset=utf-8"
# Go's html.EscapeString, whose entities differ from Python's html.escape.
_HTML_ESCAPES = str.maketrans({"<": "&lt;", ">": "&gt;", "&": "&amp;", "'": "&#39;", '"': "&#34;"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def go_html_escape(text: str) -> str:
    return text.translate(_HTML_ESCAPES)


def _text(status: int, body: str) -> web.Response:
    return web.Response(status=status, body=body.encode(), headers={hdrs.CONTENT_TYPE: _TEXT})


@web.middleware
async def _preflight(request: web.Request, handler: Handler) -> web.StreamResponse:
    if cors.is_preflight(request.method, request.headers):
        return web.Response(status=200, headers=cors.preflight_headers(request.headers))
    return await handler(request)


async def _cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    if not cors.is_preflight(request.method, request.headers):
        response.headers.extend(cors.actual_headers(request.method, request.headers))


class UploadProxy:
    """The aiohttp application. ``backend_port`` and ``resolver`` say how upload Services are reached (443
    through the cluster's DNS; tests point them elsewhere)."""

    def __init__(
        self,
        api: KubeReader,
        public_key: rsa.RSAPublicKey,
        trust: UploadServerTrust,
        *,
        backend_port: int | None = None,
        resolver: AbstractResolver | None = None,
        poll_interval: float = POLL_INTERVAL,
        poll_timeout: float = POLL_TIMEOUT,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self._api = api
        self._public_key = public_key
        self._trust = trust
        self._backend_port = backend_port
        self._poll = (poll_interval, poll_timeout)
        self._sessions = relay.SessionSlot(
            resolver, aiohttp.ClientTimeout(total=REQUEST_TIMEOUT, sock_connect=connect_timeout)
        )
        self._log = get_logger()

    def application(self) -> web.Application:
        app = web.Application(middlewares=[_preflight])
        app.router.add_route("*", Upload.HEALTHZ, self._healthz)
        for path in Upload.PROXY_PATHS:
            app.router.add_route("*", path, self._upload)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        app.on_response_prepare.append(_cors_headers)
        app.cleanup_ctx.append(self._sessions.open_while_running)
        return app

    async def _healthz(self, _request: web.Request) -> web.Response:
        return _text(200, "OK")

    async def _not_found(self, _request: web.Request) -> web.Response:
        return _text(404, "404 page not found\n")

    async def _upload(self, request: web.Request) -> web.StreamResponse:
        try:
            grant = authorize(request.headers.get(hdrs.AUTHORIZATION), self._public_key)
        except RejectedError as err:
            self._log.debug("upload request rejected", status=err.status, reason=str(err))
            return web.Response(status=err.status)
        namespace, name = grant.namespace, grant.name
        self._log.info("Received valid token", pvc=name, namespace=namespace)
        interval, timeout = self._poll
        try:
            claim = await wait_until_ready(
                lambda: look_at_claim(self._api, namespace, name), interval=interval, timeout=timeout
            )
            url = upload_url(claim, namespace, name, request.path)
        except UploadNotPossibleError as err:
            self._log.error(str(err), pvc=name, namespace=namespace)
            return _text(503, go_html_escape(str(err)))
        try:
            context = await asyncio.to_thread(self._trust.context)
        except TrustUnavailableError as err:
            self._log.error("Error creating http client", reason=str(err))
            return web.Response(status=500)
        return await self._relay(request, URL(url), context)

    def _proxy_error(self, url: URL, err: BaseException) -> web.Response:
        # Go's proxy logs "http: proxy error: ..." and answers 502; CDI sends the log line as the body.
        line = f"http: proxy error: {str(err) or type(err).__name__}\n"
        self._log.error("Error in reverse proxy", url=str(url), reason=line.strip())
        return _text(502, f"error in upload-proxy: {line}")

    async def _relay(self, request: web.Request, url: URL, context: ssl.SSLContext) -> web.StreamResponse:
        if self._backend_port is not None:
            url = url.with_port(self._backend_port)
        self._log.info("Proxying upload", url=str(url))
        try:
            upstream = await relay.send(self._sessions.session, request, url, context)
        except relay.RELAY_ERRORS as err:
            return self._proxy_error(url, err)
        return await relay.answer(
            request, upstream, url, read_error="upload-proxy read error during body copy"
        )
