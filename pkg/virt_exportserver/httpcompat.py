"""Answers shaped as Go's ``net/http`` shapes them, and the request target as Go reads it.

KubeVirt's clients (virtctl, CDI's importer, scripts written against KubeVirt) see the same status
codes, headers and bodies from this server as from KubeVirt's Go one: ``http.Error``'s plain-text
bodies, empty bodies for bare ``WriteHeader`` calls, and the redirects ``ServeMux`` and
``http.FileServer`` send.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, replace
from email.utils import formatdate

from aiohttp import web

TEXT_PLAIN = "text/plain; charset=utf-8"
TEXT_HTML = "text/html; charset=utf-8"

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# Go's url.URL.EscapedPath leaves these unescaped in a path (besides letters and digits).
_PATH_SAFE = "-_.~$&+,/:;=@"
_HTML_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"})


class BadTargetError(ValueError):
    """The request target has an escape Go refuses to decode (``%zz``): Go answers 400."""


@dataclass(frozen=True)
class Target:
    """What Go's handlers read of ``r.URL``: the decoded path and the raw query, both of which the
    token check and ``http.StripPrefix`` rewrite on the way to the handler."""

    path: str
    raw_query: str = ""

    @classmethod
    def of(cls, request: web.Request) -> Target:
        raw = request.raw_path
        if not raw.startswith("/"):  # absolute form: http://host/path?query
            parts = urllib.parse.urlsplit(raw)
            raw = parts.path + ("?" + parts.query if parts.query else "")
        raw_path, _, raw_query = raw.partition("?")
        return cls(unescape(raw_path), raw_query)

    def with_path(self, path: str) -> Target:
        return replace(self, path=path)

    def with_query(self, raw_query: str) -> Target:
        return replace(self, raw_query=raw_query)


def unescape(text: str, *, plus: bool = False) -> str:
    """Go's ``PathUnescape`` (``QueryUnescape`` with ``plus``); bytes that are not UTF-8 are kept, as
    the file-system names they stand for (``surrogateescape``)."""
    if _BAD_ESCAPE.search(text):
        raise BadTargetError(f"invalid URL escape in {text!r}")
    if plus:
        text = text.replace("+", " ")
    return urllib.parse.unquote_to_bytes(text).decode("utf-8", "surrogateescape")


def parse_query(raw_query: str) -> list[tuple[str, str]]:
    """Go's ``url.ParseQuery``: pairs with a ``;`` or a bad escape are skipped, blank values kept."""
    pairs = []
    for part in raw_query.split("&"):
        if not part or ";" in part:
            continue
        key, _, value = part.partition("=")
        try:
            pairs.append((unescape(key, plus=True), unescape(value, plus=True)))
        except BadTargetError:
            continue
    return pairs


def encode_query(pairs: list[tuple[str, str]]) -> str:
    """Go's ``url.Values.Encode``: keys sorted, each key's values in their order."""
    ordered = sorted(pairs, key=lambda pair: pair[0])
    return "&".join(
        f"{urllib.parse.quote_plus(key, errors='surrogateescape')}="
        f"{urllib.parse.quote_plus(value, errors='surrogateescape')}"
        for key, value in ordered
    )


def escape_path(path: str) -> str:
    """``url.URL{Path: path}.String()``: escaped as Go escapes a path, ``./`` before a first segment
    holding a colon (which would read as a scheme)."""
    escaped = urllib.parse.quote(path, safe=_PATH_SAFE, errors="surrogateescape")
    colon = escaped.find(":")
    if colon > -1 and "/" not in escaped[:colon]:
        escaped = "./" + escaped
    return escaped


def html_escape(text: str) -> str:
    return text.translate(_HTML_ESCAPES)


def go_clean(path: str) -> str:
    """Go's ``path.Clean``: one slash between elements, no ``.``, ``..`` resolved (never above ``/``)."""
    if not path:
        return "."
    rooted = path.startswith("/")
    out: list[str] = []
    for element in path.split("/"):
        if element in ("", "."):
            continue
        if element == "..":
            if out and out[-1] != "..":
                out.pop()
            elif not rooted:
                out.append("..")
            continue
        out.append(element)
    cleaned = ("/" if rooted else "") + "/".join(out)
    return cleaned or "."


def go_join(*elements: str) -> str:
    """Go's ``path.Join`` (and ``filepath.Join`` on Linux): the non-empty elements, cleaned."""
    joined = "/".join(element for element in elements if element)
    return go_clean(joined) if joined else ""


def http_date(timestamp: float) -> str:
    """``http.TimeFormat``: ``Mon, 02 Jan 2006 15:04:05 GMT``."""
    return formatdate(int(timestamp), usegmt=True)


def status_only(status: int) -> web.Response:
    """A bare ``w.WriteHeader(status)``: no body, no content type."""
    return web.Response(status=status)


def go_error(message: str, status: int, headers: dict[str, str] | None = None) -> web.Response:
    """``http.Error``: the message and a newline as plain text, never sniffed."""
    response = web.Response(status=status, body=(message + "\n").encode(), headers=headers)
    response.headers["Content-Type"] = TEXT_PLAIN
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def not_found() -> web.Response:
    return go_error("404 page not found", 404)


def bad_request() -> web.Response:
    """What Go's server answers to a request line it cannot parse."""
    response = go_error("400 Bad Request", 400)
    response.force_close()
    return response


def redirect(request: web.Request, location: str) -> web.Response:
    """``http.Redirect`` with 301 to an absolute path, as ``ServeMux`` redirects to a cleaned path."""
    response = web.Response(status=301, headers={"Location": location})
    if request.method in ("GET", "HEAD"):
        response.headers["Content-Type"] = TEXT_HTML
    if request.method == "GET":
        response.body = f'<a href="{html_escape(location)}">Moved Permanently</a>.\n\n'.encode()
    return response


def local_redirect(target: Target, location: str) -> web.Response:
    """``http.FileServer``'s relative redirect: 301, the query kept, no body."""
    if target.raw_query:
        location += "?" + target.raw_query
    return web.Response(status=301, headers={"Location": location})
