"""Every lifecycle and access command of virtctl, end to end on the cluster, against one booted test guest:
virtctl (the command, as a process) and raw calls through ``kubectl get --raw`` / ``kubectl replace --raw``
(a PUT) reach virt-api through the API server's aggregator, then virt-handler, then the guest. Statuses and
messages are KubeVirt v1.6's. The tests run in file order and leave the VM as the next one expects it.
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from localcluster.handle import Cluster
from localcluster.layout import REPO
from localcluster.testguest import BOOT_MARKER
from localcluster.up import start_vm, virtctl
from localcluster.vmis import wait_vmi_phase

MANIFEST = REPO / "examples" / "vm-test-guest-no-network.yaml"
BOOT_TIMEOUT = 180.0
SUBRESOURCES = "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/{resource}/{name}/{sub}"
CTRL_BRACKET = bytes([29])
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Guest:
    namespace: str
    name: str


@pytest.fixture(scope="module")
def guest(cluster: Cluster, kubevirt: float) -> Iterator[Guest]:
    """The test guest's VM, started with ``virtctl start`` and Running; shared by the module's tests."""
    namespace = f"ft-virtctl-{os.getpid() % 10000}"
    cluster.fresh_namespace(namespace)
    try:
        name = start_vm(cluster, MANIFEST, namespace=namespace, timeout=BOOT_TIMEOUT)
        yield Guest(namespace, name)
    finally:
        # Waited for: the VMI must be gone before the package's KubeVirt is uninstalled.
        cluster.kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=180s", check=False)


def _virtctl(cluster: Cluster, guest: Guest, *args: str) -> subprocess.CompletedProcess[str]:
    return virtctl(cluster, *args, "-n", guest.namespace)


def _path(guest: Guest, resource: str, sub: str) -> str:
    return SUBRESOURCES.format(namespace=guest.namespace, resource=resource, name=guest.name, sub=sub)


def _raw_get(cluster: Cluster, path: str, *as_user: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*cluster.layout.kubectl(), *as_user, "get", "--raw", path],
        capture_output=True,
        check=False,
        timeout=60,
    )


@pytest.fixture(scope="module")
def proxy(cluster: Cluster) -> Iterator[str]:
    """``kubectl proxy`` on a free port: raw requests through the API server with the admin's credentials."""
    process = subprocess.Popen(
        [*cluster.layout.kubectl(), "proxy", "--port=0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        served = re.search(r"127\.0\.0\.1:(\d+)", process.stdout.readline())
        assert served, "kubectl proxy printed no address"
        yield f"http://127.0.0.1:{served.group(1)}"
    finally:
        process.terminate()
        process.wait(10)


def _raw_request(proxy: str, path: str, method: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """A request through ``kubectl proxy``: the HTTP status and the body (JSON when it is JSON)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        proxy + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            code, text = response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        code, text = err.code, err.read().decode()
    try:
        return code, json.loads(text) if text else ""
    except ValueError:
        return code, text


def _raw_put(proxy: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    return _raw_request(proxy, path, "PUT", body)


def _conflict(kind: str, name: str, message: str) -> dict[str, Any]:
    """KubeVirt's 409 ``Status`` (the fields a client reads)."""
    return {
        "kind": "Status",
        "code": 409,
        "reason": "Conflict",
        "message": f'Operation cannot be fulfilled on {kind}.kubevirt.io "{name}": {message}',
    }


def _status_fields(body: Any) -> dict[str, Any]:
    assert isinstance(body, dict), body
    return {key: body.get(key) for key in ("kind", "code", "reason", "message")}


def _vmi(cluster: Cluster, guest: Guest) -> dict[str, Any]:
    return cluster.find("vmi", guest.name, guest.namespace) or {}


def _condition(cluster: Cluster, guest: Guest, kind: str) -> dict[str, Any] | None:
    conditions = (_vmi(cluster, guest).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def _running_vmi_uid(cluster: Cluster, guest: Guest) -> str:
    vmi = _vmi(cluster, guest)
    return str(vmi["metadata"]["uid"]) if (vmi.get("status") or {}).get("phase") == "Running" else ""


class ConsoleSession:
    """``virtctl console`` as a process with pipes: what the guest printed, and keys to send."""

    def __init__(self, cluster: Cluster, guest: Guest, *, kubeconfig: Path | None = None) -> None:
        exe = Path(sys.executable).with_name("virtctl")
        config = kubeconfig or cluster.kubeconfig
        self.process = subprocess.Popen(
            [str(exe), "--kubeconfig", str(config), "console", guest.name, "-n", guest.namespace],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._output = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        while chunk := os.read(self.process.stdout.fileno(), 4096):
            with self._lock:
                self._output.extend(chunk)

    def text(self) -> str:
        with self._lock:
            return self._output.decode(errors="replace")

    def send(self, keys: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(keys)
        self.process.stdin.flush()

    def wait_for(self, pattern: str, timeout: float = 30.0, *, since: int = 0) -> None:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text()[since:]):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError(f"console: no {pattern!r} in {self.text()[-600:]!r}")
            time.sleep(0.2)

    def login(self) -> None:
        """A fresh prompt (the guest printed its last one before this session began), then root's shell:
        a login, unless an earlier session left the shell logged in."""
        mark = len(self.text())
        self.send(b"\r")
        self.wait_for(r"login: |# ", since=mark)
        if re.search(r"login: ", self.text()[mark:]):
            mark = len(self.text())
            self.send(b"root\r")
            self.wait_for(r"# ", since=mark)

    def leave(self) -> tuple[int, str]:
        """Ctrl+] ends the session; returns virtctl's exit code and what it printed on stderr."""
        self.send(CTRL_BRACKET)
        code = self.process.wait(20)
        assert self.process.stderr is not None
        return code, self.process.stderr.read().decode()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def console(cluster: Cluster, guest: Guest) -> Iterator[ConsoleSession]:
    session = ConsoleSession(cluster, guest)
    try:
        yield session
    finally:
        session.kill()


def test_version_names_client_and_server(cluster: Cluster, kubevirt: float) -> None:
    shown = virtctl(cluster, "version")
    assert shown.returncode == 0, shown.stderr
    assert re.match(
        r"Client Version: version\.Info\{GitVersion:.*\nServer Version: version\.Info\{", shown.stdout
    )
    raw = _raw_get(cluster, "/apis/subresources.kubevirt.io/v1/version")
    assert raw.returncode == 0, raw.stderr
    assert json.loads(raw.stdout)["gitVersion"]


def test_start_of_a_running_vm_is_refused_with_kubevirts_conflict(
    cluster: Cluster, guest: Guest, proxy: str
) -> None:
    started = _virtctl(cluster, guest, "start", guest.name)
    assert started.returncode == 1
    assert "VM is already running" in started.stderr
    code, body = _raw_put(proxy, _path(guest, "virtualmachines", "start"), {})
    assert code == 409
    assert _status_fields(body) == _conflict("virtualmachine", guest.name, "VM is already running")


def test_console_shows_the_login_prompt_and_runs_a_command(cluster: Cluster, console: ConsoleSession) -> None:
    console.login()
    mark = len(console.text())
    console.send(b"echo kv-$((6*7))\r")
    console.wait_for(r"kv-42", since=mark)
    code, stderr = console.leave()
    assert code == 0
    assert stderr.startswith("Successfully connected to vm-test-guest console.")


def test_pause_stops_the_guest_and_unpause_resumes_it(
    cluster: Cluster, guest: Guest, console: ConsoleSession, proxy: str
) -> None:
    console.login()
    paused = _virtctl(cluster, guest, "pause", "vmi", guest.name)
    assert (paused.returncode, paused.stdout) == (0, f"VMI {guest.name} was scheduled to pause\n"), (
        paused.stderr
    )
    cluster.wait_until("the Paused condition", lambda: _condition(cluster, guest, "Paused") is not None, 30)
    condition = _condition(cluster, guest, "Paused") or {}
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True",
        "PausedByUser",
        "VMI was paused by user",
    )
    assert _vmi(cluster, guest)["status"]["phase"] == "Running"  # KubeVirt keeps the phase

    # A paused guest echoes nothing, not even the keys typed.
    mark = len(console.text())
    console.send(b"echo kv-$((6*7))\r")
    time.sleep(3)
    assert "kv-" not in console.text()[mark:]

    # KubeVirt's refusals, as raw PUTs: pausing again, and a soft reboot of a paused VMI.
    code, body = _raw_put(proxy, _path(guest, "virtualmachineinstances", "pause"), {})
    assert code == 409
    assert _status_fields(body) == _conflict("virtualmachineinstance", guest.name, "VMI is already paused")
    code, body = _raw_put(proxy, _path(guest, "virtualmachineinstances", "softreboot"), {})
    assert code == 409
    assert _status_fields(body) == _conflict("virtualmachineinstance", guest.name, "VMI is paused")
    reboot = _virtctl(cluster, guest, "soft-reboot", guest.name)
    assert reboot.returncode == 1
    assert "VMI is paused" in reboot.stderr

    unpaused = _virtctl(cluster, guest, "unpause", "vm", guest.name)
    assert (unpaused.returncode, unpaused.stdout) == (0, f"VMI {guest.name} was scheduled to unpause\n")
    cluster.wait_until("no Paused condition", lambda: _condition(cluster, guest, "Paused") is None, 30)
    mark = len(console.text())
    console.send(b"echo kv-$((7*8))\r")
    console.wait_for(r"kv-56", since=mark)

    twice = _virtctl(cluster, guest, "unpause", "vmi", guest.name)
    assert twice.returncode == 1
    assert "VMI is not paused" in twice.stderr
    code, body = _raw_put(proxy, _path(guest, "virtualmachineinstances", "unpause"), {})
    assert code == 409
    assert _status_fields(body) == _conflict("virtualmachineinstance", guest.name, "VMI is not paused")


def _png_size(png: bytes) -> tuple[int, int]:
    assert png.startswith(PNG_SIGNATURE), png[:40]
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def test_vnc_screenshot_through_virtctl_and_the_raw_subresource(
    cluster: Cluster, guest: Guest, tmp_path: Path
) -> None:
    target = tmp_path / "screen.png"
    shot = _virtctl(cluster, guest, "vnc", "screenshot", guest.name, "--file", str(target))
    assert shot.returncode == 0, shot.stderr
    width, height = _png_size(target.read_bytes())
    assert 320 <= width <= 4096
    assert 200 <= height <= 4096
    raw = _raw_get(cluster, _path(guest, "virtualmachineinstances", "vnc/screenshot"))
    assert raw.returncode == 0, raw.stderr
    assert _png_size(raw.stdout) == (width, height)


def test_vnc_proxy_only_relays_the_guests_vnc_server(cluster: Cluster, guest: Guest) -> None:
    """``virtctl vnc --proxy-only`` prints its port; a viewer connecting there meets QEMU's VNC server."""
    exe = Path(sys.executable).with_name("virtctl")
    command = [str(exe), "--kubeconfig", str(cluster.kubeconfig), "vnc", guest.name, "-n", guest.namespace]
    process = subprocess.Popen(
        [*command, "--proxy-only"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        announced = json.loads(process.stdout.readline())
        with socket.create_connection(("127.0.0.1", announced["port"]), timeout=30) as viewer:
            banner = b""
            while len(banner) < 12 and (chunk := viewer.recv(12 - len(banner))):
                banner += chunk
        assert banner == b"RFB 003.008\n"
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_guest_agent_reads_fail_with_500_without_an_agent(cluster: Cluster, guest: Guest, proxy: str) -> None:
    """KubeVirt answers these GETs 500 whatever went wrong, with the conflict's message."""
    message = f'virtualmachineinstance.kubevirt.io "{guest.name}": VMI does not have guest agent connected'
    for sub in ("guestosinfo", "userlist", "filesystemlist"):
        path = _path(guest, "virtualmachineinstances", sub)
        raw = _raw_get(cluster, path)
        assert raw.returncode == 1
        stderr = raw.stderr.decode()
        assert "InternalError" in stderr, stderr
        assert "VMI does not have guest agent connected" in stderr, stderr
        code, body = _raw_request(proxy, path, "GET")
        assert code == 500
        assert f"Operation cannot be fulfilled on {message}" in str(body), body
    for command in ("guestosinfo", "userlist", "fslist"):
        read = _virtctl(cluster, guest, command, guest.name)
        assert read.returncode == 1
        assert "VMI does not have guest agent connected" in read.stderr


def test_soft_reboot_without_an_agent_presses_the_acpi_power_button(
    cluster: Cluster, guest: Guest, console: ConsoleSession
) -> None:
    """No guest agent, ACPI on (KubeVirt's default): libvirt presses the power button, the guest powers off
    and libvirt resets it; the VMI stays the same, Running, and the guest boots again."""
    console.login()
    uid = _running_vmi_uid(cluster, guest)
    mark = len(console.text())
    rebooted = _virtctl(cluster, guest, "soft-reboot", guest.name)
    assert rebooted.returncode == 0, rebooted.stderr
    assert rebooted.stdout == f"VMI {guest.name} was scheduled to soft-reboot\n"
    console.wait_for(r"power button pressed", 30, since=mark)
    console.wait_for(BOOT_MARKER, BOOT_TIMEOUT, since=mark)
    console.wait_for(r"login: ", 60, since=mark)
    assert _running_vmi_uid(cluster, guest) == uid


def _token_kubeconfig(cluster: Cluster, namespace: str, account: str, directory: Path) -> Path:
    """A kubeconfig that authenticates as the ServiceAccount ``account`` (a short-lived token)."""
    token = cluster.kubectl("create", "token", account, "-n", namespace, "--duration=10m").stdout.strip()
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    (entry,) = admin["clusters"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": entry["cluster"]}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": account, "context": {"cluster": "local", "user": account}}],
        "current-context": account,
    }
    path = directory / f"{account}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def _bound_account(cluster: Cluster, namespace: str, account: str, role: str) -> None:
    cluster.kubectl("create", "serviceaccount", account, "-n", namespace)
    cluster.kubectl(
        "create",
        "rolebinding",
        account,
        f"--clusterrole={role}",
        f"--serviceaccount={namespace}:{account}",
        "-n",
        namespace,
    )


def test_a_viewer_is_refused_start_and_console_an_editor_is_allowed(
    cluster: Cluster, guest: Guest, tmp_path: Path
) -> None:
    _bound_account(cluster, guest.namespace, "viewer", "kubevirt.io:view")
    _bound_account(cluster, guest.namespace, "editor", "kubevirt.io:edit")
    viewer = _token_kubeconfig(cluster, guest.namespace, "viewer", tmp_path)
    editor = _token_kubeconfig(cluster, guest.namespace, "editor", tmp_path)

    def as_user(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(Path(sys.executable).with_name("virtctl")), "--kubeconfig", str(config), *args]
        return subprocess.run(
            [*command, "-n", guest.namespace], capture_output=True, text=True, check=False, timeout=60
        )

    refused = as_user(viewer, "start", guest.name)
    assert refused.returncode == 1
    assert 'cannot update resource "virtualmachines/start"' in refused.stderr, refused.stderr
    console_refused = as_user(viewer, "console", guest.name, "--timeout", "1")
    assert console_refused.returncode == 1
    assert "403" in console_refused.stderr or "forbidden" in console_refused.stderr, console_refused.stderr
    # The same user impersonated by kubectl: the API server refuses what the role lacks (VNC) before
    # virt-api is asked, and passes what it grants (the guest-agent reads) on to virt-api.
    viewer_user = f"--as=system:serviceaccount:{guest.namespace}:viewer"
    screen = _raw_get(cluster, _path(guest, "virtualmachineinstances", "vnc/screenshot"), viewer_user)
    assert screen.returncode == 1
    assert 'cannot get resource "virtualmachineinstances/vnc"' in screen.stderr.decode(), screen.stderr
    agent = _raw_get(cluster, _path(guest, "virtualmachineinstances", "guestosinfo"), viewer_user)
    assert agent.returncode == 1
    assert "VMI does not have guest agent connected" in agent.stderr.decode(), agent.stderr

    # The editor passes authorization: start meets the VM's state, the console the guest.
    allowed = as_user(editor, "start", guest.name)
    assert allowed.returncode == 1
    assert "VM is already running" in allowed.stderr, allowed.stderr
    session = ConsoleSession(cluster, guest, kubeconfig=editor)
    try:
        session.login()
        assert session.leave()[0] == 0
    finally:
        session.kill()


def test_restart_gives_a_new_vmi_and_a_raw_stop_halts_the_vm(
    cluster: Cluster, guest: Guest, proxy: str
) -> None:
    before = _running_vmi_uid(cluster, guest)
    assert before
    restarted = _virtctl(cluster, guest, "restart", guest.name)
    assert (restarted.returncode, restarted.stdout) == (0, f"VM {guest.name} was scheduled to restart\n")
    wait_vmi_phase(cluster, guest.name, guest.namespace, timeout=BOOT_TIMEOUT, other_than_uid=before)

    code, body = _raw_put(proxy, _path(guest, "virtualmachines", "stop"), {})
    assert (code, body) == (202, "")
    vm = cluster.find("vm", guest.name, guest.namespace) or {}
    assert vm["spec"]["runStrategy"] == "Halted"
    cluster.wait_until("the VMI gone", lambda: not _vmi(cluster, guest), 120)

    def stopped_status() -> bool:
        vm = cluster.find("vm", guest.name, guest.namespace) or {}
        return bool(vm.get("status", {}).get("printableStatus") == "Stopped")

    cluster.wait_until("the VM Stopped", stopped_status, 60)

    again = _virtctl(cluster, guest, "stop", guest.name)
    assert again.returncode == 1
    assert "VM is not running" in again.stderr
    halted = _virtctl(cluster, guest, "restart", guest.name)
    assert halted.returncode == 1
    assert "RunStategy Halted does not support manual restart requests" in halted.stderr
    code, body = _raw_put(proxy, _path(guest, "virtualmachines", "stop"), {})
    assert code == 409
    assert _status_fields(body) == _conflict("virtualmachine", guest.name, "VM is not running")
