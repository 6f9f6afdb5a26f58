"""The aiohttp application serving admission webhooks and ``/healthz``.

Every admission path takes a POSTed ``application/json`` AdmissionReview and answers one with the same
apiVersion. Requests that cannot be answered get a ``metav1.Status`` body with the reason:

- 400 for a wrong content type, a body that is not an AdmissionReview, or a review for another path;
- 405 for methods other than POST, 404 for unknown paths;
- 413 for bodies above ``max_body_bytes``; 408 when the body does not arrive within ``body_timeout``;
  a connection whose request headers take longer than that is closed.

An object in a review that breaks the input limits (:mod:`kubevirt.input_limits`: larger than the API
server stores, or nested too deeply) is refused with ``allowed: false`` and code 400 before any admitter
sees it. An admitter that raises answers ``allowed: false`` with code 500; the server keeps serving.

Decoding and admitting run in worker threads, never on the event loop. Large reviews share a pool of
their own, so however many arrive at once, small ones keep their own workers and answer promptly.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import ssl
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubevirt.admission import response as responses
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest, ReviewDecodeError, decode_review
from kubevirt.input_limits import MAX_OBJECT_BYTES, InputLimitError, check_nesting, check_size
from kubevirt.log import get_logger
from kubevirt.service.gopaths import redirect_unclean_paths
from kubevirt.virt_api.webhooks.deadline import HeaderDeadline

Handler = Callable[[AdmissionRequest], AdmissionResponse]
# Reads the API server's /version; raises when it is unreachable.
# KubeVirt's health answer: status code and JSON body (kubevirt.service.health.ApiServerHealth).
Probe = Callable[[], tuple[int, dict[str, Any]]]

# An AdmissionReview carries the object and the old object, each at most MAX_OBJECT_BYTES, and a little
# more: the request's identity, user and options.
DEFAULT_MAX_BODY_BYTES = 2 * MAX_OBJECT_BYTES + 256 * 1024
# Reviews above this size are decoded and admitted in the large-review pool.
LARGE_REVIEW_BYTES = 256 * 1024
# Small reviews may wait on the API server inside an admitter, so they get more workers; large ones are
# CPU-bound, and more of them at once would only share the same cores.
SMALL_REVIEW_WORKERS = 8
LARGE_REVIEW_WORKERS = 2
# Frames of an admitter's traceback worth logging: the innermost ones say what failed.
LOGGED_FRAMES = 8
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

    def __init__(
        self, runner: web.AppRunner, server: asyncio.Server, pools: Sequence[ThreadPoolExecutor] = ()
    ) -> None:
        self._runner = runner
        self._server = server
        self._pools = pools

    @property
    def port(self) -> int:
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        self._server.close()
        await self._runner.cleanup()
        for pool in self._pools:
            pool.shutdown(wait=False, cancel_futures=True)


class WebhookServer:
    """Routes AdmissionReviews to admitters/mutators by path."""

    def __init__(
        self,
        handlers: Mapping[str, Handler],
        *,
        limits: ServerLimits | None = None,
        health: Probe | None = None,
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
        self._health = health
        self._log = get_logger()
        self._small_pool = ThreadPoolExecutor(SMALL_REVIEW_WORKERS, thread_name_prefix="admit")
        self._large_pool = ThreadPoolExecutor(LARGE_REVIEW_WORKERS, thread_name_prefix="admit-large")

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
        # Go's mux cleans the path before anything else looks at it.
        app = self.application(middlewares=[deadline.middleware, redirect_unclean_paths, *self._middlewares])
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
        return Listening(runner, server, (self._small_pool, self._large_pool))

    async def _healthz(self, _request: web.Request) -> web.Response:
        """KubeVirt's health answer (:mod:`kubevirt.service.health`), plus the webhook paths served."""
        if self._health is None:
            return web.json_response(
                {"apiserver": {"connectivity": "not configured"}, "webhooks": self.paths}
            )
        status, body = await asyncio.to_thread(self._health)
        if status == 200:
            body["webhooks"] = self.paths
        return web.json_response(body, status=status)

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
        pool = self._large_pool if len(body) > LARGE_REVIEW_BYTES else self._small_pool
        # The worker runs in a copy of this context, so log lines keep the bound keys (component, ...).
        answer = functools.partial(contextvars.copy_context().run, self.answer, request.path, body)
        return await asyncio.get_running_loop().run_in_executor(pool, answer)

    def answer(self, path: str, body: bytes) -> web.Response:
        """The answer to one review body POSTed to ``path`` (one of :attr:`paths`): decoded, checked
        against the input limits and admitted. Blocking; the server calls it in a worker thread."""
        try:
            review = decode_review(body)
        except ReviewDecodeError as err:
            self._log.warning("undecodable admission review", path=path, reason=str(err))
            return _status(400, f"cannot decode AdmissionReview: {err}")
        try:
            answer = self._admit_within_limits(path, review.request, len(body))
        except Exception as err:  # one bad request must not take the webhook down
            self._log.error(
                "admission handler failed",
                path=path,
                uid=review.request.uid,
                error=f"{type(err).__name__}: {err}"[:1000],
                traceback="".join(traceback.format_exception(err, limit=-LOGGED_FRAMES)),
            )
            answer = responses.error(f"internal error: {err}"[:1000], code=responses.HTTP_INTERNAL_ERROR)
        document: dict[str, Any] = {
            "apiVersion": review.api_version,
            "kind": "AdmissionReview",
            "response": answer.to_dict(review.request.uid),
        }
        return web.Response(
            body=json.dumps(document, ensure_ascii=False).encode(), content_type="application/json"
        )

    def _admit_within_limits(self, path: str, request: AdmissionRequest, body_size: int) -> AdmissionResponse:
        for name, value in (("object", request.object), ("oldObject", request.old_object)):
            if value is None:
                continue
            try:
                if body_size > MAX_OBJECT_BYTES:  # only then can one object be above the limit
                    check_size(len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()))
                check_nesting(value)
            except InputLimitError as err:
                self._log.warning("admission review beyond the input limits", path=path, reason=str(err))
                return responses.error(f"request.{name}: {err}")
        return self._handlers[path](request)
