"""The aiohttp application serving admission webhooks and ``/healthz``.

Every admission path takes a POSTed ``application/json`` AdmissionReview and answers one with the same
apiVersion. Requests that cannot be answered get a ``metav1.Status`` body with the reason:

- 400 for a wrong content type, a body that is not an AdmissionReview, or a review for another path;
- 405 for methods other than POST, 404 for unknown paths;
- 413 for bodies above ``max_body_bytes``; 408 when the body does not arrive within ``body_timeout``;
  a connection whose request headers take longer than that is closed.

An admitter that raises answers ``allowed: false`` with code 500; the server keeps serving.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubevirt.admission import response as responses
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest, ReviewDecodeError, decode_review
from kubevirt.log import get_logger
from kubevirt.virt_api.webhooks.deadline import HeaderDeadline

Handler = Callable[[AdmissionRequest], AdmissionResponse]
# Reads the API server's /version; raises when it is unreachable.
VersionProbe = Callable[[], Any]

# An AdmissionReview carries the object and the old object; Kubernetes objects are at most ~1.5 MiB.
DEFAULT_MAX_BODY_BYTES = 6 * 1024 * 1024
# The API server gives KubeVirt's webhooks 10 s (timeoutSeconds); a body slower than that is useless.
DEFAULT_BODY_TIMEOUT = 10.0


@dataclass(frozen=True)
class ServerLimits:
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    body_timeout: float = DEFAULT_BODY_TIMEOUT


def _status(code: int, message: str) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "code": code,
    }
    return web.json_response(body, status=code)


class Listening:
    """A serving webhook server: where it listens, and how to stop it."""

    def __init__(self, runner: web.AppRunner, server: asyncio.Server) -> None:
        self._runner = runner
        self._server = server

    @property
    def port(self) -> int:
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        self._server.close()
        await self._runner.cleanup()


class WebhookServer:
    """Routes AdmissionReviews to admitters/mutators by path."""

    def __init__(
        self,
        handlers: Mapping[str, Handler],
        *,
        limits: ServerLimits | None = None,
        version_probe: VersionProbe | None = None,
        extensions: Sequence[Callable[[web.Application], None]] = (),
        middlewares: Sequence[Any] = (),
        health_paths: Sequence[str] = ("/healthz",),
    ) -> None:
        """``extensions`` add further routes to the application; ``middlewares`` run for every request;
        the health answer is served on each of ``health_paths``."""
        self._health_paths = list(health_paths)
        self._handlers = dict(handlers)
        self._extensions = list(extensions)
        self._middlewares = list(middlewares)
        self._limits = limits or ServerLimits()
        self._version_probe = version_probe
        self._api_version: Any = None
        self._log = get_logger()

    @property
    def paths(self) -> list[str]:
        return sorted(self._handlers)

    def application(self, *, middlewares: Sequence[Any] = ()) -> web.Application:
        # aiohttp enforces client_max_size itself when the body is read (413).
        app = web.Application(client_max_size=self._limits.max_body_bytes, middlewares=list(middlewares))
        for path in self._health_paths:
            app.router.add_get(path, self._healthz)
        for path in self._handlers:
            app.router.add_route("*", path, self._admit)
        for extend in self._extensions:
            extend(app)
        return app

    async def listen(self, host: str, port: int, ssl_context: ssl.SSLContext | None) -> Listening:
        """Serve on ``host:port`` (0 picks a free port) until :meth:`Listening.close`."""
        deadline = HeaderDeadline(self._limits.body_timeout)
        app = self.application(middlewares=[deadline.middleware, *self._middlewares])
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        if runner.server is None:
            raise RuntimeError("aiohttp runner has no server after setup")
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            deadline.protocol_factory(runner.server),
            host,
            port,
            ssl=ssl_context,
            # A client that never finishes its TLS handshake is dropped as soon as a slow one would be.
            ssl_handshake_timeout=self._limits.body_timeout if ssl_context is not None else None,
            backlog=128,
            reuse_address=True,
        )
        return Listening(runner, server)

    async def _healthz(self, _request: web.Request) -> web.Response:
        """KubeVirt's health answer: the API server is reachable (its version is cached once read)."""
        if self._version_probe is None:
            return web.json_response(
                {"apiserver": {"connectivity": "not configured"}, "webhooks": self.paths}
            )
        if self._api_version is None:
            try:
                self._api_version = await asyncio.to_thread(self._version_probe)
            except Exception as err:  # any failure to reach the API server makes virt-api unhealthy
                body = {"apiserver": {"connectivity": "failed", "error": str(err)}}
                return web.json_response(body, status=500)
        healthy: dict[str, Any] = {"apiserver": {"connectivity": "ok", "version": self._api_version}}
        healthy["webhooks"] = self.paths
        return web.json_response(healthy)

    async def _read_body(self, request: web.Request) -> bytes:
        declared = request.content_length
        if declared is not None and declared > self._limits.max_body_bytes:
            raise web.HTTPRequestEntityTooLarge(
                max_size=self._limits.max_body_bytes, actual_size=declared, text="request body too large"
            )
        async with asyncio.timeout(self._limits.body_timeout):
            return await request.read()

    async def _admit(self, request: web.Request) -> web.StreamResponse:
        if request.method != "POST":
            return _status(405, f"method {request.method} not allowed, admission reviews are POSTed")
        if request.content_type != "application/json":
            return _status(400, f"contentType={request.content_type}, expect application/json")
        try:
            body = await self._read_body(request)
        except TimeoutError:
            self._log.warning("admission request body too slow", path=request.path)
            return _status(408, f"request body not received within {self._limits.body_timeout:g}s")
        except web.HTTPRequestEntityTooLarge:
            return _status(413, f"request body larger than {self._limits.max_body_bytes} bytes")
        try:
            review = decode_review(body)
        except ReviewDecodeError as err:
            self._log.warning("undecodable admission review", path=request.path, reason=str(err))
            return _status(400, f"cannot decode AdmissionReview: {err}")
        handler = self._handlers[request.path]
        try:
            # Off the event loop: admitters may wait on the API server, and a slow one must not
            # hold up the other requests.
            answer = await asyncio.to_thread(handler, review.request)
        except Exception as err:  # one bad request must not take the webhook down
            self._log.exception("admission handler failed", path=request.path, uid=review.request.uid)
            answer = responses.error(f"internal error: {err}", code=responses.HTTP_INTERNAL_ERROR)
        document: dict[str, Any] = {
            "apiVersion": review.api_version,
            "kind": "AdmissionReview",
            "response": answer.to_dict(review.request.uid),
        }
        return web.Response(
            body=json.dumps(document, ensure_ascii=False).encode(), content_type="application/json"
        )
