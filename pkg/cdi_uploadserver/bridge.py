"""A request body read from the worker thread the import pipeline runs in: each read is a coroutine
run on the server's event loop, so the body streams through with the socket's own back pressure and
never sits in memory whole."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final

from aiohttp import BodyPartReader, StreamReader

READ_LIMIT: Final = 1 << 20  # the most one read takes, whatever the caller asks for

ReadChunk = Callable[[int], Awaitable[bytes]]


class ThreadedReader:
    """A blocking ``read`` over ``read_chunk``; only for threads other than the loop's own."""

    def __init__(self, read_chunk: ReadChunk, loop: asyncio.AbstractEventLoop) -> None:
        self._read_chunk = read_chunk
        self._loop = loop
        self._eof = False
        self.count = 0

    def read(self, size: int = -1, /) -> bytes:
        if self._eof:
            return b""
        if size < 0:
            return b"".join(iter(lambda: self.read(READ_LIMIT), b""))
        if size == 0:
            return b""
        future = asyncio.run_coroutine_threadsafe(self._call(min(size, READ_LIMIT)), self._loop)
        data = future.result()
        if not data:
            self._eof = True
        self.count += len(data)
        return data

    async def _call(self, size: int) -> bytes:
        return await self._read_chunk(size)


def body_reader(content: StreamReader, loop: asyncio.AbstractEventLoop) -> ThreadedReader:
    return ThreadedReader(content.read, loop)


def part_reader(part: BodyPartReader, loop: asyncio.AbstractEventLoop) -> ThreadedReader:
    return ThreadedReader(lambda size: part.read_chunk(size), loop)
