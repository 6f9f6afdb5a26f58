"""virt-exportserver as the exporter pod runs it: the entrypoint configured by the environment alone, memory
that stays flat while a disk far bigger than any buffer streams out, and the deadline ending the process
once the downloads in flight have finished."""

from __future__ import annotations

import contextlib
import gzip
import http.client
import os
import socket
import ssl
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kubevirt.export.paths import volume_env
from kubevirt_testing.certificates import self_signed, write_pair
from kubevirt_testing.process import free_port

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[3]
ENTRYPOINT = REPO / "cmd" / "virt-exportserver" / "__init__.py"
TOKEN = "process-token"
MIB = 1 << 20
BIG = 64 * MIB
# Loads the entrypoint module from its folder (installed, it is kubevirt_cmd.virt_exportserver) and runs it.
LAUNCH = (
    "import importlib.util, sys\n"
    f"spec = importlib.util.spec_from_file_location('virt_exportserver_cmd', {str(ENTRYPOINT)!r})\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
    "module.main()\n"
)


def _environment(root: Path, port: int, deadline: datetime | None = None) -> dict[str, str]:
    cert, key = write_pair(self_signed("exporter"), root)
    (root / "token").write_text(TOKEN)
    volume = root / "export-volumes" / "big"
    volume.mkdir(parents=True)
    with (volume / "disk.img").open("wb") as disk:
        disk.truncate(BIG)  # sparse: reads as zeros without using the disk
        disk.seek(BIG - 5)
        disk.write(b"last!")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "CERT_FILE": str(cert),
        "KEY_FILE": str(key),
        "TOKEN_FILE": str(root / "token"),
        "LISTEN_ADDR": f"127.0.0.1:{port}",
        "POD_NAME": "virt-export-test",
        **volume_env(0, str(volume), "big", raw=True),
    }
    if deadline is not None:
        env["DEADLINE"] = deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
    return env


@contextlib.contextmanager
def _server(env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCH], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def _connect(port: int, cert: str) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=cert)
    context.check_hostname = False
    return http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)


def _wait_ready(port: int, cert: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited while starting"
        conn = _connect(port, cert)
        try:
            conn.request("GET", "/exportready")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.1)
        finally:
            conn.close()
    raise AssertionError("the server never became ready")


def _high_water_mark_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _download(conn: http.client.HTTPSConnection, path: str) -> tuple[int, bytes]:
    """The body's length and its last bytes, read a chunk at a time (never whole)."""
    conn.request("GET", path, headers={"x-kubevirt-export-token": TOKEN})
    reply = conn.getresponse()
    assert reply.status == 200
    size, tail = 0, b""
    while chunk := reply.read(MIB):
        size += len(chunk)
        tail = (tail + chunk)[-16:]
    return size, tail


def test_a_disk_streams_out_without_the_server_holding_it(tmp_path: Path) -> None:
    port = free_port()
    env = _environment(tmp_path, port)
    with _server(env) as process:
        _wait_ready(port, env["CERT_FILE"], process)
        conn = _connect(port, env["CERT_FILE"])
        _download(conn, "/volumes/big/disk.img.gz")  # warm up: the executor's threads, zlib's tables
        before = _high_water_mark_kib(process.pid)
        size, tail = _download(conn, "/volumes/big/disk.img")
        assert (size, tail[-5:]) == (BIG, b"last!")
        conn.request("GET", "/volumes/big/disk.img.gz", headers={"x-kubevirt-export-token": TOKEN})
        unzipped = zlib.decompressobj(16 + zlib.MAX_WBITS)
        gz_reply = conn.getresponse()
        unzipped_size = 0
        while chunk := gz_reply.read(MIB):
            unzipped_size += len(unzipped.decompress(chunk))
        assert unzipped_size == BIG
        grown_mib = (_high_water_mark_kib(process.pid) - before) / 1024
        conn.close()
    # A buffering server would have grown by the disk's 64 MiB; streaming keeps to a few chunks.
    assert grown_mib < 16, f"the server's peak memory grew by {grown_mib:.1f} MiB"


def test_the_deadline_ends_the_process_after_the_downloads_in_flight(tmp_path: Path) -> None:
    port = free_port()
    deadline = datetime.now(UTC) + timedelta(seconds=4)
    env = _environment(tmp_path, port, deadline)
    with _server(env) as process:
        _wait_ready(port, env["CERT_FILE"], process)
        conn = _connect(port, env["CERT_FILE"])
        conn.request("GET", "/volumes/big/disk.img", headers={"x-kubevirt-export-token": TOKEN})
        reply = conn.getresponse()
        first = reply.read(MIB)
        time.sleep(max(0.0, (deadline - datetime.now(UTC)).total_seconds()) + 1.5)
        assert process.poll() is None, "the process ended with a download in flight"
        with pytest.raises(ConnectionRefusedError):  # no longer accepting
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        rest = 0
        while chunk := reply.read(MIB):
            rest += len(chunk)
            time.sleep(0.02)  # slower than the server: its last bytes are still buffered when it closes
        assert len(first) + rest == BIG
        conn.close()
        assert process.wait(30) == 0


def test_a_missing_setting_is_a_clear_error(tmp_path: Path) -> None:
    env = _environment(tmp_path, free_port())
    del env["TOKEN_FILE"]
    result = subprocess.run([sys.executable, "-c", LAUNCH], env=env, capture_output=True, timeout=60)
    assert result.returncode == 1
    assert b"TOKEN_FILE" in result.stderr
    assert b"Traceback" not in result.stderr


def test_an_unreadable_volume_stops_the_server_before_it_listens(tmp_path: Path) -> None:
    env = _environment(tmp_path, free_port())
    env["VOLUME0_EXPORT_PATH"] = str(tmp_path / "no-such-volume")
    result = subprocess.run([sys.executable, "-c", LAUNCH], env=env, capture_output=True, timeout=60)
    assert result.returncode == 1
    assert b"cannot start" in result.stderr
    assert b"Traceback" not in result.stderr


def test_gzip_is_what_a_gzip_reader_reads(tmp_path: Path) -> None:
    # The streamed gzip is one member a standard reader takes whole.
    port = free_port()
    env = _environment(tmp_path, port)
    with _server(env) as process:
        _wait_ready(port, env["CERT_FILE"], process)
        conn = _connect(port, env["CERT_FILE"])
        conn.request("GET", "/volumes/big/disk.img.gz", headers={"x-kubevirt-export-token": TOKEN})
        body = conn.getresponse().read()
        conn.close()
    assert len(body) < MIB
    assert gzip.decompress(body)[-5:] == b"last!"
