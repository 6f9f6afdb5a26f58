"""The main job on a running cluster: KubeVirt installed through virt-operator, then an example VM
started and Running, with the commands that reach its console and display."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import yaml

from . import install, vmis
from .handle import Cluster
from .layout import REPO, Layout
from .timing import say

DEFAULT_VM = REPO / "examples" / "vm-test-guest.yaml"
VM_NAMESPACE = "default"


def virtctl_path() -> Path:
    """This environment's virtctl (the project's virtualenv is not on a fresh shell's PATH)."""
    return Path(sys.executable).with_name("virtctl")


def virtctl(cluster: Cluster, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """virtctl of this environment against the cluster."""
    command = [str(virtctl_path()), "--kubeconfig", str(cluster.kubeconfig), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=timeout)


def start_vm(
    cluster: Cluster, manifest: Path, *, namespace: str = VM_NAMESPACE, timeout: float = 300.0
) -> str:
    """Creates the VM of ``manifest`` (or keeps an existing one), starts it with ``virtctl start`` (virt-api's
    start subresource) and waits until its VMI is Running; returns its name."""
    (vm,) = [d for d in yaml.safe_load_all(manifest.read_text()) if isinstance(d, dict)]
    name = str(vm["metadata"]["name"])
    if cluster.find("vm", name, namespace) is None:
        cluster.kubectl("create", "-n", namespace, "-f", str(manifest))
    if cluster.find("vmi", name, namespace) is None:
        started = virtctl(cluster, "start", name, "-n", namespace)
        if started.returncode != 0:
            raise RuntimeError(f"virtctl start {name}: {started.stderr.strip()}")
    vmis.wait_vmi_phase(cluster, name, namespace, vmis.RUNNING, timeout=timeout, progress=say)
    return name


def _pod_network_address(cluster: Cluster, name: str, namespace: str = VM_NAMESPACE) -> str:
    """The first address the VMI reports on its interfaces, or '' (no pod network, or not reported yet)."""
    vmi = cluster.find("vmi", name, namespace) or {}
    for interface in vmi.get("status", {}).get("interfaces", []):
        if address := interface.get("ipAddress"):
            return str(address)
    return ""


def run(layout: Layout, manifest: Path) -> int:
    cluster = Cluster(layout)
    began = time.monotonic()
    try:
        say("applying manifests/release/kubevirt-operator.yaml")
        install.install_operator(cluster)
        say("creating the KubeVirt CR (useEmulation: true)")
        install.create_kubevirt(cluster, install.kubevirt_cr())
        say("waiting for KubeVirt to be Deployed")
        deployed = install.wait_deployed(cluster, progress=say)
        say(f"KubeVirt Deployed in {deployed:.0f} s")
        say(f"starting {manifest.relative_to(REPO) if manifest.is_relative_to(REPO) else manifest}")
        name = start_vm(cluster, manifest)
    except (RuntimeError, AssertionError) as error:
        print(f"hack/up failed: {error}", file=sys.stderr)
        return 1
    command = f"{virtctl_path()} --kubeconfig {layout.admin_kubeconfig}"  # runs as printed, from anywhere
    say(f"VM {name} is Running ({time.monotonic() - began:.0f} s since the operator was applied)")
    say(f"  serial console: {command} console {name}")
    say(f"  VNC:            {command} vnc {name}")
    if address := _pod_network_address(cluster, name):
        say(f"  pod network:    curl http://{address}/ answers once the guest has booted")
    say("  hack/down stops everything")
    return 0
