"""The whole console and lifecycle chain with real parts: virtctl (its console client, and the command as
a process) → the real API server's aggregator → the virt-api binary → virt-handler's console server
(mutual TLS, certificates of one CA published in the ``kubevirt-ca`` ConfigMap) → QEMU's serial and VNC
sockets in a real guest's launcher pod, and ``virtctl pause``/``unpause`` the same way down to the
launcher's domain.

virt-handler runs as its application object, in process: its VM controller boots the guest through the
launcher and reports it Running, and its console server answers from the same node-filtered VMI cache.
The launcher's ``sockets`` and ``private`` directories are host directories laid out as the kubelet lays
out a pod's emptyDirs, so the handler finds them through a pods directory, as on a node.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from localcluster.apiserver import ApiServer

from kubevirt.client import CONFIG_MAPS, VIRTUAL_MACHINE_INSTANCES, AlreadyExistsError, KubeClient
from kubevirt.virt_handler import app
from kubevirt.virt_handler.container_disk import mounter
from kubevirt.virt_handler.rest.peer import CLIENT_COMMON_NAME
from kubevirt.virtctl.console import attach, connect_console
from kubevirt.virtctl.diagnose.findings import Findings
from kubevirt.virtctl.diagnose.launcher import check_launcher
from kubevirt.virtctl.diagnose.reader import Reader
from kubevirt.virtctl.diagnose.verdict import Link, Status
from kubevirt.virtctl.root import root
from kubevirt.virtctl.streams import StreamEndedError
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_testing.aggregated import (
    HANDLER_NODE,
    KUBEVIRT_NAMESPACE,
    NAMESPACES,
    HandlerEndpoint,
    running_aggregated_virt_api,
)
from kubevirt_testing.certificates import CertificateAuthority, write_pair
from kubevirt_testing.process import free_port

pytestmark = pytest.mark.timeout(300)

POD_UID = "pod-1"
BOOT_BUDGET = 30.0
JSON = dict[str, Any]


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


def screenshot_from_the_command_line(apiserver: ApiServer, namespace: str, directory: Path) -> None:
    """``virtctl vnc screenshot`` saves the guest's screen: a valid PNG of QEMU's framebuffer."""
    target = directory / "screen.png"
    process = virtctl_process(
        apiserver, "vnc", "screenshot", "console", "-n", namespace, "--file", str(target), "--move-cursor"
    )
    assert process.wait(30) == 0, process.stderr.read() if process.stderr else b""
    png = target.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height, depth, colour = struct.unpack(">IIBB", png[16:26])
    assert (depth, colour) == (8, 2)
    assert 320 <= width <= 4096
    assert 200 <= height <= 4096
    idat = png.index(b"IDAT")
    (length,) = struct.unpack(">I", png[idat - 4 : idat])
    rows = zlib.decompress(png[idat + 4 : idat + 4 + length])
    assert len(rows) == height * (1 + 3 * width)
    assert len(set(rows[1 : 1 + 3 * width * 20])) > 1  # the firmware's text on the first lines, not blank


def wait_for_phase(kube: KubeClient, namespace: str, name: str, phase: str, timeout: float) -> JSON:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        vmi = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, name)
        if (vmi.get("status") or {}).get("phase") == phase:
            return vmi
        time.sleep(0.2)
    raise AssertionError(f"the VMI did not reach {phase}: {vmi.get('status')}")


def scheduled_vmi(kube: KubeClient, namespace: str, spec: JSON) -> JSON:
    """The VMI as virt-controller and the scheduler leave it: on this node, its launcher pod known."""
    created = kube.create(
        VIRTUAL_MACHINE_INSTANCES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "metadata": {"name": "console", "labels": {"kubevirt.io/nodeName": HANDLER_NODE}},
            "spec": spec,
        },
    )
    created["status"] = {
        "phase": "Scheduled",
        "nodeName": HANDLER_NODE,
        "activePods": {POD_UID: HANDLER_NODE},
        "runtimeUser": 0,
    }
    return kube.update(VIRTUAL_MACHINE_INSTANCES, namespace, created)


def wait_for_condition(kube: KubeClient, namespace: str, kind: str, *, present: bool) -> JSON:
    """The VMI's condition of ``kind`` once virt-handler wrote it (or ``{}`` once it removed it)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        vmi = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "console")
        found = next((c for c in vmi["status"].get("conditions") or [] if c["type"] == kind), None)
        if (found is not None) == present:
            return found or {}
        time.sleep(0.2)
    raise AssertionError(f"condition {kind} present={not present}: {vmi['status'].get('conditions')}")


def handler_status_is_written(vmi: JSON) -> None:
    """What virt-handler derives from the real domain, besides the phase."""
    status = vmi["status"]
    assert "q35" in status["machine"]["type"]  # what libvirt expanded the requested q35 to
    assert status["memory"]["guestCurrent"]
    assert status["migrationMethod"] in ("BlockMigration", "LiveMigration")
    kinds = {c["type"]: c for c in status.get("conditions") or []}
    assert "LiveMigratable" in kinds
    assert "StorageLiveMigratable" in kinds
    assert "Paused" not in kinds


def no_write_without_a_change(kube: KubeClient, namespace: str) -> None:
    """virt-handler's own write comes back through its informer: reading it again must not write again
    (the real API server may store what the handler sent differently, e.g. without null fields)."""
    before = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "console")["metadata"]["resourceVersion"]
    time.sleep(3)
    after = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "console")["metadata"]["resourceVersion"]
    assert after == before


def diagnose_launcher(client: KubeClient, namespace: str) -> Link:
    """``virtctl diagnose``'s launcher link over the real chain: the aggregator, virt-api, virt-handler."""
    findings = Findings("vmi", namespace, "console", datetime.now(UTC), Reader(client))
    raw = client.get(VIRTUAL_MACHINE_INSTANCES, namespace, "console")
    findings.vmi = VirtualMachineInstance.from_dict(raw)
    return check_launcher(findings)


def publish_ca(kube: KubeClient, bundle: str) -> None:
    with contextlib.suppress(AlreadyExistsError):
        kube.create(CONFIG_MAPS, KUBEVIRT_NAMESPACE, {"metadata": {"name": "kubevirt-ca"}, "data": {}})
    config_map = kube.get(CONFIG_MAPS, KUBEVIRT_NAMESPACE, "kubevirt-ca")
    config_map["data"] = {"ca-bundle": bundle}
    kube.update(CONFIG_MAPS, KUBEVIRT_NAMESPACE, config_map)


def test_console_pause_and_unpause_from_virtctl_down_to_a_real_guest(
    apiserver: ApiServer,
    kube: KubeClient,
    namespace: str,
    launcher_pods: Any,
    make_vmi: Any,
    pod_dirs: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # KubeVirt's CA, published in the kubevirt-ca ConfigMap; virt-handler's serving and client certificates.
    ca = CertificateAuthority.create()
    pki = tmp_path / "pki"
    pki.mkdir()
    (pki / "ca.crt").write_bytes(ca.pair.cert_pem)
    # Like virt-operator's, the serving certificate names no address: virt-api dials it by IP all the same.
    handler_pair = ca.issue("kubevirt.io:system:node:virt-handler", ip_addresses=())
    server_cert, server_key = write_pair(handler_pair, pki, "server")
    client_cert, client_key = write_pair(ca.issue(CLIENT_COMMON_NAME, client=True), pki, "client")
    with contextlib.suppress(AlreadyExistsError):
        kube.create(NAMESPACES, None, {"metadata": {"name": KUBEVIRT_NAMESPACE}})
    publish_ca(kube, ca.pair.cert_pem.decode())
    monkeypatch.setenv("POD_NAMESPACE", KUBEVIRT_NAMESPACE)
    # The kernel-boot files are already in this launcher's reach (no disk container serves them here),
    # so virt-handler has nothing to mount before it syncs.
    monkeypatch.setattr(mounter, "mount_requests", lambda _vmi: [])

    # The launcher pod, its emptyDirs laid out as the kubelet does, for a VMI scheduled to this node.
    spec = make_vmi("console")["spec"]
    created = scheduled_vmi(kube, namespace, spec)
    empty_dirs = pod_dirs / POD_UID / "volumes" / "kubernetes.io~empty-dir"
    (empty_dirs / "private").mkdir(parents=True)
    vmi = {**make_vmi("console", uid=created["metadata"]["uid"]), "spec": spec}
    vmi["metadata"]["namespace"] = namespace
    pod = launcher_pods(vmi, share=empty_dirs, private=empty_dirs / "private")

    # virt-handler itself: it boots the guest through the launcher and serves the console server.
    port = free_port()
    options = app.Options(
        node_name=HANDLER_NODE,
        kubeconfig=str(apiserver.kubeconfig),
        pods_dir=pod_dirs,
        device_plugins_dir=tmp_path / "device-plugins",
        listen="127.0.0.1",
        console_server_port=port,
        tls_cert_file=server_cert,
        tls_key_file=server_key,
        share_dir=pod_dirs.parent / "share",  # short: a unix socket path
    )
    (tmp_path / "device-plugins").mkdir()
    handler = app.VirtHandler(options, KubeClient.from_kubeconfig(str(apiserver.kubeconfig)))
    running = threading.Thread(target=handler.run, daemon=True)
    running.start()
    endpoint = HandlerEndpoint(port, pki / "ca.crt", client_cert, client_key)
    workdir = tmp_path / "virt-api"
    workdir.mkdir()
    try:
        handler_status_is_written(wait_for_phase(kube, namespace, "console", "Running", BOOT_BUDGET))
        no_write_without_a_change(kube, namespace)
        pod.wait_for_serial("tick 1", BOOT_BUDGET)
        pki_dir = apiserver.directory / "pki"
        with running_aggregated_virt_api(apiserver.kubeconfig, pki_dir, workdir, endpoint):
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

            # virt-api unpauses only a VMI whose status says it is paused: virt-handler writes that.
            paused_condition = wait_for_condition(kube, namespace, "Paused", present=True)
            assert (paused_condition["reason"], paused_condition["message"]) == (
                "PausedByUser",
                "VMI was paused by user",
            )
            launcher_link = diagnose_launcher(client, namespace)
            assert launcher_link.status is Status.OK, launcher_link.message
            assert launcher_link.message.startswith(
                "Socket up, domain Paused (User); last domain event Modified"
            )
            assert launcher_link.evidence["socket"]["state"] == "Ready"
            unpaused = virtctl(apiserver, "unpause", "vmi", "console", "-n", namespace)
            assert (unpaused.exit_code, unpaused.stdout) == (0, "VMI console was scheduled to unpause\n")
            assert pod.status()[0] == "Running"
            wait_for_condition(kube, namespace, "Paused", present=False)
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
            screenshot_from_the_command_line(apiserver, namespace, tmp_path)
            vnc_from_the_command_line(apiserver, namespace)
    finally:
        handler.stop()
        running.join(30)
