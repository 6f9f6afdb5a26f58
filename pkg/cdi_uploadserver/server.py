"""The HTTPS server: CDI's upload routes, one upload at a time, until an upload succeeds, processing
in the background fails, or the deadline passes with nothing uploaded.

A synchronous upload is answered once the image is in the claim (a failure is answered and the server
waits for another attempt); an asynchronous one once its bytes are in and fit, the conversion going on
after the answer (its failure ends the server with an error, as CDI's does)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Final, TypeVar

from aiohttp import BodyPartReader, web

from kubevirt.cdi_importer.formats import Readable
from kubevirt.cdi_uploadserver.bridge import body_reader, part_reader
from kubevirt.cdi_uploadserver.config import ServerConfig
from kubevirt.cdi_uploadserver.processing import CONTENT_TYPE_HEADER, UploadError, Uploads, is_clone
from kubevirt.cdi_uploadserver.tlsserver import client_common_names, server_context
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import Upload

FORM_FIELD: Final = "file"
TEXT_PLAIN: Final = "text/plain; charset=utf-8"  # what Go's ResponseWriter sniffs for text
_IDLE_POLL_SECONDS: Final = 0.5  # how often the deadline looks whether an upload in flight is over
_SHUTDOWN_SECONDS: Final = 5.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_T = TypeVar("_T")


@dataclasses.dataclass(frozen=True)
class RunResult:
    clone_target: bool = False
    preallocation_applied: bool = False
    deadline_passed: bool = False


class ServerError(Exception):
    """The server ended without an upload: processing in the background failed."""


class _BadRequestError(Exception):
    pass


class UploadServer:
    def __init__(self, config: ServerConfig, uploads: Uploads) -> None:
        self._config = config
        self._uploads = uploads
        self._uploading = False  # a request's body is being taken in
        self._processing = False  # an async upload's conversion runs after its answer
        self._done = False
        self._result = RunResult()
        self._failure: BaseException | None = None
        self._finished = asyncio.Event()  # success or a background failure
        self._background: set[asyncio.Task[None]] = set()
        self._runner: web.AppRunner | None = None
        self._servers: list[asyncio.Server] = []

    @property
    def port(self) -> int:
        return int(self._servers[0].sockets[0].getsockname()[1])

    def application(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", Upload.HEALTHZ, self._healthz)
        for path in Upload.SYNC_PATHS:
            app.router.add_route("*", path, self._upload_handler(form=False, archive=False))
        for path in Upload.FORM_SYNC_PATHS:
            app.router.add_route("*", path, self._upload_handler(form=True, archive=False))
        for path in (Upload.PATH_ARCHIVE, Upload.PATH_ARCHIVE_ALPHA):
            app.router.add_route("*", path, self._upload_handler(form=False, archive=True))
        for path in Upload.ASYNC_PATHS:
            app.router.add_route("*", path, self._async_handler(form=False))
        for path in Upload.FORM_ASYNC_PATHS:
            app.router.add_route("*", path, self._async_handler(form=True))
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        return app

    async def start(self) -> None:
        context = server_context(self._config)
        self._runner = web.AppRunner(
            self.application(), access_log=None, handle_signals=False, shutdown_timeout=_SHUTDOWN_SECONDS
        )
        await self._runner.setup()
        if self._runner.server is None:
            raise RuntimeError("aiohttp runner has no server after setup")
        server = await asyncio.get_running_loop().create_server(
            self._runner.server,
            self._config.address or None,
            self._config.port,
            ssl=context,
            reuse_address=True,
        )
        self._servers.append(server)
        get_logger().info("upload server listening", address=self._config.address, port=self.port)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def run(self) -> RunResult:
        """Serve until an upload completes or the deadline passes. Raises ServerError."""
        await self.start()
        try:
            return await self.wait()
        finally:
            await self.stop()

    async def wait(self) -> RunResult:
        log = get_logger()
        try:
            await asyncio.wait_for(self._finished.wait(), self._seconds_left())
        except TimeoutError:
            log.info("deadline exceeded, shutting down")
            while self._uploading or self._processing:  # an upload in flight may still succeed
                log.info("waiting for upload to finish")
                await asyncio.sleep(_IDLE_POLL_SECONDS)
            if not self._done and self._failure is None:
                log.info("upload not done, process exiting")
                return RunResult(deadline_passed=True)
        if self._failure is not None:
            raise ServerError(str(self._failure)) from self._failure
        log.info("Shutting down http server after successful upload")
        return self._result

    def _seconds_left(self) -> float | None:
        if self._config.deadline is None:
            return None
        return max(0.0, (self._config.deadline - datetime.now(UTC)).total_seconds())

    async def _healthz(self, _request: web.Request) -> web.StreamResponse:
        return web.Response(text="OK", headers={"Content-Type": TEXT_PLAIN})

    async def _not_found(self, _request: web.Request) -> web.StreamResponse:
        return web.Response(status=404, text="404 page not found\n", headers={"Content-Type": TEXT_PLAIN})

    def _admit(self, request: web.Request) -> web.StreamResponse | None:
        """CDI's checks before an upload: POST only, a verified client certificate with the client
        name, no upload in flight and none done. None: go ahead (the server is now uploading)."""
        if request.method != "POST":
            return web.Response(status=404)
        names = client_common_names(request)
        if not names or self._config.client_name not in names:
            return web.Response(status=401)
        if self._uploading or self._processing:
            get_logger().warning("Got concurrent upload request")
            return web.Response(status=503)
        if self._done:
            get_logger().warning("Got upload request after already done")
            return web.Response(status=409)
        self._uploading = True
        return None

    async def _take_in(
        self, request: web.Request, *, form: bool, take: Callable[[Readable, str], _T]
    ) -> tuple[_T, str] | web.StreamResponse:
        """An upload's body handed to ``take`` (in a thread) with the request's content type: what it
        gave and the content type, or the answer to send when the upload is refused or fails. The
        server is no longer uploading either way."""
        refusal = self._admit(request)
        if refusal is not None:
            return refusal
        content_type = request.headers.get(CONTENT_TYPE_HEADER, "")
        get_logger().info("Content type header", content_type=content_type)
        try:
            stream = await _request_stream(request, form=form)
            taken = await asyncio.to_thread(take, stream, content_type)
        except _BadRequestError as err:
            self._uploading = False
            return _text(400, str(err))
        except UploadError as err:
            self._uploading = False
            return _failed(err)
        self._uploading = False
        return taken, content_type

    def _upload_handler(self, *, form: bool, archive: bool) -> Handler:
        def process(stream: Readable, content_type: str) -> bool:
            return self._uploads.process(stream, archive=archive, content_type=content_type)

        async def handle(request: web.Request) -> web.StreamResponse:
            outcome = await self._take_in(request, form=form, take=process)
            if isinstance(outcome, web.StreamResponse):
                return outcome
            applied, content_type = outcome
            response = await _answered(request, web.Response(status=200))
            self._succeed(applied, is_clone(content_type))
            get_logger().info(
                "Wrote archive data" if archive else "Wrote data", destination=str(self._config.destination)
            )
            return response

        return handle

    def _async_handler(self, *, form: bool) -> Handler:
        def receive(stream: Readable, content_type: str) -> Callable[[], bool]:
            return self._uploads.receive(stream, content_type=content_type)

        async def handle(request: web.Request) -> web.StreamResponse:
            if request.method == "HEAD":
                return web.Response(status=200)
            outcome = await self._take_in(request, form=form, take=receive)
            if isinstance(outcome, web.StreamResponse):
                return outcome
            finish, content_type = outcome
            self._processing = True
            response = await _answered(request, web.Response(status=200))
            get_logger().info("Returning success to caller, continue processing in background")
            task = asyncio.create_task(self._complete(finish, is_clone(content_type)))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            return response

        return handle

    async def _complete(self, finish: Callable[[], bool], clone: bool) -> None:
        try:
            applied = await asyncio.to_thread(finish)
        except UploadError as err:
            self._processing = False
            get_logger().error("Error during resumed processing", error=err.reason)
            self._failure = err
            self._finished.set()
            return
        self._processing = False
        self._succeed(applied, clone)
        get_logger().info("Wrote data", destination=str(self._config.destination))

    def _succeed(self, preallocation_applied: bool, clone: bool) -> None:
        self._done = True
        self._result = RunResult(clone_target=clone, preallocation_applied=preallocation_applied)
        self._finished.set()


async def _request_stream(request: web.Request, *, form: bool) -> Readable:
    loop = asyncio.get_running_loop()
    if not form:
        return body_reader(request.content, loop)
    if not request.content_type.startswith("multipart/form-data"):
        raise _BadRequestError("request Content-Type isn't multipart/form-data")
    try:
        reader = await request.multipart()
        while True:
            part = await reader.next()
            if part is None:
                raise _BadRequestError("no file part in the multipart form")
            if isinstance(part, BodyPartReader) and part.name == FORM_FIELD:
                return part_reader(part, loop)
            get_logger().info("Ignoring part", part=getattr(part, "name", None))
    except _BadRequestError:
        raise
    except Exception as err:  # aiohttp's parser errors have no common base
        raise _BadRequestError(f"malformed multipart form: {err}") from err


async def _answered(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    """``response`` sent before the caller goes on (its success may shut the server down)."""
    await response.prepare(request)
    await response.write_eof()
    return response


def _failed(err: UploadError) -> web.StreamResponse:
    get_logger().error("Saving stream failed", error=err.reason)
    return _text(err.status, err.text)


def _text(status: int, text: str) -> web.StreamResponse:
    return web.Response(status=status, text=text, headers={"Content-Type": TEXT_PLAIN})
