"""The importer run end to end as its pod runs it (a process, configured by its environment), against
local http(s) and registry servers, with temporary directories standing in for the pod's volumes."""

from __future__ import annotations

import dataclasses
import gzip
import http.server
import io
import lzma
import os
import ssl
import subprocess
import sys
import tarfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubevirt_testing.process import free_port

MIB = 1 << 20
SOURCE_SIZE = 16 * MIB

# The pod's volumes moved under a temporary directory; everything else is the production entry.
_RUNNER = """
import os, sys
from pathlib import Path
from kubevirt.log import configure
from kubevirt.cdi_importer.app import run
from kubevirt.cdi_importer.config import Paths
base = Path(sys.argv[1])
configure("cdi-importer")
sys.exit(run(os.environ, Paths(
    data_dir=base / "data", block_device=base / "cdi-block-volume", scratch_dir=base / "scratch",
    proxy_cert_dir=base / "proxycerts", extra_headers_dir=base / "extraheaders",
    termination_log=base / "termination-log", metrics_port=int(sys.argv[2]))))
"""


@dataclasses.dataclass(frozen=True)
class Images:
    directory: Path
    raw: Path

    def __getitem__(self, name: str) -> Path:
        return self.directory / name


def _qemu_img(*args: str) -> None:
    subprocess.run(["qemu-img", *args], check=True, capture_output=True)


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> Images:
    """A 16 MiB raw disk with data in a few places, and the same disk in every form served."""
    directory = tmp_path_factory.mktemp("images")
    raw = directory / "disk.raw"
    with raw.open("wb") as handle:
        handle.truncate(SOURCE_SIZE)
        for offset in (0, 3 * MIB + 17, 9 * MIB):
            handle.seek(offset)
            handle.write(os.urandom(300_000))
    _qemu_img("convert", "-O", "qcow2", str(raw), str(directory / "disk.qcow2"))
    data = raw.read_bytes()
    (directory / "disk.raw.gz").write_bytes(gzip.compress(data, compresslevel=1))
    (directory / "disk.raw.xz").write_bytes(lzma.compress(data, preset=0))
    qcow2 = (directory / "disk.qcow2").read_bytes()
    (directory / "truncated.qcow2").write_bytes(qcow2[: len(qcow2) // 2])
    (directory / "notes.txt").write_text("These are not the bytes of a disk image.\n" * 40)
    _qemu_img("create", "-f", "qcow2", str(directory / "big.qcow2"), "10G")
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name, content in (("a.txt", b"first"), ("dir/b.txt", b"second")):
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    (directory / "files.tar").write_bytes(archive.getvalue())
    return Images(directory, raw)


@dataclasses.dataclass
class FileServer:
    """Serves a directory; records each request's headers; can hold a response half way."""

    url: str
    requests: list[dict[str, str]]  # header names in lower case
    required_auth: list[str]
    hold: threading.Event  # cleared: responses of paths under /slow/ stop half way until it is set


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        state = self.server.state
        state.requests.append({k.lower(): v for k, v in self.headers.items()})
        if state.required_auth and self.headers.get("Authorization") not in state.required_auth:
            self.send_error(401)
            return
        name = self.path.removeprefix("/slow")
        path = self.server.root / name.lstrip("/")
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header(
            "Content-Type", "text/plain" if path.suffix == ".txt" else "application/octet-stream"
        )
        self.end_headers()
        if self.path.startswith("/slow/"):
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            state.hold.wait(30)
            data = data[len(data) // 2 :]
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    root: Path
    state: FileServer


def _serve(root: Path, context: ssl.SSLContext | None) -> Iterator[FileServer]:
    server = _Server(("127.0.0.1", 0), _Handler)
    scheme = "http"
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    server.root = root
    server.state = FileServer(f"{scheme}://127.0.0.1:{server.server_address[1]}", [], [], threading.Event())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.state
    finally:
        server.state.hold.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def http_server(images: Images) -> Iterator[FileServer]:
    yield from _serve(images.directory, None)


@pytest.fixture
def serve_tls(images: Images, tmp_path: Path) -> Callable[[ssl.SSLContext], Iterator[FileServer]]:
    return lambda context: _serve(images.directory, context)


@dataclasses.dataclass(frozen=True)
class Result:
    returncode: int
    message: str
    output: str


@dataclasses.dataclass
class Pod:
    """An importer pod's volumes: ``data`` and ``scratch`` exist unless removed."""

    base: Path
    metrics_port: int

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def scratch(self) -> Path:
        return self.base / "scratch"

    @property
    def disk(self) -> Path:
        return self.data / "disk.img"

    def start(self, env: dict[str, str]) -> subprocess.Popen[str]:
        full_env = {
            "PATH": os.environ.get("PATH", ""),
            "PREALLOCATION": "false",
            "FILESYSTEM_OVERHEAD": "0.06",
            "IMPORTER_CONTENTTYPE": "kubevirt",
            "OWNER_UID": "owner-uid-1",
            **env,
        }
        return subprocess.Popen(
            [sys.executable, "-c", _RUNNER, str(self.base), str(self.metrics_port)],
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def finish(self, process: subprocess.Popen[str]) -> Result:
        output, _ = process.communicate(timeout=120)
        log = self.base / "termination-log"
        return Result(process.returncode, log.read_text() if log.exists() else "", output)

    def run(self, env: dict[str, str]) -> Result:
        return self.finish(self.start(env))


@pytest.fixture
def pod(tmp_path: Path) -> Pod:
    for name in ("data", "scratch", "proxycerts"):
        (tmp_path / name).mkdir()
    return Pod(tmp_path, free_port())
