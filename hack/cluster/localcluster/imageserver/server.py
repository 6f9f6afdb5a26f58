"""The test image server's HTTP server: the files of one folder, by name, over plain HTTP.

It runs in its image on Debian's Python alone (the standard library, no project code). ``GET`` and
``HEAD`` answer with the file's exact ``Content-Length``; a single byte range (``Range: bytes=A-B``,
``A-`` or ``-N``) answers ``206`` with its ``Content-Range``, a range past the end ``416``, as readers that
fetch a disk piecemeal (QEMU's curl driver, nbdkit) expect. Connections are kept alive (HTTP/1.1). ``/``
answers the folder's ``index.json``, ``/healthz`` the readiness probe.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

INDEX = "index.json"
HEALTH_PATH = "/healthz"
_SINGLE_RANGE = re.compile(r"bytes=\s*(\d*)\s*-\s*(\d*)\s*", re.IGNORECASE)


class UnsatisfiableRangeError(Exception):
    """The range starts past the end of the file."""


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The inclusive (first, last) byte a ``Range`` header asks of a file of ``size`` bytes, or None for the
    whole file (no header, another unit, several ranges or a malformed one: RFC 9110 lets a server ignore
    them); raises :class:`UnsatisfiableRangeError` for a range that selects nothing."""
    found = _SINGLE_RANGE.fullmatch(header.strip()) if header else None
    if found is None or found.group(1) == found.group(2) == "":
        return None
    first_text, last_text = found.groups()
    if not first_text:  # the last N bytes
        suffix = int(last_text)
        if suffix == 0 or size == 0:
            raise UnsatisfiableRangeError
        return max(0, size - suffix), size - 1
    first = int(first_text)
    if last_text and int(last_text) < first:
        return None
    if first >= size:
        raise UnsatisfiableRangeError
    return first, min(int(last_text), size - 1) if last_text else size - 1


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "test-image-server"
    timeout = 120  # an idle kept-alive connection is dropped after this long
    root: Path  # set on the subclass the server is made with

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        if path == HEALTH_PATH:
            self._small(HTTPStatus.OK, b"ok\n", "text/plain", body=body)
            return
        name = INDEX if path == "/" else path.removeprefix("/")
        served = self.root / name
        # Only the folder's own files: no subfolders, no way out of it.
        if "/" in name or name in ("", ".", "..") or not served.is_file():
            self._small(HTTPStatus.NOT_FOUND, f"{path}: no such file\n".encode(), "text/plain", body=body)
            return
        self._file(served, body=body)

    def _file(self, served: Path, *, body: bool) -> None:
        size = served.stat().st_size
        try:
            wanted = byte_range(self.headers.get("Range"), size)
        except UnsatisfiableRangeError:
            self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        first, last = wanted if wanted else (0, size - 1)
        self.send_response(HTTPStatus.PARTIAL_CONTENT if wanted else HTTPStatus.OK)
        self.send_header(
            "Content-Type", "application/json" if served.name == INDEX else "application/octet-stream"
        )
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(last - first + 1))
        if wanted:
            self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.end_headers()
        if not body or last < first:
            return
        with served.open("rb") as content:
            try:
                self.connection.sendfile(content, first, last - first + 1)
            except (BrokenPipeError, ConnectionResetError):
                # A reader that had enough (a format probe reads the first bytes and hangs up).
                self.close_connection = True

    def _small(self, status: HTTPStatus, text: bytes, content_type: str, *, body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        if body:
            self.wfile.write(text)

    def log_message(self, format: str, *args: object) -> None:
        _log({"level": "info", "client": self.client_address[0], "msg": format % args})


def _log(fields: dict[str, object]) -> None:
    """One JSON line on stderr, like the project's components log."""
    print(json.dumps({"component": Handler.server_version, **fields}), file=sys.stderr, flush=True)


def make_server(root: Path, address: str, port: int) -> ThreadingHTTPServer:
    """A server of ``root``'s files on ``address:port`` (port 0: any free one), not yet serving."""
    handler = type("RootHandler", (Handler,), {"root": root})
    server = ThreadingHTTPServer((address, port), handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="test-image-server", description=__doc__)
    parser.add_argument("--root", type=Path, required=True, help="the folder whose files are served")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--address", default="0.0.0.0")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"--root: {args.root} is not a folder")
    server = make_server(args.root, args.address, args.port)
    _log({"level": "info", "msg": "serving", "root": str(args.root), "port": args.port})
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
