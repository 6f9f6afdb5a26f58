"""A file served as Go's ``http.ServeContent`` serves it: conditions, ranges and HEAD.

One range answers 206 with its ``Content-Range``; several answer ``multipart/byteranges``; ranges that
together exceed the file are ignored (200 with everything); a Range that cannot be read, or that starts
past the end of a non-empty file, answers 416. Every answer has a ``Content-Length`` and
``Accept-Ranges: bytes``; HEAD gets the headers only.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncGenerator

from aiohttp import web

from kubevirt.virt_exportserver import preconditions
from kubevirt.virt_exportserver.httpcompat import go_error, http_date
from kubevirt.virt_exportserver.ranges import ByteRange, NoOverlapError, RangeError, parse_range
from kubevirt.virt_exportserver.sniff import SNIFF_LEN, content_type
from kubevirt.virt_exportserver.stream import read_span, send


async def serve_content(
    request: web.Request, fd: int, *, name: str, size: int, modtime: float | None
) -> web.StreamResponse:
    """Answers ``request`` with the ``size`` bytes of the open file ``fd`` (a name for its type and its
    modification time, if it has one, for the conditions)."""
    if modtime is not None and int(modtime) == 0:
        modtime = None  # Go counts the epoch as no time at all
    headers = {"Last-Modified": http_date(modtime)} if modtime is not None else {}
    decided, range_header = preconditions.check(request, modtime, headers)
    if decided is not None:
        return decided
    head = await asyncio.get_running_loop().run_in_executor(None, os.pread, fd, SNIFF_LEN, 0)
    ctype = content_type(name, head)
    try:
        ranges = parse_range(range_header, size)
    except NoOverlapError as err:
        if size != 0:
            return go_error(str(err), 416, {"Content-Range": f"bytes */{size}"})
        ranges = []  # an empty file answers a Range with its (empty) self
    except RangeError as err:
        return go_error(str(err), 416)
    if sum(r.length for r in ranges) > size:
        ranges = []  # asking for more than the whole file: the whole file, once
    if len(ranges) == 1:
        return await _single(request, fd, ranges[0], size, ctype, headers)
    if ranges:
        return await _multipart(request, fd, ranges, size, ctype, headers)
    return await _whole(request, fd, size, ctype, headers)


async def _whole(
    request: web.Request, fd: int, size: int, ctype: str, headers: dict[str, str]
) -> web.StreamResponse:
    response = _response(200, ctype, size, headers)
    return await _stream(request, response, read_span(fd, 0, size))


async def _single(
    request: web.Request, fd: int, span: ByteRange, size: int, ctype: str, headers: dict[str, str]
) -> web.StreamResponse:
    response = _response(206, ctype, span.length, headers)
    response.headers["Content-Range"] = span.content_range(size)
    return await _stream(request, response, read_span(fd, span.start, span.length))


async def _multipart(
    request: web.Request, fd: int, ranges: list[ByteRange], size: int, ctype: str, headers: dict[str, str]
) -> web.StreamResponse:
    # mime/multipart's framing: the part headers sorted by name, CRLF before every later boundary.
    boundary = secrets.token_hex(30)
    part_heads = [
        (f"--{boundary}\r\n" if index == 0 else f"\r\n--{boundary}\r\n")
        + f"Content-Range: {span.content_range(size)}\r\nContent-Type: {ctype}\r\n\r\n"
        for index, span in enumerate(ranges)
    ]
    closing = f"\r\n--{boundary}--\r\n".encode()
    length = sum(len(head) for head in part_heads) + sum(r.length for r in ranges) + len(closing)
    response = _response(206, f"multipart/byteranges; boundary={boundary}", length, headers)

    async def parts() -> AsyncGenerator[bytes, None]:
        for head, span in zip(part_heads, ranges, strict=True):
            yield head.encode()
            async for chunk in read_span(fd, span.start, span.length):
                yield chunk
        yield closing

    return await _stream(request, response, parts())


def _response(status: int, ctype: str, length: int, headers: dict[str, str]) -> web.StreamResponse:
    response = web.StreamResponse(status=status, headers=headers)
    response.headers["Accept-Ranges"] = "bytes"
    response.headers["Content-Type"] = ctype
    response.content_length = length
    return response


async def _stream(
    request: web.Request, response: web.StreamResponse, chunks: AsyncGenerator[bytes, None]
) -> web.StreamResponse:
    await response.prepare(request)
    if request.method == "HEAD":
        await chunks.aclose()
        return response
    await send(request, response, chunks, what="file")
    return response
