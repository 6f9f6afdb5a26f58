"""The virt-operator binary, as its Deployment runs it: killed with SIGKILL in the middle of an install,
a new process takes the Lease over once it expires and converges; SIGTERM stops it cleanly."""

from __future__ import annotations

import shutil
import signal
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from kubevirt.client import KubeClient
from kubevirt_testing.operator import IMAGE, NS, condition, create_kubevirt, deployed, eventually, kubevirt
from kubevirt_testing.process import free_port, terminate

pytestmark = pytest.mark.integration


def start_operator(kubeconfig: Path, log_file: Path, port: int) -> subprocess.Popen[bytes]:
    exe = shutil.which("virt-operator") or shutil.which(
        "virt-operator", path=str(Path(sys.executable).parent)
    )
    assert exe, "virt-operator is not installed"
    argv = [
        exe,
        f"--kubeconfig={kubeconfig}",
        f"--namespace={NS}",
        "--listen=127.0.0.1",
        f"--port={port}",
        f"--operator-image={IMAGE}",
        "--leader-elect-lease-duration=4s",
        "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=500ms",
    ]
    with log_file.open("wb") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


def healthz(port: int) -> int:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the operator's probe certificate is its own, as kubelets accept
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=context, timeout=5) as answer:
        return int(answer.status)


def test_a_killed_operator_is_replaced_and_the_install_converges(
    kube: KubeClient, operator_kubeconfig: Path, tmp_path: Path
) -> None:
    first = start_operator(operator_kubeconfig, tmp_path / "first.log", free_port())
    try:
        create_kubevirt(kube)
        # The first sync adds the finalizer before it creates anything: kill it right then.
        eventually(
            "the install starts",
            lambda: (
                "foregroundDeleteKubeVirt" in (kubevirt(kube) or {}).get("metadata", {}).get("finalizers", [])
            ),
        )
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
    port = free_port()
    second = start_operator(operator_kubeconfig, tmp_path / "second.log", port)
    try:
        eventually("the probe port answers", lambda: _answers(port), timeout=30)
        eventually(
            "the successor completes the install",
            lambda: condition(kubevirt(kube), "Created").get("status") == "True",
            timeout=60,
        )
        deployed(kube)
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=20) == 0
    finally:
        terminate(second)
        print((tmp_path / "second.log").read_text()[-3000:])


def _answers(port: int) -> bool:
    try:
        return healthz(port) == 200
    except OSError:
        return False
