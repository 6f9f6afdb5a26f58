"""cmd/container-disk, the static program each disk container runs: compiled as the image recipe compiles
it, it listens on <copy-path>.sock (the peer credentials name its process) until SIGTERM removes it, or until
the socket is removed (virt-launcher-monitor empties the directory when the launcher ends)."""

from __future__ import annotations

import signal
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    binary = tmp_path_factory.mktemp("container-disk") / "container-disk"
    source = REPO / "cmd" / "container-disk" / "container-disk.c"
    subprocess.run(
        ["gcc", "-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror", "-o", str(binary), str(source)],
        check=True,
    )
    return binary


@pytest.fixture
def short_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="cd", dir="/tmp") as directory:
        yield Path(directory)


def test_it_needs_no_shared_library(program: Path) -> None:
    headers = subprocess.run(
        ["readelf", "--program-headers", str(program)], capture_output=True, text=True, check=True
    )
    assert "LOAD" in headers.stdout
    assert "INTERP" not in headers.stdout  # no dynamic loader: it runs in an image holding only a disk
    assert "DYNAMIC" not in headers.stdout


def test_it_listens_until_stopped_and_names_its_process(program: Path, short_dir: Path) -> None:
    holder = subprocess.Popen([str(program), "--copy-path", str(short_dir / "disk_0")])
    sock = short_dir / "disk_0.sock"
    deadline = time.monotonic() + 5
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    for _ in range(40):  # more connections than the listen backlog: each is accepted and closed
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(str(sock))
            pid = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
            assert pid == holder.pid
    holder.send_signal(signal.SIGTERM)
    assert holder.wait(5) == 0
    assert not sock.exists()


def test_it_exits_once_its_socket_is_removed(program: Path, short_dir: Path) -> None:
    holder = subprocess.Popen(
        [str(program), "--copy-path", str(short_dir / "disk_0")], stderr=subprocess.PIPE
    )
    sock = short_dir / "disk_0.sock"
    deadline = time.monotonic() + 5
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(1.2)  # still holding the container while the socket is there
    assert holder.poll() is None
    sock.unlink()
    assert holder.wait(5) == 0
    assert holder.stderr is not None
    assert b"is gone" in holder.stderr.read()


def test_no_op_exits_at_once(program: Path) -> None:
    assert subprocess.run([str(program), "--no-op"], timeout=5, check=False).returncode == 0


def test_bad_arguments_are_refused_with_a_usage_line(program: Path, short_dir: Path) -> None:
    result = subprocess.run([str(program), "--copy"], capture_output=True, text=True, timeout=5, check=False)
    assert (result.returncode, result.stderr) == (2, "usage: container-disk --copy-path PATH | --no-op\n")
    too_long = str(short_dir / ("x" * 120))
    result = subprocess.run(
        [str(program), "--copy-path", too_long], capture_output=True, text=True, timeout=5, check=False
    )
    assert result.returncode == 1
    assert "longer than a socket path may be" in result.stderr
