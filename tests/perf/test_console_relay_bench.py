"""Benchmark: virt-handler's console relay (websocket over mutual TLS → QEMU's unix socket).

Serves a console through the real console server on loopback, with a threaded echo server as the guest's
serial socket, and measures from a websocket client (virtctl's library) the round trip of small messages
(a keystroke and its echo: p50/p99) and the throughput of 64 KiB messages, next to the same on the unix
socket directly: the difference is what the relay adds.

With ``--through-virt-api`` it also measures the whole path virtctl uses: kube-apiserver's aggregator
(started for the run) and the virt-api binary in front of the same console server.

Run ``hack/bench-console [ROUND_TRIPS] [MEBIBYTES] [--through-virt-api]``; under pytest it runs 200 round
trips and 4 MiB, without the API server.
"""

from __future__ import annotations

import socket
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "hack" / "cluster"))
sys.path.insert(0, str(REPO / "tests" / "lib"))

import websocket  # noqa: E402
from localcluster.apiserver import running_apiserver  # noqa: E402

from kubevirt.client import KubeClient  # noqa: E402
from kubevirt.pod_paths import SERIAL_SOCKET  # noqa: E402
from kubevirt.service.tls import ReloadingCertificate  # noqa: E402
from kubevirt.virt_handler.private_sockets import connect_private_socket, private_dir  # noqa: E402
from kubevirt.virt_handler.rest.lifecycle import LauncherLocator  # noqa: E402
from kubevirt.virt_handler.rest.peer import CLIENT_COMMON_NAME  # noqa: E402
from kubevirt.virt_handler.rest.server import ConsoleServer, ServerThread  # noqa: E402
from kubevirt.virtctl.streams import open_stream  # noqa: E402
from kubevirt_testing.aggregated import HANDLER_NODE, HandlerEndpoint, create_vmi, running_aggregated_virt_api  # noqa: E402
from kubevirt_testing.certificates import CertificateAuthority, write_pair  # noqa: E402
from kubevirt_testing.unix_echo import EchoServer  # noqa: E402

NODE, POD, VMI_UID = "node01", "pod-1", "5e1d2c3b-0000-4000-8000-000000000001"
CHUNK = 64 * 1024


class _Store:
    def __init__(self, vmi: dict[str, object]) -> None:
        self._vmi = vmi

    def get_by_key(self, key: str) -> dict[str, object] | None:
        return self._vmi if key == "default/bench" else None


class _NoEvents:
    def event(self, obj: object, event_type: str, reason: str, message: str) -> None:
        return None


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _measure(
    send: Callable[[bytes], None], receive: Callable[[int], bytes], trips: int, mib: int
) -> dict[str, float]:
    latencies = []
    for _ in range(trips):
        started = time.perf_counter()
        send(b"x")
        receive(1)
        latencies.append((time.perf_counter() - started) * 1000)
    payload = b"\0" * CHUNK
    total = mib * 1024 * 1024
    started = time.perf_counter()
    for _ in range(total // CHUNK):
        send(payload)
        receive(CHUNK)
    seconds = time.perf_counter() - started
    return {
        "p50_ms": statistics.median(latencies),
        "p99_ms": _percentile(latencies, 0.99),
        "mib_per_s": 2 * mib / seconds,  # each byte went there and back
    }


def _receive_socket(connection: socket.socket) -> Callable[[int], bytes]:
    def receive(size: int) -> bytes:
        data = b""
        while len(data) < size:
            data += connection.recv(size - len(data))
        return data

    return receive


def _receive_stream(ws: websocket.WebSocket) -> Callable[[int], bytes]:
    pending = bytearray()

    def receive(size: int) -> bytes:
        while len(pending) < size:
            pending.extend(ws.recv_data()[1])
        data = bytes(pending[:size])
        del pending[:size]
        return data

    return receive


def _through_virt_api(root: Path, endpoint: HandlerEndpoint, trips: int, mib: int) -> dict[str, float]:
    """The same through kube-apiserver's aggregator and the virt-api binary, as virtctl console streams."""
    (root / "virt-api").mkdir()
    with running_apiserver(root / "apiserver") as apiserver:
        kubeconfig = apiserver.kubeconfig
        with running_aggregated_virt_api(
            kubeconfig, apiserver.directory / "pki", root / "virt-api", endpoint
        ):
            client = KubeClient.from_kubeconfig(str(kubeconfig))
            create_vmi(client, "default", "bench", {"phase": "Running", "nodeName": HANDLER_NODE})
            ws = open_stream(client, "default", "bench", "console")
            ws.settimeout(None)
            try:
                return _measure(ws.send_binary, _receive_stream(ws), trips, mib)
            finally:
                ws.close()


def run(trips: int, mib: int, *, through_virt_api: bool = False) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        pods = root / "pods"
        private = pods.joinpath(*private_dir(POD, VMI_UID))
        private.mkdir(parents=True)
        (pods / POD / "volumes" / "kubernetes.io~empty-dir" / "sockets").mkdir(parents=True)
        echo = EchoServer(private / SERIAL_SOCKET, b"")
        ca = CertificateAuthority.create()
        cert, key = write_pair(ca.issue("kubevirt.io:system:node:virt-handler"), root, "server")
        client_cert, client_key = write_pair(ca.issue(CLIENT_COMMON_NAME, client=True), root, "client")
        certificate = ReloadingCertificate(Path(cert), Path(key), require_client_cert=True)
        certificate.trust_client_ca(ca.pair.cert_pem.decode())
        vmi = {"metadata": {"name": "bench", "namespace": "default", "uid": VMI_UID}, "status": {}}
        locator = LauncherLocator(pods, NODE)
        locator.pod_uid = lambda _vmi: POD  # type: ignore[method-assign]  # no launcher socket needed here
        server = ServerThread(ConsoleServer(_Store(vmi), locator, _NoEvents()), certificate, "127.0.0.1", 0)
        port = server.start()
        results = {}
        try:
            direct = connect_private_socket(pods, POD, VMI_UID, SERIAL_SOCKET)
            results["unix socket"] = _measure(direct.sendall, _receive_socket(direct), trips, mib)
            direct.close()
            context = ssl.create_default_context(cadata=ca.pair.cert_pem.decode())
            context.check_hostname = False
            context.load_cert_chain(client_cert, client_key)
            ws = websocket.create_connection(
                f"wss://127.0.0.1:{port}/v1/namespaces/default/virtualmachineinstances/bench/console",
                subprotocols=["plain.kubevirt.io"],
                sslopt={"context": context, "check_hostname": False},
            )
            results["handler relay"] = _measure(ws.send_binary, _receive_stream(ws), trips, mib)
            ws.close()
            if through_virt_api:
                (root / "ca.crt").write_bytes(ca.pair.cert_pem)
                endpoint = HandlerEndpoint(port, root / "ca.crt", Path(client_cert), Path(client_key))
                results["virtctl stream"] = _through_virt_api(root, endpoint, trips, mib)
        finally:
            server.stop()
            echo.close()
        return results


def _report(results: dict[str, dict[str, float]]) -> None:
    for name, numbers in results.items():
        print(
            f"{name:>15}: round trip p50 {numbers['p50_ms']:.3f} ms, p99 {numbers['p99_ms']:.3f} ms; "
            f"throughput {numbers['mib_per_s']:.0f} MiB/s"
        )


def test_console_relay_bench() -> None:
    results = run(200, 4)
    _report(results)
    assert results["handler relay"]["mib_per_s"] > 0


if __name__ == "__main__":
    chain = "--through-virt-api" in sys.argv
    arguments = [int(a) for a in sys.argv[1:] if a.isdigit()][:2]
    trips, mib = arguments + [2000, 64][len(arguments) :]
    _report(run(trips, mib, through_virt_api=chain))
