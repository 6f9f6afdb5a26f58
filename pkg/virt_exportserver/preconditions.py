"""The conditional headers as Go's ``http.ServeContent`` weighs them (RFC 7232 section 6).

Files are served without an ETag, so an ``If-Match`` other than ``*`` fails, an ``If-None-Match`` of
``*`` answers 304, and an ``If-Range`` holding an entity tag drops the range. Dates compare with the
file's modification time, if it has one (a disk image served as ``disk.img`` has none).
"""

from __future__ import annotations

import enum
from datetime import UTC
from email.utils import parsedate_to_datetime

from aiohttp import web

_TRIM = " \t\r\n"


class _Cond(enum.Enum):
    NONE = 0
    TRUE = 1
    FALSE = 2


def check(
    request: web.Request, modtime: float | None, headers: dict[str, str]
) -> tuple[web.Response | None, str]:
    """The answer when a condition decides the request (412, 304), else None; and the Range header
    that still applies."""
    condition = _if_match(request)
    if condition is _Cond.NONE:
        condition = _if_unmodified_since(request, modtime)
    if condition is _Cond.FALSE:
        return web.Response(status=412, headers=headers), ""
    none_match = _if_none_match(request)
    if none_match is _Cond.FALSE:
        if request.method in ("GET", "HEAD"):
            return web.Response(status=304, headers=headers), ""
        return web.Response(status=412, headers=headers), ""
    if none_match is _Cond.NONE and _if_modified_since(request, modtime) is _Cond.FALSE:
        return web.Response(status=304, headers=headers), ""
    range_header = request.headers.get("Range", "")
    if range_header and _if_range(request, modtime) is _Cond.FALSE:
        range_header = ""
    return None, range_header


def not_modified(request: web.Request, modtime: float) -> bool:
    """Whether ``If-Modified-Since`` says the client has this version (a directory listing's only
    condition in Go's file server)."""
    return _if_modified_since(request, None if int(modtime) == 0 else modtime) is _Cond.FALSE


def _tags(value: str) -> list[str | None]:
    """The list's members: ``*``, an entity tag, or None where Go's scanner stops (a malformed tag)."""
    members: list[str | None] = []
    rest = value
    while True:
        rest = rest.strip(_TRIM)
        if not rest:
            return members
        if rest[0] == ",":
            rest = rest[1:]
            continue
        if rest[0] == "*":
            members.append("*")
            return members
        tag, rest = _scan_etag(rest)
        members.append(tag)
        if tag is None:
            return members


def _scan_etag(text: str) -> tuple[str | None, str]:
    start = 2 if text.startswith("W/") else 0
    if len(text) - start < 2 or text[start] != '"':
        return None, ""
    for index in range(start + 1, len(text)):
        char = text[index]
        if char == '"':
            return text[: index + 1], text[index + 1 :]
        if not (char == "!" or "\x23" <= char <= "\x7e" or ord(char) >= 0x80):
            return None, ""
    return None, ""


def _if_match(request: web.Request) -> _Cond:
    value = request.headers.get("If-Match", "")
    if not value:
        return _Cond.NONE
    # No tag equals the missing ETag: only a "*" before any malformed member matches.
    return _Cond.TRUE if "*" in _tags(value) else _Cond.FALSE


def _if_none_match(request: web.Request) -> _Cond:
    value = request.headers.get("If-None-Match", "")
    if not value:
        return _Cond.NONE
    return _Cond.FALSE if "*" in _tags(value) else _Cond.TRUE


def _if_unmodified_since(request: web.Request, modtime: float | None) -> _Cond:
    since = _date(request.headers.get("If-Unmodified-Since", ""))
    if since is None or modtime is None:
        return _Cond.NONE
    return _Cond.TRUE if int(modtime) <= since else _Cond.FALSE


def _if_modified_since(request: web.Request, modtime: float | None) -> _Cond:
    if request.method not in ("GET", "HEAD"):
        return _Cond.NONE
    since = _date(request.headers.get("If-Modified-Since", ""))
    if since is None or modtime is None:
        return _Cond.NONE
    return _Cond.FALSE if int(modtime) <= since else _Cond.TRUE


def _if_range(request: web.Request, modtime: float | None) -> _Cond:
    if request.method not in ("GET", "HEAD"):
        return _Cond.NONE
    value = request.headers.get("If-Range", "")
    if not value:
        return _Cond.NONE
    tag, _ = _scan_etag(value.strip(_TRIM))
    if tag is not None or modtime is None:
        return _Cond.FALSE  # an entity tag never matches the missing ETag
    since = _date(value)
    return _Cond.TRUE if since is not None and int(modtime) == since else _Cond.FALSE


def _date(value: str) -> int | None:
    """An HTTP date as seconds since the epoch; None when absent or unreadable (Go ignores those)."""
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # "-0000": HTTP dates are UTC
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp())
