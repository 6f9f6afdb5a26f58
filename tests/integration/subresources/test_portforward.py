"""``virtctl port-forward`` (a process) → the real API server's aggregator → the virt-api binary → the
VMI's first address: here a TCP server on loopback standing in for the guest's."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from localcluster.apiserver import ApiServer

from kubevirt.client import ApiError, KubeClient
from kubevirt_testing.aggregated import AggregatedVirtApi, create_vmi
from kubevirt_testing.process import free_port

BASE = "/apis/subresources.kubevirt.io/v1/namespaces"


@pytest.fixture
def guest_port() -> Iterator[int]:
    """A loopback TCP server that answers each line with it upper-cased."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                while data := connection.recv(1024):
                    connection.sendall(data.upper())

    threading.Thread(target=serve, daemon=True).start()
    yield int(server.getsockname()[1])
    server.close()


def _virtctl(apiserver: ApiServer, *args: str) -> subprocess.Popen[bytes]:
    exe = shutil.which("virtctl") or str(Path(sys.executable).parent / "virtctl")
    return subprocess.Popen(
        [exe, "--kubeconfig", str(apiserver.kubeconfig), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _running(address: str) -> dict[str, object]:
    return {"phase": "Running", "interfaces": [{"name": "default", "ipAddress": address}]}


def test_port_forward_reaches_the_vmis_address(
    aggregated_virt_api: AggregatedVirtApi,
    apiserver: ApiServer,
    kube: KubeClient,
    namespace: str,
    guest_port: int,
) -> None:
    del aggregated_virt_api
    create_vmi(kube, namespace, "web", status=_running("127.0.0.1"))

    # --stdio: one stream, stdin to the guest and the guest to stdout.
    process = _virtctl(apiserver, "port-forward", "--stdio", f"vmi/web/{namespace}", str(guest_port))
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(b"hello through the aggregator\n")
    process.stdin.flush()
    answer = b""
    while not answer.endswith(b"\n"):
        answer += process.stdout.read1(1024)
    assert answer == b"HELLO THROUGH THE AGGREGATOR\n"
    process.kill()
    process.wait(10)

    # A local listener: each connection gets a stream of its own.
    local = free_port()
    process = _virtctl(apiserver, "port-forward", f"vmi/web/{namespace}", f"{local}:{guest_port}")
    try:
        for word in (b"one\n", b"two\n"):
            for _ in range(50):
                try:
                    connection = socket.create_connection(("127.0.0.1", local), timeout=10)
                    break
                except ConnectionRefusedError:
                    threading.Event().wait(0.1)
            with connection:
                connection.sendall(word)
                assert connection.recv(1024) == word.upper()
    finally:
        process.kill()
        process.wait(10)


def test_port_forward_refusals_come_back_as_status(
    aggregated_virt_api: AggregatedVirtApi, kube: KubeClient, namespace: str
) -> None:
    del aggregated_virt_api
    paused = _running("127.0.0.1") | {"conditions": [{"type": "Paused", "status": "True"}]}
    create_vmi(kube, namespace, "paused", status=paused)
    create_vmi(kube, namespace, "bare", status={"phase": "Running"})
    refused: dict[str, tuple[int, str]] = {}
    for name in ("paused", "bare"):
        with pytest.raises(ApiError) as caught:
            kube.request("GET", f"{BASE}/{namespace}/virtualmachineinstances/{name}/portforward/22")
        refused[name] = (caught.value.status, caught.value.message)
    assert refused == {
        "paused": (
            409,
            'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "paused": VMI is paused',
        ),
        "bare": (400, "no network interfaces are present"),
    }
