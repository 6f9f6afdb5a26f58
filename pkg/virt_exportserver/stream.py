"""Streaming a response body from a file or a process without ever holding more than a chunk of it.

Reads run in the default executor (a slow volume never stalls the event loop), and each write waits
for the connection to drain, so a slow client slows the reads instead of filling memory. A client
that goes away ends the response quietly; a source that fails part-way aborts the connection, so the
client sees a truncated transfer rather than a short body that looks complete.
"""

from __future__ import annotations

import asyncio
import os
import zlib
from collections.abc import AsyncGenerator

from aiohttp import web

from kubevirt.log import get_logger

CHUNK_SIZE = 1 << 20


class SourceError(OSError):
    """The data being served could not be produced to its end."""


async def read_span(fd: int, start: int, length: int) -> AsyncGenerator[bytes, None]:
    """``length`` bytes of ``fd`` from ``start``; the file ending early is a :class:`SourceError`."""
    loop = asyncio.get_running_loop()
    offset, end = start, start + length
    while offset < end:
        chunk = await loop.run_in_executor(None, os.pread, fd, min(CHUNK_SIZE, end - offset), offset)
        if not chunk:
            raise SourceError(f"the file ended at {offset} bytes, {end} were expected")
        offset += len(chunk)
        yield chunk


async def read_to_end(fd: int) -> AsyncGenerator[bytes, None]:
    loop = asyncio.get_running_loop()
    offset = 0
    while chunk := await loop.run_in_executor(None, os.pread, fd, CHUNK_SIZE, offset):
        offset += len(chunk)
        yield chunk


async def gzipped(source: AsyncGenerator[bytes, None]) -> AsyncGenerator[bytes, None]:
    """``source`` as one gzip stream (default level, as Go's gzip writer), compressed off the loop."""
    loop = asyncio.get_running_loop()
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    try:
        async for chunk in source:
            compressed = await loop.run_in_executor(None, compressor.compress, chunk)
            if compressed:
                yield compressed
        yield compressor.flush()
    finally:
        await source.aclose()


async def send(
    request: web.Request, response: web.StreamResponse, chunks: AsyncGenerator[bytes, None], *, what: str
) -> int:
    """Writes ``chunks`` as the body of the prepared ``response``; returns the bytes written."""
    log = get_logger(path=request.path, served=what)
    written = 0
    try:
        while True:
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                break
            except OSError as err:
                log.error("cannot read what is being served, aborting the response", reason=str(err))
                abort(request)
                return written
            try:
                await response.write(chunk)
            except ConnectionError:
                log.info("the client went away", written=written)
                return written
            written += len(chunk)
    finally:
        await chunks.aclose()  # a generator's clean-up (a child process, a descriptor) runs now
    try:
        await response.write_eof()
    except ConnectionError:
        return written
    log.info("wrote the response", written=written)
    return written


def abort(request: web.Request) -> None:
    if request.transport is not None:
        request.transport.abort()
