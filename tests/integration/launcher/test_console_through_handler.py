"""The whole console and lifecycle chain with real parts: virtctl's console client → the real API server's
aggregator → the virt-api binary → virt-handler's console server (mutual TLS, certificates of one CA) →
QEMU's serial socket in a real guest's launcher pod, and ``virtctl pause``/``unpause`` through the same
path down to the launcher's domain.

The launcher's ``sockets`` and ``private`` directories are host directories laid out as the kubelet lays
out a pod's emptyDirs, so the handler finds them through a pods directory, as on a node.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from localcluster.apiserver import ApiServer

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, KubeClient
from kubevirt.service.tls import ReloadingCertificate
from kubevirt.virt_handler.rest.lifecycle import LauncherLocator
from kubevirt.virt_handler.rest.peer import CLIENT_COMMON_NAME
from kubevirt.virt_handler.rest.server import ConsoleServer, ServerThread
from kubevirt.virtctl.console import attach, connect_console
from kubevirt.virtctl.root import root
from kubevirt.virtctl.streams import StreamEndedError
from kubevirt_testing.aggregated import HANDLER_NODE, HandlerEndpoint, create_vmi, running_aggregated_virt_api
from kubevirt_testing.certificates import CertificateAuthority, KeyPair

pytestmark = pytest.mark.timeout(300)

POD_UID = "pod-1"
BOOT_BUDGET = 30.0
JSON = dict[str, Any]


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.seen.append((event_type, reason))


class Store:
    def __init__(self) -> None:
        self.items: dict[str, JSON] = {}

    def get_by_key(self, key: str) -> JSON | None:
        return self.items.get(key)


class Console:
    """A console session in a thread: what the guest printed, and how the session ended."""

    def __init__(self, client: KubeClient, namespace: str, name: str) -> None:
        self.ws = connect_console(client, namespace, name, 60)
        self._output = bytearray()
        self._lock = threading.Lock()
        self._leave = threading.Event()
        self.ended: StreamEndedError | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _read_input(self) -> bytes:
        self._leave.wait()
        return bytes([29])  # Ctrl+]

    def _write(self, data: bytes) -> None:
        with self._lock:
            self._output.extend(data)

    def _run(self) -> None:
        try:
            attach(self.ws, self._read_input, self._write)
        except StreamEndedError as err:
            self.ended = err

    def text(self) -> str:
        with self._lock:
            return self._output.decode(errors="replace")

    def ticks(self) -> list[int]:
        return [int(n) for n in re.findall(r"tick (\d+)", self.text())]

    def wait_for(self, predicate: Callable[[list[int]], bool], timeout: float = 30.0) -> list[int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.ticks()):
                return self.ticks()
            time.sleep(0.2)
        raise AssertionError(f"the console showed {self.text()[-300:]!r}")

    def leave(self) -> None:
        self._leave.set()
        self.thread.join(10)


def write_pair(directory: Path, name: str, pair: KeyPair) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    return cert, key


@pytest.fixture
def pod_dirs() -> Iterator[Path]:
    # Short: the launcher's command socket is reached through this path, and unix paths stop at 108 bytes.
    directory = Path(tempfile.mkdtemp(prefix="kv", dir="/tmp"))
    yield directory / "pods"
    shutil.rmtree(directory, ignore_errors=True)


def virtctl(apiserver: ApiServer, *args: str) -> Any:
    arguments = ["--kubeconfig", str(apiserver.kubeconfig), *args]
    return CliRunner().invoke(root, arguments, catch_exceptions=False)


def virtctl_process(apiserver: ApiServer, *args: str, stdin: int | None = None) -> subprocess.Popen[bytes]:
    exe = shutil.which("virtctl") or str(Path(sys.executable).parent / "virtctl")
    return subprocess.Popen(
        [exe, "--kubeconfig", str(apiserver.kubeconfig), *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def console_from_the_command_line(apiserver: ApiServer, namespace: str) -> None:
    """``virtctl console`` with stdin and stdout as pipes: the guest's ticks come out, Ctrl+] leaves."""
    process = virtctl_process(apiserver, "console", "console", "-n", namespace, stdin=subprocess.PIPE)
    assert process.stdout is not None
    assert process.stdin is not None
    output = b""
    deadline = time.monotonic() + 30
    while not re.search(rb"tick \d+\r?\n", output) and time.monotonic() < deadline:
        output += os.read(process.stdout.fileno(), 4096)
    assert re.search(rb"tick \d+", output), output
    process.stdin.write(bytes([29]))
    process.stdin.flush()
    assert process.wait(15) == 0
    assert process.stderr is not None
    assert process.stderr.read().decode() == (
        "Successfully connected to console console. Press Ctrl+] or Ctrl+5 to exit console.\n"
    )


def vnc_from_the_command_line(apiserver: ApiServer, namespace: str) -> None:
    """``virtctl vnc --proxy-only`` prints its port; a viewer connecting there meets QEMU's VNC server."""
    process = virtctl_process(apiserver, "vnc", "console", "-n", namespace, "--proxy-only")
    assert process.stdout is not None
    announced = json.loads(process.stdout.readline())
    with socket.create_connection(("127.0.0.1", announced["port"]), timeout=15) as viewer:
        banner = b""
        while len(banner) < 12:
            banner += viewer.recv(12 - len(banner))
    assert banner == b"RFB 003.008\n"
    assert process.wait(15) == 0


def test_console_pause_and_unpause_from_virtctl_down_to_a_real_guest(
    apiserver: ApiServer,
    kube: KubeClient,
    namespace: str,
    launcher_pods: Any,
    make_vmi: Any,
    pod_dirs: Path,
    tmp_path: Path,
) -> None:
    empty_dirs = pod_dirs / POD_UID / "volumes" / "kubernetes.io~empty-dir"
    (empty_dirs / "private").mkdir(parents=True)
    vmi = make_vmi("console")
    vmi["metadata"]["namespace"] = namespace
    pod = launcher_pods(vmi, share=empty_dirs, private=empty_dirs / "private")
    pod.client.sync_vmi(vmi)
    pod.wait_for_serial("tick 1", BOOT_BUDGET)

    # virt-handler's console server, with its own cache holding the running VMI.
    ca = CertificateAuthority.create()
    pki = tmp_path / "pki"
    pki.mkdir()
    (pki / "ca.crt").write_bytes(ca.pair.cert_pem)
    server_cert, server_key = write_pair(pki, "server", ca.issue("kubevirt.io:system:node:virt-handler"))
    client_cert, client_key = write_pair(pki, "client", ca.issue(CLIENT_COMMON_NAME, client=True))
    certificate = ReloadingCertificate(server_cert, server_key, require_client_cert=True)
    certificate.trust_client_ca(ca.pair.cert_pem.decode())
    store = Store()
    running = {"phase": "Running", "nodeName": HANDLER_NODE, "activePods": {POD_UID: HANDLER_NODE}}
    store.items[f"{namespace}/console"] = {**vmi, "status": running}
    events = Events()
    handler = ServerThread(
        ConsoleServer(store, LauncherLocator(pod_dirs, HANDLER_NODE), events), certificate, "127.0.0.1", 0
    )
    port = handler.start()
    endpoint = HandlerEndpoint(port, pki / "ca.crt", client_cert, client_key)
    workdir = tmp_path / "virt-api"
    workdir.mkdir()
    try:
        pki_dir = apiserver.directory / "pki"
        with running_aggregated_virt_api(apiserver.kubeconfig, pki_dir, workdir, endpoint):
            create_vmi(kube, namespace, "console", {"phase": "Running", "nodeName": HANDLER_NODE})
            client = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))

            first = Console(client, namespace, "console")
            seen = first.wait_for(lambda ticks: len(ticks) >= 2)
            assert seen == sorted(seen)

            paused = virtctl(apiserver, "pause", "vmi", "console", "-n", namespace)
            assert (paused.exit_code, paused.stdout) == (0, "VMI console was scheduled to pause\n")
            assert pod.status() == ("Paused", "User")
            frozen = max(first.ticks())
            time.sleep(2.5)
            assert max(first.ticks()) <= frozen + 1  # a tick in flight may still arrive

            # virt-api unpauses only a VMI whose status says it is paused (virt-handler writes that).
            current = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "console")
            current["status"]["conditions"] = [{"type": "Paused", "status": "True"}]
            kube.update(VIRTUAL_MACHINE_INSTANCES, namespace, current)
            unpaused = virtctl(apiserver, "unpause", "vmi", "console", "-n", namespace)
            assert (unpaused.exit_code, unpaused.stdout) == (0, "VMI console was scheduled to unpause\n")
            assert pod.status()[0] == "Running"
            first.wait_for(lambda ticks: max(ticks) > frozen + 1)

            # A second console takes over; the first one is ended by the server.
            second = Console(client, namespace, "console")
            first.thread.join(15)
            assert not first.thread.is_alive()
            assert first.ended is not None
            resumed = max(second.wait_for(lambda ticks: len(ticks) >= 1))
            second.wait_for(lambda ticks: max(ticks) > resumed)
            second.leave()
            assert second.ended is None  # the user left with Ctrl+]

            console_from_the_command_line(apiserver, namespace)
            vnc_from_the_command_line(apiserver, namespace)
    finally:
        handler.stop()
