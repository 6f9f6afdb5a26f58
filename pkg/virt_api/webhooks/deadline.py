"""A deadline for request headers: connections that trickle them are closed.

aiohttp bounds header sizes but not the time headers may take, so a client sending a byte now and then
would hold its connection forever. Each connection is wrapped: from its first byte (or its opening)
until the application sees the request, at most ``timeout`` seconds may pass; the application marks the
request as seen through :meth:`HeaderDeadline.middleware`. Slow bodies are the handler's business.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from kubevirt.log import get_logger

ProtocolFactory = Callable[[], asyncio.BaseProtocol]


class _GuardedConnection(asyncio.Protocol):
    """Delegates to aiohttp's protocol and closes the transport when the deadline passes."""

    def __init__(self, inner: Any, deadline: HeaderDeadline) -> None:
        self._inner = inner
        self._deadline = deadline
        self._transport: asyncio.BaseTransport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._busy = False

    def _arm(self) -> None:
        if self._timer is None and not self._busy:
            self._timer = asyncio.get_running_loop().call_later(self._deadline.timeout, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        if not self._busy and self._transport is not None:
            get_logger().warning("request headers too slow, closing the connection")
            self._transport.close()

    def started(self) -> None:
        self._busy = True
        self._disarm()

    def finished(self) -> None:
        self._busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        self._deadline.register(self._inner, self)
        self._inner.connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        self._arm()
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self._inner.eof_received()
        return result

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._deadline.forget(self._inner)
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()


class HeaderDeadline:
    """Add :meth:`middleware` to the application, and serve it through :meth:`protocol_factory`."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._connections: dict[int, _GuardedConnection] = {}

    def protocol_factory(self, factory: ProtocolFactory) -> Callable[[], asyncio.Protocol]:
        return lambda: _GuardedConnection(factory(), self)

    def register(self, inner: object, guard: _GuardedConnection) -> None:
        self._connections[id(inner)] = guard

    def forget(self, inner: object) -> None:
        self._connections.pop(id(inner), None)

    @web.middleware
    async def middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        guard = self._connections.get(id(request.protocol))
        if guard is not None:
            guard.started()
        try:
            return await handler(request)
        finally:
            if guard is not None:
                guard.finished()
