"""Passing a request on as Go's ``httputil.ReverseProxy`` does, for the proxies in front of in-cluster
servers (virt-exportproxy, cdi-uploadproxy): hop-by-hop headers dropped both ways, the client's address
appended to ``X-Forwarded-For``, the rest (``Host`` included) unchanged, no ``User-Agent`` added, no
redirect followed, and the body neither decompressed nor buffered.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterable, Mapping

import aiohttp
from aiohttp import hdrs, web
from aiohttp.abc import AbstractResolver
from multidict import CIMultiDict
from yarl import URL

from kubevirt.log import get_logger

# Go's hop-by-hop headers: they describe one connection, never the one behind the proxy.
HOP_BY_HOP = frozenset(
    h.lower()
    for h in (
        hdrs.CONNECTION,
        "Proxy-Connection",
        hdrs.KEEP_ALIVE,
        hdrs.PROXY_AUTHENTICATE,
        hdrs.PROXY_AUTHORIZATION,
        hdrs.TE,
        hdrs.TRAILER,
        hdrs.TRANSFER_ENCODING,
        hdrs.UPGRADE,
    )
)
# What aiohttp's client would add on its own and Go's proxy does not.
NOT_ADDED = (hdrs.USER_AGENT, hdrs.ACCEPT_ENCODING, hdrs.CONTENT_TYPE)
# The errors of reaching a server or reading from it.
RELAY_ERRORS = (TimeoutError, aiohttp.ClientError, OSError)


def _connection_named(headers: Mapping[str, str]) -> set[str]:
    """Headers the Connection header lists: hop-by-hop for this connection too."""
    named = ",".join(v for k, v in headers.items() if k.lower() == "connection")
    return {token.strip().lower() for token in named.split(",") if token.strip()}


def end_to_end(headers: Mapping[str, str]) -> CIMultiDict[str]:
    """``headers`` without the hop-by-hop ones."""
    dropped = HOP_BY_HOP | _connection_named(headers)
    return CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in dropped)


def forwarded_for(prior: Iterable[str], client: str | None) -> str | None:
    """``X-Forwarded-For`` with the client's address appended (None when the address is unknown)."""
    if not client:
        return None
    return ", ".join([*prior, client])


def outgoing_headers(request: web.Request) -> CIMultiDict[str]:
    """The request's end-to-end headers, with the client's address added to ``X-Forwarded-For``."""
    headers = end_to_end(request.headers)
    peer = request.transport.get_extra_info("peername") if request.transport else None
    value = forwarded_for(headers.getall("X-Forwarded-For", []), peer[0] if peer else None)
    if value is not None:
        headers["X-Forwarded-For"] = value
    return headers


def client_session(
    resolver: AbstractResolver | None, timeout: aiohttp.ClientTimeout
) -> aiohttp.ClientSession:
    """A session that hands bodies on as they come (no decompression) and keeps no cookies."""
    connector = aiohttp.TCPConnector(resolver=resolver) if resolver else None
    return aiohttp.ClientSession(
        connector=connector, timeout=timeout, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar()
    )


class SessionSlot:
    """The client session of a proxy application: opened when the application starts, closed when it
    stops (add :meth:`open_while_running` to its ``cleanup_ctx``)."""

    def __init__(self, resolver: AbstractResolver | None, timeout: aiohttp.ClientTimeout) -> None:
        self._resolver = resolver
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "the application is not running"
        return self._session

    async def open_while_running(self, _app: web.Application) -> AsyncIterator[None]:
        self._session = client_session(self._resolver, self._timeout)
        yield
        await self._session.close()
        self._session = None


async def send(
    session: aiohttp.ClientSession, request: web.Request, url: URL, context: ssl.SSLContext
) -> aiohttp.ClientResponse:
    """The request passed on to ``url``; raises one of :data:`RELAY_ERRORS` when it cannot be."""
    return await session.request(
        request.method,
        url,
        headers=outgoing_headers(request),
        data=request.content if request.body_exists else None,
        ssl=context,
        allow_redirects=False,
        skip_auto_headers=NOT_ADDED,
    )


async def answer(
    request: web.Request, upstream: aiohttp.ClientResponse, url: URL, *, read_error: str
) -> web.StreamResponse:
    """The server's answer streamed back to the client; ``read_error`` is logged when reading it fails."""
    log = get_logger()
    async with upstream:
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        response.headers.extend(end_to_end(upstream.headers))
        await response.prepare(request)
        try:
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
        except ConnectionResetError:
            log.debug("client went away during the transfer", url=str(url))
            return response
        except RELAY_ERRORS as err:
            # The status is sent already: cutting the connection is the only way left to say the body
            # is incomplete (Go's proxy aborts the handler the same way).
            log.error(read_error, url=str(url), reason=str(err))
            if request.transport is not None:
                request.transport.close()
            return response
        await response.write_eof()
    return response
