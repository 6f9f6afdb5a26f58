"""Go's ``http.ServeMux`` path cleaning, for servers whose KubeVirt counterpart sits behind it.

KubeVirt's virt-api serves on Go's default mux, which answers a request whose path is not clean (``//``,
``/./``, ``/../``) with ``301 Moved Permanently`` to the cleaned path before any handler or filter sees it;
Go clients follow that redirect. KubeVirt's own functional tests ask ``https://localhost:PORT//healthz``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def clean_path(path: str) -> str:
    """Go's ``cleanPath``: rooted, ``.``/``..``/empty elements resolved, a trailing slash kept."""
    if not path:
        return "/"
    rooted = path if path.startswith("/") else "/" + path
    cleaned = posixpath.normpath(rooted)
    # normpath keeps a leading "//" (POSIX lets it mean something else); Go does not.
    cleaned = "/" + cleaned.lstrip("/")
    if rooted.endswith("/") and cleaned != "/":
        cleaned += "/"
    return cleaned


@web.middleware
async def redirect_unclean_paths(request: web.Request, handler: Handler) -> web.StreamResponse:
    raw_path = request.rel_url.raw_path
    cleaned = clean_path(raw_path)
    if request.method != "CONNECT" and cleaned != raw_path:
        query = request.rel_url.raw_query_string
        location = f"{cleaned}?{query}" if query else cleaned
        return web.Response(status=301, headers={"Location": location})
    return await handler(request)
