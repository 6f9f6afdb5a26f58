"""Instance types on the installed KubeVirt: the operator's common-instancetypes bundle, a VM sized by
``u1.small`` with the ``linux`` preference, and what happens to a running VM when its instance type
changes.

One VM boots twice in this module. It starts on the bundle's u1.small (1 vCPU, 2Gi): the VMI spec, the
QEMU command line on the node and the guest itself (its user data prints ``nproc`` and ``MemTotal`` to
the serial console) show that size. It then moves to a namespaced instance type of the same size (no
restart needed), which is edited to 1Gi: as in KubeVirt the running VM stays pinned to the stored copy.
Asking for the edited version (clearing ``status.instancetypeRef.controllerRevisionRef``, KubeVirt's way
to take a newer version) makes the VM RestartRequired, and ``virtctl restart`` boots it with 1Gi.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from localcluster.handle import Cluster
from localcluster.layout import image_name
from localcluster.up import virtctl
from localcluster.vmis import wait_vmi_phase

from kubevirt.virt_operator.resource.common_instancetypes import cluster_instancetypes, cluster_preferences

VM = "it-vm"
NAMESPACED = "it-edit"
MARKER = "IT-SIZE"
RUNNING_TIMEOUT = 180.0
STEADY_SECONDS = 5.0
GIB_KB = 1024 * 1024
_REPORT = re.compile(rf"{MARKER} cpus=(\d+) memkb=(\d+)")

JSON = dict[str, Any]


def _vm_manifest() -> JSON:
    memory_kb = "$(awk '/MemTotal/{print $2}' /proc/meminfo)"
    user_data = f'#!/bin/sh\necho "{MARKER} cpus=$(nproc) memkb={memory_kb}"\n'
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": VM},
        "spec": {
            "runStrategy": "Always",
            "instancetype": {"kind": "VirtualMachineClusterInstancetype", "name": "u1.small"},
            "preference": {"kind": "VirtualMachineClusterPreference", "name": "linux"},
            "template": {
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "domain": {
                        # No bus: the preference picks virtio.
                        "devices": {
                            "autoattachPodInterface": False,
                            "disks": [{"name": "containerdisk"}, {"name": "cloudinitdisk"}],
                        }
                    },
                    "volumes": [
                        {
                            "name": "containerdisk",
                            "containerDisk": {"image": image_name("test-guest-container-disk")},
                        },
                        {"name": "cloudinitdisk", "cloudInitNoCloud": {"userData": user_data}},
                    ],
                }
            },
        },
    }


def _namespaced_instancetype(memory: str) -> JSON:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": NAMESPACED},
        "spec": {"cpu": {"guest": 1}, "memory": {"guest": memory}},
    }


@dataclass
class Guest:
    cluster: Cluster
    namespace: str

    def get(self, kind: str, name: str = VM) -> JSON:
        found = self.cluster.find(kind, name, self.namespace)
        assert found is not None, f"{kind} {name} not found"
        return found

    def vmi_running(self, not_uid: str | None = None) -> JSON:
        """Waits for a Running VMI (another one than ``not_uid``) and returns it."""
        return wait_vmi_phase(
            self.cluster, VM, self.namespace, timeout=RUNNING_TIMEOUT, other_than_uid=not_uid
        )

    def reported_size(self, vmi: JSON) -> tuple[int, int]:
        """The vCPUs and kB of memory the guest reports on its serial console."""
        pods = self.cluster.kubectl_json(
            "get", "pods", "-n", self.namespace, "-l", f"kubevirt.io/created-by={vmi['metadata']['uid']}"
        )["items"]
        assert isinstance(pods, list)
        assert len(pods) == 1, pods
        pod = pods[0]["metadata"]["name"]
        found: list[tuple[int, int]] = []

        def reported() -> bool:
            log = self.cluster.kubectl(
                "logs", "-n", self.namespace, pod, "-c", "guest-console-log", check=False
            ).stdout
            found[:] = [(int(cpus), int(kb)) for cpus, kb in _REPORT.findall(log)]
            return bool(found)

        self.cluster.wait_until("the guest reports its size", reported, timeout=RUNNING_TIMEOUT)
        return found[-1]

    def restart_required(self) -> JSON | None:
        for condition in (self.get("vm").get("status") or {}).get("conditions") or []:
            if condition["type"] == "RestartRequired":
                return dict(condition)
        return None


def _qemu_size(namespace: str) -> tuple[int, int]:
    """The vCPUs (``-smp``) and memory in KiB (``-m``: MiB, or ``size=<n>k``) on the node's QEMU
    command line."""
    found = subprocess.run(
        ["pgrep", "-f", f"guest={namespace}_{VM},"], capture_output=True, text=True, check=False
    ).stdout.split()
    assert len(found) == 1, found
    with open(f"/proc/{found[0]}/cmdline", "rb") as cmdline:
        args = cmdline.read().decode().split("\0")
    smp = args[args.index("-smp") + 1]
    memory = args[args.index("-m") + 1]
    if memory.isdigit():
        return int(smp.split(",")[0]), int(memory) * 1024
    size = re.search(r"size=(\d+)k", memory)
    assert size is not None, memory
    return int(smp.split(",")[0]), int(size.group(1))


@pytest.fixture(scope="module")
def guest(cluster: Cluster, kubevirt: float) -> Iterator[Guest]:
    namespace = f"ft-instancetypes-{time.monotonic_ns() % 100000}"
    cluster.fresh_namespace(namespace)
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(_vm_manifest()))
    try:
        yield Guest(cluster, namespace)
    finally:
        # The VM and its VMI go before the package's KubeVirt is uninstalled.
        cluster.kubectl(
            "delete", "vm", VM, "-n", namespace, "--ignore-not-found", "--wait=true", "--timeout=120s"
        )
        cluster.wait_until("the VMI is gone", lambda: cluster.find("vmi", VM, namespace) is None, timeout=120)
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def test_the_operator_installs_the_common_instancetypes_bundle(cluster: Cluster, kubevirt: float) -> None:
    listed = cluster.kubectl_json("get", "virtualmachineclusterinstancetypes")["items"]
    assert isinstance(listed, list)
    by_name = {item["metadata"]["name"]: item for item in listed}
    assert {obj["metadata"]["name"] for obj in cluster_instancetypes()} <= set(by_name)
    small = by_name["u1.small"]
    assert small["spec"] == {"cpu": {"guest": 1}, "memory": {"guest": "2Gi"}}
    labels = small["metadata"]["labels"]
    assert labels["app.kubernetes.io/managed-by"] == "virt-operator"
    assert labels["instancetype.kubevirt.io/vendor"] == "kubevirt.io"
    preferences = cluster.kubectl_json("get", "virtualmachineclusterpreferences")["items"]
    assert isinstance(preferences, list)
    names = {item["metadata"]["name"] for item in preferences}
    assert {obj["metadata"]["name"] for obj in cluster_preferences()} <= names


def test_a_vm_on_u1_small_runs_with_its_cpu_and_memory(guest: Guest) -> None:
    vmi = guest.vmi_running()
    domain = vmi["spec"]["domain"]
    cpu = domain["cpu"]
    assert cpu["sockets"] * cpu["cores"] * cpu["threads"] == 1
    assert domain["memory"]["guest"] == "2Gi"
    # The linux preference chose the disk bus.
    assert {disk["name"]: disk["disk"]["bus"] for disk in domain["devices"]["disks"]} == {
        "containerdisk": "virtio",
        "cloudinitdisk": "virtio",
    }
    status = guest.get("vm")["status"]
    assert status["instancetypeRef"]["kind"] == "VirtualMachineClusterInstancetype"
    assert status["instancetypeRef"]["name"] == "u1.small"
    assert status["instancetypeRef"]["controllerRevisionRef"]["name"]
    assert status["preferenceRef"]["name"] == "linux"
    assert _qemu_size(guest.namespace) == (1, 2 * GIB_KB)
    cpus, memory_kb = guest.reported_size(vmi)
    assert cpus == 1
    # The kernel keeps a little for itself: what the guest sees is a bit under its 2Gi.
    assert 1.75 * GIB_KB < memory_kb <= 2 * GIB_KB


def test_editing_the_namespaced_instancetype_leaves_the_running_vm_alone(guest: Guest) -> None:
    vmi = guest.vmi_running()
    guest.cluster.kubectl(
        "create", "-n", guest.namespace, "-f", "-", stdin=json.dumps(_namespaced_instancetype("2Gi"))
    )
    moved = {"spec": {"instancetype": {"kind": "VirtualMachineInstancetype", "name": NAMESPACED}}}
    guest.cluster.kubectl("patch", "vm", VM, "-n", guest.namespace, "--type=merge", "-p", json.dumps(moved))

    def recorded() -> bool:
        ref = (guest.get("vm").get("status") or {}).get("instancetypeRef") or {}
        return ref.get("name") == NAMESPACED and bool(ref.get("controllerRevisionRef"))

    guest.cluster.wait_until("the VM records the namespaced instance type", recorded)
    pinned = guest.get("vm")["status"]["instancetypeRef"]["controllerRevisionRef"]["name"]
    # Same size: KubeVirt takes this without a restart.
    assert guest.restart_required() is None

    edit = {"spec": {"memory": {"guest": "1Gi"}}}
    guest.cluster.kubectl(
        "patch",
        "virtualmachineinstancetype",
        NAMESPACED,
        "-n",
        guest.namespace,
        "--type=merge",
        "-p",
        json.dumps(edit),
    )
    # The VM stays on its stored copy and the VMI is untouched; there is nothing to restart for. An
    # absence has no event to wait for: the state is checked to hold for a few seconds.
    deadline = time.monotonic() + STEADY_SECONDS
    while time.monotonic() < deadline:
        assert guest.get("vm")["status"]["instancetypeRef"]["controllerRevisionRef"]["name"] == pinned
        assert guest.restart_required() is None
        now = guest.get("vmi")
        assert now["metadata"]["uid"] == vmi["metadata"]["uid"]
        assert now["spec"]["domain"]["memory"]["guest"] == "2Gi"


def test_taking_the_edited_version_needs_a_restart_which_applies_it(guest: Guest) -> None:
    before = guest.vmi_running()
    pinned = guest.get("vm")["status"]["instancetypeRef"]["controllerRevisionRef"]["name"]
    clear = [{"op": "remove", "path": "/status/instancetypeRef/controllerRevisionRef"}]
    guest.cluster.kubectl(
        "patch",
        "vm",
        VM,
        "-n",
        guest.namespace,
        "--subresource=status",
        "--type=json",
        "-p",
        json.dumps(clear),
    )

    def restart_required() -> bool:
        ref = (guest.get("vm").get("status") or {}).get("instancetypeRef") or {}
        stored = (ref.get("controllerRevisionRef") or {}).get("name")
        return stored not in (None, pinned) and guest.restart_required() is not None

    guest.cluster.wait_until("the VM is RestartRequired", restart_required, timeout=60)
    condition = guest.restart_required()
    assert condition is not None
    assert condition["status"] == "True"
    # KubeVirt's words depend on whether the VMI could take memory live; less than it booted with, never.
    assert condition["message"].startswith("memory updated in template spec")
    running = guest.get("vmi")
    assert running["metadata"]["uid"] == before["metadata"]["uid"]
    assert running["spec"]["domain"]["memory"]["guest"] == "2Gi"

    restarted = virtctl(guest.cluster, "restart", VM, "-n", guest.namespace)
    assert restarted.returncode == 0, restarted.stderr
    vmi = guest.vmi_running(not_uid=before["metadata"]["uid"])
    assert vmi["spec"]["domain"]["memory"]["guest"] == "1Gi"
    assert _qemu_size(guest.namespace) == (1, GIB_KB)
    cpus, memory_kb = guest.reported_size(vmi)
    assert cpus == 1
    assert 0.75 * GIB_KB < memory_kb <= GIB_KB
    guest.cluster.wait_until(
        "RestartRequired is cleared", lambda: guest.restart_required() is None, timeout=60
    )


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
EXAMPLE_OBJECTS = (
    "instancetype-small.yaml",
    "instancetype-large.yaml",
    "preference-virtio.yaml",
    "preference-windows.yaml",
)
EXAMPLE_CLUSTER_OBJECTS = ("clusterinstancetype-small.yaml",)


def test_the_instancetype_examples_are_admitted_by_virt_api(
    cluster: Cluster, kubevirt: float, namespace: str
) -> None:
    """Every example VM that selects an instance type passes virt-api's webhooks (server-side dry run)
    once the instance types and preferences it names exist."""
    vms = sorted(EXAMPLES.glob("vm-cirros-*.yaml"))
    assert len(vms) == 5
    for name in EXAMPLE_OBJECTS:
        cluster.kubectl("create", "-n", namespace, "-f", str(EXAMPLES / name))
    try:
        for name in EXAMPLE_CLUSTER_OBJECTS:
            cluster.kubectl("create", "-f", str(EXAMPLES / name))
        for vm in vms:
            admitted = cluster.kubectl(
                "create", "--dry-run=server", "-n", namespace, "-f", str(vm), check=False
            )
            assert admitted.returncode == 0, f"{vm.name}: {admitted.stderr.strip()}"
    finally:
        for name in EXAMPLE_CLUSTER_OBJECTS:
            cluster.kubectl("delete", "--ignore-not-found", "-f", str(EXAMPLES / name), check=False)
