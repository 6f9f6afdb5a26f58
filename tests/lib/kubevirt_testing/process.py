"""Stopping the processes a test started."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path


def terminate(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL when it has not exited within ``timeout`` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_virt_api(
    cert_file: Path, key_file: Path, log_file: Path, extra_args: list[str]
) -> tuple[subprocess.Popen[bytes], int]:
    """The installed virt-api serving on a free loopback port, logging to ``log_file``; not yet ready."""
    # The console script sits beside the interpreter running the tests.
    exe = shutil.which("virt-api") or shutil.which("virt-api", path=str(Path(sys.executable).parent))
    if not exe:
        raise RuntimeError("virt-api is not installed")
    port = free_port()
    argv = [
        exe,
        "--listen=127.0.0.1",
        f"--port={port}",
        f"--tls-cert-file={cert_file}",
        f"--tls-key-file={key_file}",
        *extra_args,
    ]
    with log_file.open("wb") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT), port
