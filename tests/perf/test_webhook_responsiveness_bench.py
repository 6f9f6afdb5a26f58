"""Benchmark: a small AdmissionReview's latency while large ones keep virt-api busy.

virt-api runs as its own process (so the load generator does not share its interpreter). Several
AdmissionReviews near the size limit are sent at once, repeatedly; meanwhile a small valid review is sent
every half second and its answer time recorded. The API server gives a webhook 10 s; the target for the
small review is 1 s.

Run with ``hack/test tests/perf/test_webhook_responsiveness_bench.py -s`` or ``python`` on this file.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kubevirt.input_limits import MAX_OBJECT_BYTES
from kubevirt.virt_api.webhooks.server import DEFAULT_MAX_BODY_BYTES
from kubevirt_testing.certificates import self_signed, write_pair

CASES = Path(__file__).parents[1] / "testdata" / "conformance" / "vmi" / "valid"
PATH = "/virtualmachineinstances-validate-create"
LARGE_CLIENTS = 6
ROUNDS_OF_LARGE = 3


def _review(obj: dict[str, Any]) -> bytes:
    request = {
        "uid": "bench",
        "operation": "CREATE",
        "resource": {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachineinstances"},
        "namespace": "default",
        "userInfo": {"username": "bench"},
        "object": obj,
    }
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()


def large_review() -> bytes:
    """A VMI with as many disks and volumes as fit in one object (every one is checked)."""
    vmi = json.loads((CASES / "001-minimal-containerdisk.json").read_text())
    count = 0
    disks, volumes = [], []
    while True:
        disks.append({"name": f"disk{count}", "disk": {"bus": "virtio"}})
        volumes.append({"name": f"disk{count}", "emptyDisk": {"capacity": "1Gi"}})
        count += 1
        if (
            count % 1000 == 0
            and len(json.dumps(disks)) + len(json.dumps(volumes)) > MAX_OBJECT_BYTES - 200_000
        ):
            break
    vmi["spec"]["domain"]["devices"]["disks"] += disks
    vmi["spec"]["volumes"] += volumes
    return _review(vmi)


def small_review() -> bytes:
    return _review(json.loads((CASES / "001-minimal-containerdisk.defaults.json").read_text()))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _post(port: int, body: bytes) -> float:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    start = time.perf_counter()
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=60)
    try:
        conn.request("POST", PATH, body=body, headers={"Content-Type": "application/json"})
        reply = conn.getresponse()
        reply.read()
        assert reply.status == 200
    finally:
        conn.close()
    return time.perf_counter() - start


def _start_virt_api(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    exe = shutil.which("virt-api") or shutil.which("virt-api", path=str(Path(sys.executable).parent))
    assert exe, "virt-api is not installed"
    write_pair(self_signed("bench"), folder)
    port = _free_port()
    process = subprocess.Popen(
        [
            exe,
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--tls-cert-file={folder / 'tls.crt'}",
            f"--tls-key-file={folder / 'tls.key'}",
            f"--max-request-bytes={DEFAULT_MAX_BODY_BYTES}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            _post(port, small_review())
            return process, port
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("virt-api did not come up")


def measure() -> dict[str, str]:
    large, small = large_review(), small_review()
    with tempfile.TemporaryDirectory() as tmp:
        process, port = _start_virt_api(Path(tmp))
        try:
            alone = [_post(port, small) for _ in range(5)]
            large_times: list[float] = []

            def load() -> None:
                for _ in range(ROUNDS_OF_LARGE):
                    large_times.append(_post(port, large))

            clients = [threading.Thread(target=load) for _ in range(LARGE_CLIENTS)]
            for client in clients:
                client.start()
            busy: list[float] = []
            time.sleep(0.5)
            while any(client.is_alive() for client in clients):
                busy.append(_post(port, small))
                time.sleep(0.5)
            for client in clients:
                client.join()
        finally:
            process.terminate()
            process.wait(timeout=10)
    return {
        "large review size": f"{len(large) / 1024 / 1024:.1f} MiB",
        "large reviews": (
            f"{len(large_times)}, median {statistics.median(large_times):.2f} s, max {max(large_times):.2f} s"
        ),
        "small review, idle server": f"median {statistics.median(alone) * 1000:.0f} ms",
        "small review under load": (
            f"{len(busy)} sent, median {statistics.median(busy) * 1000:.0f} ms, max {max(busy) * 1000:.0f} ms"
        ),
    }


def test_small_review_latency_under_load_is_reported() -> None:
    for label, value in measure().items():
        print(f"{label}: {value}")


if __name__ == "__main__":
    test_small_review_latency_under_load_is_reported()
