"""A filesystem volume as ``disk.tar.gz``: GNU tar's archive of the volume, gzipped as it streams.

As in KubeVirt, ``/usr/bin/tar`` archives the volume's top (sparse files kept sparse, ``lost+found``
left out) and writes to a pipe; symlinks go in as links, never followed. tar exiting 1 means a file
changed while it was read: the archive is complete, so it is finished with a warning. Any worse exit
aborts the transfer, so the client never takes a truncated archive for a whole one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from pathlib import Path

from aiohttp import web

from kubevirt.log import get_logger
from kubevirt.virt_exportserver.httpcompat import Target, status_only
from kubevirt.virt_exportserver.images import GZIP_TYPE
from kubevirt.virt_exportserver.mux import Handler
from kubevirt.virt_exportserver.stream import CHUNK_SIZE, SourceError, gzipped, send
from kubevirt.virt_exportserver.volumes import EXCLUDED, readable_tree

TAR = "/usr/bin/tar"
_TAR_FILES_CHANGED = 1
_STDERR_TAIL = 4096


def tar_command(tar: str = TAR) -> list[str]:
    return [tar, "-S", "-c", "-f", "-", *(f"--exclude={name}" for name in sorted(EXCLUDED)), "."]


def archive_handler(mount: Path, tar: str = TAR) -> Handler:
    """GET only (400 otherwise); 500 when the volume's contents are not all readable."""

    async def handle(request: web.Request, _target: Target) -> web.StreamResponse:
        if request.method != "GET":
            return status_only(400)
        if not await asyncio.to_thread(readable_tree, mount):
            return status_only(500)
        try:
            archive = await Tar.start(mount, tar)
        except OSError as err:
            get_logger(path=str(mount)).error("cannot start tar", reason=str(err))
            return status_only(500)
        response = web.StreamResponse(headers={"Content-Type": GZIP_TYPE})
        try:
            await response.prepare(request)
        except BaseException:
            await archive.stop()
            raise
        await send(request, response, gzipped(archive.output()), what="disk.tar.gz")
        return response

    return handle


class Tar:
    """A running tar, its standard error read to the end all along (it must never block on it)."""

    def __init__(
        self, process: asyncio.subprocess.Process, stdout: asyncio.StreamReader, mount: Path
    ) -> None:
        self._process = process
        self._stdout = stdout
        self._mount = mount
        stderr = process.stderr
        self._stderr = asyncio.get_running_loop().create_task(_tail(stderr) if stderr else _nothing())

    @classmethod
    async def start(cls, mount: Path, tar: str) -> Tar:
        process = await asyncio.create_subprocess_exec(
            *tar_command(tar),
            cwd=mount,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        if process.stdout is None:
            raise OSError("tar was started without its output pipe")
        return cls(process, process.stdout, mount)

    async def output(self) -> AsyncGenerator[bytes, None]:
        """The archive; tar's exit status is checked once it has ended."""
        try:
            while chunk := await self._stdout.read(CHUNK_SIZE):
                yield chunk
            code = await self._process.wait()
            errors = (await self._stderr).decode(errors="replace")
            if code == _TAR_FILES_CHANGED:
                get_logger(path=str(self._mount)).warning("files changed while being archived", tar=errors)
            elif code != 0:
                raise SourceError(f"tar exited with {code}: {errors}")
        finally:
            await self.stop()

    async def stop(self) -> None:
        """Kills tar if it still runs and reaps it. Its pipes are read to their ends first: asyncio
        reports the exit only once they are closed."""
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
        while await self._stdout.read(CHUNK_SIZE):
            pass
        await self._stderr
        await self._process.wait()


async def _tail(stream: asyncio.StreamReader) -> bytes:
    """Reads ``stream`` to its end, keeping only its last bytes."""
    tail = b""
    while chunk := await stream.read(CHUNK_SIZE):
        tail = (tail + chunk)[-_STDERR_TAIL:]
    return tail


async def _nothing() -> bytes:
    return b""
