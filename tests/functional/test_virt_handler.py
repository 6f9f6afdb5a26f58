"""virt-handler in the cluster: its DaemonSet's pod labels the node schedulable, keeps the heartbeat
annotation fresh, and its device plugins give the node the ``devices.kubevirt.io/*`` resources that
launcher pods request (``vhost-net`` without allocatable devices where the host has no /dev/vhost-net).
With virt-controller beside it, a VMI's launcher pod starts QEMU through the handler's sync and the VMI
turns Running; deleting the VMI takes the pod and QEMU away. The test guest boots from its containerDisk
(mounted into the launcher pod by the handler) with NoCloud user data, which its console log shows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from localcluster import kubevirt
from localcluster.handle import Cluster
from localcluster.testguest import BOOT_MARKER
from localcluster.vmis import wait_vmi_phase

from kubevirt.virt_operator.resource.daemonset import handler_daemonset
from kubevirt.virt_operator.resource.rbac import controller_rbac, handler_rbac

LAUNCHER = "localhost/kubevirt/virt-launcher:devel"


@pytest.fixture(scope="module")
def virt_handler(cluster: Cluster) -> Iterator[str]:
    daemonset = handler_daemonset(kubevirt.INSTALL_NAMESPACE, cluster.image(kubevirt.VIRT_HANDLER))
    kubevirt.deploy_virt_handler(cluster, rbac=handler_rbac(kubevirt.INSTALL_NAMESPACE), daemonset=daemonset)
    yield kubevirt.node_name(cluster)
    kubevirt.remove_virt_handler(cluster)


def _node(cluster: Cluster, name: str) -> dict[str, Any]:
    node = cluster.kubectl_json("get", "node", name)
    assert isinstance(node, dict)
    return node


def test_the_node_is_labelled_schedulable_with_a_heartbeat(cluster: Cluster, virt_handler: str) -> None:
    def labelled() -> bool:
        metadata = _node(cluster, virt_handler)["metadata"]
        return metadata.get("labels", {}).get(
            "kubevirt.io/schedulable"
        ) == "true" and "kubevirt.io/heartbeat" in metadata.get("annotations", {})

    cluster.wait_until("the node is labelled schedulable with a heartbeat", labelled)


def _count(quantity: str) -> int:
    """A resource quantity of whole devices ("1000" or the kubelet's "1k")."""
    return int(quantity[:-1]) * 1000 if quantity.endswith("k") else int(quantity)


def test_device_plugins_advertise_the_host_devices(cluster: Cluster, virt_handler: str) -> None:
    def advertised() -> bool:
        status = _node(cluster, virt_handler)["status"]
        return _count(status.get("allocatable", {}).get("devices.kubevirt.io/tun", "0")) == 1000

    cluster.wait_until("devices.kubevirt.io/tun is allocatable", advertised)
    status = _node(cluster, virt_handler)["status"]
    assert _count(status["capacity"]["devices.kubevirt.io/vhost-net"]) == 1000
    assert _count(status["allocatable"]["devices.kubevirt.io/vhost-net"]) == 0


@pytest.fixture(scope="module")
def virt_controller(cluster: Cluster, crds: list[str], virt_handler: str) -> Iterator[None]:
    kubevirt.apply_emulation_config(cluster)
    kubevirt.deploy_virt_controller(
        cluster, rbac=controller_rbac(kubevirt.INSTALL_NAMESPACE), launcher_image=LAUNCHER, replicas=1
    )
    yield
    kubevirt.remove_virt_controller(cluster)
    kubevirt.remove_emulation_config(cluster)


def _qemu_of(namespace: str, name: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", f"guest={namespace}_{name},"], capture_output=True, text=True)
    return found.stdout.split()


def test_a_vmi_runs_on_the_node_and_stops_when_deleted(
    cluster: Cluster, virt_controller: None, virt_handler: str, namespace: str
) -> None:
    # No disk: QEMU runs its firmware, which is all this test needs from a guest.
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "bare"},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "domain": {"resources": {"requests": {"memory": "128Mi"}}, "devices": {}},
        },
    }
    cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(vmi))
    status = wait_vmi_phase(cluster, "bare", namespace, timeout=180)["status"]
    assert status["nodeName"] == virt_handler
    assert [p["phase"] for p in status["phaseTransitionTimestamps"]][-2:] == ["Scheduled", "Running"]
    assert len(_qemu_of(namespace, "bare")) == 1

    cluster.kubectl("delete", "vmi", "bare", "-n", namespace, "--wait=true")
    cluster.wait_until(
        "the launcher pod is gone",
        lambda: not cluster.kubectl_json("get", "pods", "-n", namespace)["items"],
        timeout=120,
    )
    assert _qemu_of(namespace, "bare") == []


TEST_GUEST_DISK = "localhost/kubevirt/test-guest-container-disk:devel"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _mounts_in_pod_volumes() -> list[str]:
    """Mount points the handler made in launcher pods' container-disks volumes (seen from the host)."""
    return [
        line.split()[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if "/volumes/kubernetes.io~empty-dir/container-disks/" in line.split()[4]
    ]


@pytest.fixture(scope="module")
def booted_guest(
    cluster: Cluster, virt_controller: None, virt_handler: str, crds: list[str]
) -> Iterator[tuple[str, str, str]]:
    """One VMI booting the test guest from its containerDisk with NoCloud user data; (namespace, name,
    marker). One guest for the whole module: boots are the expensive part."""
    namespace = f"ft-boot-{os.getpid() % 10000}"
    cluster.kubectl("create", "namespace", namespace)
    marker = f"USER-DATA-RAN-{uuid.uuid4().hex[:8]}"
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "guest"},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "domain": {
                "resources": {"requests": {"memory": "128Mi"}},
                "devices": {
                    "disks": [
                        {"name": "rootdisk", "disk": {"bus": "virtio"}},
                        {"name": "cloudinitdisk", "disk": {"bus": "virtio"}},
                    ]
                },
            },
            "volumes": [
                {"name": "rootdisk", "containerDisk": {"image": TEST_GUEST_DISK}},
                {"name": "cloudinitdisk", "cloudInitNoCloud": {"userData": f"#!/bin/sh\necho {marker}\n"}},
            ],
        },
    }
    cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(vmi))
    try:
        yield namespace, "guest", marker
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def _vmi(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    return cluster.find("vmi", name, namespace) or {}


def test_a_container_disk_guest_boots_to_running_with_its_status_set(
    cluster: Cluster, booted_guest: tuple[str, str, str], virt_handler: str
) -> None:
    namespace, name, _ = booted_guest

    def running_and_ready() -> bool:
        status = _vmi(cluster, namespace, name).get("status") or {}
        ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
        return status.get("phase") == "Running" and bool(ready) and ready[0]["status"] == "True"

    cluster.wait_until("the VMI is Running and Ready", running_and_ready, timeout=240)
    status = _vmi(cluster, namespace, name)["status"]
    assert status["nodeName"] == virt_handler
    assert [p["phase"] for p in status["phaseTransitionTimestamps"]][-2:] == ["Scheduled", "Running"]
    assert status.get("launcherContainerImageVersion") == LAUNCHER
    assert status.get("qosClass") in ("Burstable", "Guaranteed")
    assert (status.get("machine") or {}).get("type", "").startswith("pc-q35")
    assert len(_qemu_of(namespace, name)) == 1
    # The image is bind-mounted read-only into the launcher pod, backing the guest's overlay.
    mounts = _mounts_in_pod_volumes()
    assert [m for m in mounts if m.endswith("/container-disks/disk_0.img")], mounts


def test_the_console_log_shows_the_user_data_marker(
    cluster: Cluster, booted_guest: tuple[str, str, str]
) -> None:
    namespace, name, marker = booted_guest
    pod = _launcher_pod(cluster, namespace, name)

    def logged() -> bool:
        result = cluster.kubectl("logs", "-n", namespace, pod, "-c", "guest-console-log", check=False)
        return marker in result.stdout and BOOT_MARKER in result.stdout

    cluster.wait_until("the guest's console log shows the user data's marker", logged, timeout=120)


def test_deleting_the_vmi_leaves_no_pod_domain_or_mount(
    cluster: Cluster, booted_guest: tuple[str, str, str]
) -> None:
    namespace, name, _ = booted_guest
    wait_vmi_phase(cluster, name, namespace, timeout=240)
    cluster.kubectl("delete", "vmi", name, "-n", namespace, "--wait=true", "--timeout=120s")
    cluster.wait_until(
        "the launcher pod is gone",
        lambda: not cluster.kubectl_json("get", "pods", "-n", namespace)["items"],
        timeout=120,
    )
    assert _qemu_of(namespace, name) == []
    assert _mounts_in_pod_volumes() == []


def _launcher_pod(cluster: Cluster, namespace: str, name: str) -> str:
    pods = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", f"vm.kubevirt.io/name={name}")["items"]
    assert isinstance(pods, list)
    assert len(pods) == 1, pods
    return str(pods[0]["metadata"]["name"])


def _pids(pattern: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False)
    return [int(pid) for pid in found.stdout.split()]


def test_a_killed_handler_picks_the_vmi_up_and_a_killed_launcher_fails_it(
    cluster: Cluster, virt_controller: None, virt_handler: str, namespace: str
) -> None:
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "crash"},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "domain": {
                "resources": {"requests": {"memory": "128Mi"}},
                "devices": {"disks": [{"name": "rootdisk", "disk": {"bus": "virtio"}}]},
            },
            "volumes": [{"name": "rootdisk", "containerDisk": {"image": TEST_GUEST_DISK}}],
        },
    }
    handlers = _pids("bin/virt-handler --port")
    assert len(handlers) == 1
    cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(vmi))
    # Once the kubelet admitted the launcher pod: while the handler is down its device plugins are too, and
    # the kubelet refuses a pod that asks for their devices then (UnexpectedAdmissionError).
    wait_vmi_phase(cluster, "crash", namespace, "Scheduled", "Running", timeout=120)
    os.kill(handlers[0], signal.SIGKILL)
    # The VMI may have reached Running before the kill, so its phase alone does not show the restarted
    # handler: wait for the kubelet to start one (after its restart back-off).
    cluster.wait_until(
        "the kubelet restarted virt-handler",
        lambda: _pids("bin/virt-handler --port") not in ([], handlers),
        timeout=120,
    )
    wait_vmi_phase(cluster, "crash", namespace, timeout=240)  # the restarted handler's work
    phases = [p["phase"] for p in _vmi(cluster, namespace, "crash")["status"]["phaseTransitionTimestamps"]]
    assert "Failed" not in phases

    def devices_back() -> bool:
        allocatable = _node(cluster, virt_handler)["status"].get("allocatable", {})
        return _count(allocatable.get("devices.kubevirt.io/tun", "0")) == 1000

    cluster.wait_until(
        "the restarted handler's device plugins are registered again", devices_back, timeout=60
    )

    uid = _vmi(cluster, namespace, "crash")["metadata"]["uid"]
    launchers = [
        pid for pid in _pids(f"bin/virt-launcher .*--uid {uid}") if pid not in _pids("virt-launcher-monitor")
    ]
    assert len(launchers) == 1, launchers
    os.kill(launchers[0], signal.SIGKILL)
    wait_vmi_phase(cluster, "crash", namespace, "Failed", timeout=120)  # its launcher was killed
    cluster.wait_until("QEMU is gone", lambda: not _qemu_of(namespace, "crash"), timeout=60)
    cluster.wait_until("the disk is unmounted", lambda: not _mounts_in_pod_volumes(), timeout=60)


def test_a_guest_boots_from_a_kernel_boot_container(
    cluster: Cluster, virt_controller: None, virt_handler: str, namespace: str
) -> None:
    vmi = yaml.safe_load((EXAMPLES / "vmi-test-guest-kernel-boot.yaml").read_text())
    cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(vmi))
    name = vmi["metadata"]["name"]
    wait_vmi_phase(cluster, name, namespace, timeout=240)
    mounts = _mounts_in_pod_volumes()
    assert sorted(Path(m).name for m in mounts if "/kernel-boot/" in m) == ["initrd.gz", "vmlinuz"]
    pod = _launcher_pod(cluster, namespace, name)

    def booted() -> bool:
        log = cluster.kubectl("logs", "-n", namespace, pod, "-c", "guest-console-log", check=False).stdout
        return BOOT_MARKER in log

    cluster.wait_until("the kernel-boot guest's console shows its boot marker", booted, timeout=120)
    cluster.kubectl("delete", "vmi", name, "-n", namespace, "--wait=true", "--timeout=120s")
    cluster.wait_until(
        "the kernel and initrd are unmounted", lambda: not _mounts_in_pod_volumes(), timeout=120
    )
