"""The test image server's HTTP server: the files of one folder, by name, over plain HTTP.

It runs in its image on Debian's Python alone (the standard library, no project code). ``GET`` and
``HEAD`` answer with the file's exact ``Content-Length``; a single byte range (``Range: bytes=A-B``,
``A-`` or ``-N``) answers ``206`` with its ``Content-Range``, a range past the end ``416``, as readers that
fetch a disk piecemeal (QEMU's curl driver, nbdkit) expect. Connections are kept alive (HTTP/1.1). ``/``
answers the folder's ``index.json``, ``/healthz`` the readiness probe.

Under ``/v2/`` it is a read-only container registry (the registry v2 API's pull side) of the images in the
folder's ``registry/``: ``tags.json`` names each repository's manifests (digest -> media type) and tags
(tag -> digest), ``blobs/sha256/<hex>`` holds the manifests, configs and layers. A TLS handshake, as a
registry client's first (https) attempt sends, is refused at once with a TLS alert, so that the client
falls back to plain http without waiting for a request line that never comes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import socket
import sys
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

INDEX = "index.json"
HEALTH_PATH = "/healthz"
_SINGLE_RANGE = re.compile(r"bytes=\s*(\d*)\s*-\s*(\d*)\s*", re.IGNORECASE)
OCTET_STREAM = "application/octet-stream"

# The registry's content in the folder.
REGISTRY_DIR = "registry"
TAGS_FILE = "tags.json"
BLOBS_DIR = "blobs/sha256"
API_VERSION_HEADER = "Docker-Distribution-API-Version"
API_VERSION = "registry/2.0"
DIGEST_HEADER = "Docker-Content-Digest"
_DIGEST = re.compile(r"sha256:([0-9a-f]{64})")
# /v2/<repository>/(manifests|blobs)/<reference>, the repository as the distribution spec spells names.
_REGISTRY_PATH = re.compile(
    r"/v2/(?P<name>[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
    r"/(?P<kind>manifests|blobs)/(?P<reference>[A-Za-z0-9_:.-]+)"
)
# A TLS record carrying a handshake starts with this byte; a fatal handshake_failure alert answers it.
_TLS_HANDSHAKE = 0x16
TLS_HANDSHAKE_FAILURE = bytes([0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x28])


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

    def handle(self) -> None:
        try:
            first = self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return  # closed or idle past the timeout before a byte came
        if first and first[0] == _TLS_HANDSHAKE:
            _log({"level": "info", "client": self.client_address[0], "msg": "refused a TLS handshake"})
            with contextlib.suppress(OSError):  # the client may already have given up
                self.connection.sendall(TLS_HANDSHAKE_FAILURE)
            return
        super().handle()

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        if path == "/v2" or path.startswith("/v2/"):
            self._registry(path, body=body)
            return
        if path == HEALTH_PATH:
            self._small(HTTPStatus.OK, b"ok\n", "text/plain", body=body)
            return
        name = INDEX if path == "/" else path.removeprefix("/")
        served = self.root / name
        # Only the folder's own files: no subfolders, no way out of it.
        if "/" in name or name in ("", ".", "..") or not served.is_file():
            self._small(HTTPStatus.NOT_FOUND, f"{path}: no such file\n".encode(), "text/plain", body=body)
            return
        self._file(served, "application/json" if served.name == INDEX else OCTET_STREAM, body=body)

    def _registry(self, path: str, *, body: bool) -> None:
        if path in ("/v2", "/v2/"):
            self._small(HTTPStatus.OK, b"{}", "application/json", body=body, headers=_API_VERSION)
            return
        found = _REGISTRY_PATH.fullmatch(path)
        if found is None:
            self._registry_error("NAME_INVALID", "invalid repository name or path", body=body)
            return
        name, kind, reference = found.group("name", "kind", "reference")
        repository = _repositories(self.root).get(name)
        if repository is None:
            self._registry_error("NAME_UNKNOWN", "repository name not known to registry", body=body)
            return
        if kind == "manifests":
            digest = repository.tags.get(reference, reference)
            media_type = repository.manifests.get(digest)
            blob = _blob_path(self.root, digest) if media_type else None
            if media_type is None or blob is None:
                self._registry_error("MANIFEST_UNKNOWN", "manifest unknown", body=body)
                return
            self._file(blob, media_type, body=body, headers={**_API_VERSION, DIGEST_HEADER: digest})
            return
        blob = _blob_path(self.root, reference)
        if blob is None:
            self._registry_error("BLOB_UNKNOWN", "blob unknown to registry", body=body)
            return
        self._file(blob, OCTET_STREAM, body=body, headers={**_API_VERSION, DIGEST_HEADER: reference})

    def _registry_error(self, code: str, message: str, *, body: bool) -> None:
        document = {"errors": [{"code": code, "message": message, "detail": {}}]}
        text = json.dumps(document).encode()
        self._small(HTTPStatus.NOT_FOUND, text, "application/json", body=body, headers=_API_VERSION)

    def _file(
        self, served: Path, content_type: str, *, body: bool, headers: dict[str, str] | None = None
    ) -> None:
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
        self.send_header("Content-Type", content_type)
        for header, value in (headers or {}).items():
            self.send_header(header, value)
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

    def _small(
        self,
        status: HTTPStatus,
        text: bytes,
        content_type: str,
        *,
        body: bool,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for header, value in (headers or {}).items():
            self.send_header(header, value)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        if body:
            self.wfile.write(text)

    def log_message(self, format: str, *args: object) -> None:
        _log({"level": "info", "client": self.client_address[0], "msg": format % args})


_API_VERSION = {API_VERSION_HEADER: API_VERSION}


@dataclass(frozen=True)
class Repository:
    """One repository of ``tags.json``: its manifests (digest -> media type) and tags (tag -> digest)."""

    manifests: dict[str, str]
    tags: dict[str, str]


def _repositories(root: Path) -> dict[str, Repository]:
    """The registry's repositories, read per request (the file is small and never changes)."""
    try:
        document = json.loads((root / REGISTRY_DIR / TAGS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    repositories = document.get("repositories") if isinstance(document, dict) else None
    if not isinstance(repositories, dict):
        return {}
    return {
        str(name): Repository(
            {str(k): str(v) for k, v in (entry.get("manifests") or {}).items()},
            {str(k): str(v) for k, v in (entry.get("tags") or {}).items()},
        )
        for name, entry in repositories.items()
        if isinstance(entry, dict)
    }


def _blob_path(root: Path, digest: str) -> Path | None:
    """The stored blob of a well-formed sha256 digest (only hex reaches the path: nothing escapes)."""
    found = _DIGEST.fullmatch(digest)
    if found is None:
        return None
    blob = root / REGISTRY_DIR / BLOBS_DIR / found.group(1)
    return blob if blob.is_file() else None


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
