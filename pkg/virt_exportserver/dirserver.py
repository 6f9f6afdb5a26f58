"""A filesystem volume's ``dir/`` URI, answered as KubeVirt answers it:
``http.StripPrefix(uri, http.FileServer(http.Dir(volume)))``.

Directories are listed as Go lists them (sorted names, subdirectories with a trailing slash) unless they
hold an ``index.html``; files are served with :func:`~kubevirt.virt_exportserver.content.serve_content`;
the redirects (``dir`` to ``dir/``, ``file/`` to ``file``, ``.../index.html`` to ``./``) are Go's.
Unlike ``http.Dir``, nothing outside the volume is ever opened (see :mod:`.volumes`), and FIFOs,
sockets and device nodes are refused (403) instead of being read.
"""

from __future__ import annotations

import asyncio
import errno
import os
import posixpath
import stat
from pathlib import Path

from aiohttp import web

from kubevirt import safepath
from kubevirt.log import get_logger
from kubevirt.virt_exportserver import preconditions
from kubevirt.virt_exportserver.content import serve_content
from kubevirt.virt_exportserver.httpcompat import (
    TEXT_HTML,
    Target,
    escape_path,
    go_clean,
    go_error,
    html_escape,
    http_date,
    local_redirect,
    not_found,
)
from kubevirt.virt_exportserver.mux import Handler
from kubevirt.virt_exportserver.volumes import open_below

INDEX_PAGE = "/index.html"
_NOT_FOUND = frozenset({errno.ENOENT, errno.ENOTDIR})
_FORBIDDEN = frozenset({errno.EACCES, errno.EPERM})


class _RefusedError(OSError):
    """A special file (FIFO, socket, device node) that is never read."""


def dir_handler(uri: str, volume: Path) -> Handler:
    async def handle(request: web.Request, target: Target) -> web.StreamResponse:
        if not target.path.startswith(uri):
            return not_found()  # what http.StripPrefix answers; the mux never routes such a path here
        stripped = target.path[len(uri) :]
        if not stripped.startswith("/"):
            stripped = "/" + stripped
        return await _serve_file(request, target.with_path(stripped), volume, go_clean(stripped))

    return handle


async def _serve_file(request: web.Request, target: Target, volume: Path, name: str) -> web.StreamResponse:
    url = target.path
    if url.endswith(INDEX_PAGE):
        return local_redirect(target, "./")
    try:
        fd = await asyncio.to_thread(_open, volume, name)
    except OSError as err:
        return _open_error(volume, name, err)
    try:
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        if is_dir and not url.endswith("/"):
            return local_redirect(target, posixpath.basename(url) + "/")
        if not is_dir and url.endswith("/"):
            return local_redirect(target, "../" + posixpath.basename(url.rstrip("/")))
        if is_dir:
            index = await _open_index(volume, name)
            if index is not None:
                os.close(fd)
                fd, name = index, name.rstrip("/") + INDEX_PAGE
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return await _listing(request, fd, info.st_mtime)
        return await serve_content(
            request, fd, name=posixpath.basename(name), size=info.st_size, modtime=info.st_mtime
        )
    finally:
        os.close(fd)


def _open(volume: Path, name: str) -> int:
    fd = open_below(volume, name)
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        os.close(fd)
        raise _RefusedError(errno.EACCES, "not a regular file or a directory", name)
    return fd


async def _open_index(volume: Path, directory: str) -> int | None:
    try:
        return await asyncio.to_thread(_open, volume, directory.rstrip("/") + INDEX_PAGE)
    except OSError:
        return None


def _open_error(volume: Path, name: str, err: OSError) -> web.Response:
    """Go's ``toHTTPError``: 404 for what does not exist, 403 for what may not be read, else 500."""
    if err.errno in _NOT_FOUND:
        return not_found()
    log = get_logger(volume=str(volume), name=name)
    if err.errno in _FORBIDDEN or isinstance(err, _RefusedError):
        log.info("refused to serve", reason=str(err))
        return go_error("403 Forbidden", 403)
    if isinstance(err, safepath.UnsafePathError):
        log.info("refused an unsafe path", reason=str(err))
    else:
        log.error("cannot open", reason=str(err))
    return go_error("500 Internal Server Error", 500)


async def _listing(request: web.Request, fd: int, modtime: float) -> web.StreamResponse:
    headers = {"Last-Modified": http_date(modtime)} if int(modtime) != 0 else {}
    if preconditions.not_modified(request, modtime):
        return web.Response(status=304, headers=headers)
    try:
        entries = await asyncio.to_thread(_entries, fd)
    except OSError as err:
        get_logger().error("http: error reading directory", reason=str(err))
        return go_error("Error reading directory", 500)
    body = _render(entries)
    response = web.Response(body=body, headers=headers)
    response.headers["Content-Type"] = TEXT_HTML
    return response


def _entries(fd: int) -> list[tuple[bytes, bool]]:
    """The directory's names (bytes: any name a file system allows) and whether each is a directory."""
    with os.scandir(fd) as scan:
        entries = [(os.fsencode(entry.name), entry.is_dir(follow_symlinks=False)) for entry in scan]
    return sorted(entries)


def _render(entries: list[tuple[bytes, bool]]) -> bytes:
    lines = [b'<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n']
    for raw_name, is_dir in entries:
        name = raw_name + (b"/" if is_dir else b"")
        text = name.decode("utf-8", "surrogateescape")
        href = escape_path(text).encode()
        shown = html_escape(text).encode("utf-8", "surrogateescape")
        lines.append(b'<a href="' + href + b'">' + shown + b"</a>\n")
    lines.append(b"</pre>\n")
    return b"".join(lines)
