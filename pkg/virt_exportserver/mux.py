"""Request routing as Go's ``http.ServeMux`` routes KubeVirt's export server.

Patterns are plain paths: one ending in ``/`` serves its whole subtree (the ``dir/`` URIs), any other
only itself. Before any handler (so before the token check) a path that is not clean (``..``, ``.``,
doubled slashes) is redirected to its clean form, and a subtree's root named without its slash to the
root with it; a path nothing serves is answered 404.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from kubevirt.virt_exportserver.httpcompat import (
    BadTargetError,
    Target,
    bad_request,
    escape_path,
    go_clean,
    not_found,
    redirect,
)

Handler = Callable[[web.Request, Target], Awaitable[web.StreamResponse]]


def clean_path(path: str) -> str:
    """``ServeMux``'s ``cleanPath``: rooted, cleaned, with a trailing slash kept."""
    if not path:
        return "/"
    if not path.startswith("/"):
        path = "/" + path
    cleaned = go_clean(path)
    if path.endswith("/") and cleaned != "/":
        cleaned += "/"
    return cleaned


class ServeMux:
    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}

    def handle(self, pattern: str, handler: Handler) -> None:
        """Registers ``handler``; a pattern registered twice is an error, as in Go (which panics)."""
        if not pattern.startswith("/"):
            raise ValueError(f"pattern {pattern!r} must begin with /")
        if pattern in self._handlers:
            raise ValueError(f"pattern {pattern!r} is registered twice")
        self._handlers[pattern] = handler

    def _match(self, path: str) -> Handler | None:
        exact = self._handlers.get(path)
        if exact is not None:
            return exact
        subtrees = [p for p in self._handlers if p.endswith("/") and path.startswith(p)]
        return self._handlers[max(subtrees, key=len)] if subtrees else None

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        try:
            target = Target.of(request)
        except BadTargetError:
            return bad_request()
        path = clean_path(target.path)
        if path not in self._handlers and not path.endswith("/") and path + "/" in self._handlers:
            return redirect(request, _location(path + "/", target.raw_query))
        if path != target.path:
            return redirect(request, _location(path, target.raw_query))
        handler = self._match(path)
        if handler is None:
            return not_found()
        return await handler(request, target)


def _location(path: str, raw_query: str) -> str:
    return escape_path(path) + ("?" + raw_query if raw_query else "")
