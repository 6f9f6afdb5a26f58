"""A volume's disk image, served raw (``disk.img``, with ranges) and gzipped on the fly (``disk.img.gz``).

The image is the ``disk.img`` file of a filesystem volume, or the block device a block volume is
attached as. Either is opened afresh for every request; only a regular file or a block device is
served (its size is where it ends).
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from kubevirt.log import get_logger
from kubevirt.virt_exportserver.content import serve_content
from kubevirt.virt_exportserver.httpcompat import Target, status_only
from kubevirt.virt_exportserver.mux import Handler
from kubevirt.virt_exportserver.stream import gzipped, read_to_end, send
from kubevirt.virt_exportserver.volumes import OPEN_FLAGS, open_below

DISK_IMAGE = "disk.img"
GZIP_TYPE = "application/x-gzip"


@dataclass(frozen=True)
class DiskImage:
    volume: Path
    inside: bool  # the disk.img file of a directory, else the volume path itself

    @classmethod
    def of(cls, volume: Path) -> DiskImage:
        return cls(volume, inside=volume.is_dir())

    @property
    def path(self) -> Path:
        return self.volume / DISK_IMAGE if self.inside else self.volume

    def open(self) -> tuple[int, int]:
        """A descriptor of the image and its size in bytes."""
        if self.inside:
            fd = open_below(self.volume, DISK_IMAGE)
        else:
            fd = os.open(self.volume, OPEN_FLAGS | os.O_CLOEXEC)
        try:
            mode = os.fstat(fd).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISBLK(mode)):
                raise OSError(errno.EINVAL, "neither a regular file nor a block device", str(self.path))
            return fd, os.lseek(fd, 0, os.SEEK_END)
        except BaseException:
            os.close(fd)
            raise

    async def opened(self) -> tuple[int, int] | None:
        """:meth:`open` off the event loop; None (logged) when the image cannot be opened."""
        try:
            return await asyncio.to_thread(self.open)
        except OSError as err:
            get_logger(path=str(self.path)).error("cannot open the disk image", reason=str(err))
            return None


def raw_handler(image: DiskImage) -> Handler:
    """``http.ServeContent`` of the image under the name ``disk.img``, for any method."""

    async def handle(request: web.Request, _target: Target) -> web.StreamResponse:
        opened = await image.opened()
        if opened is None:
            return status_only(500)
        fd, size = opened
        try:
            return await serve_content(request, fd, name=DISK_IMAGE, size=size, modtime=None)
        finally:
            os.close(fd)

    return handle


def gzip_handler(image: DiskImage) -> Handler:
    """The whole image gzipped as it is read, for GET only (400 otherwise); no length is known
    beforehand, so the body is chunked."""

    async def handle(request: web.Request, _target: Target) -> web.StreamResponse:
        if request.method != "GET":
            return status_only(400)
        opened = await image.opened()
        if opened is None:
            return status_only(500)
        fd, _size = opened
        try:
            response = web.StreamResponse(headers={"Content-Type": GZIP_TYPE})
            await response.prepare(request)
            await send(request, response, gzipped(read_to_end(fd)), what="disk.img.gz")
            return response
        finally:
            os.close(fd)

    return handle
