"""A launcher pod cannot steer virt-handler into the node: symlinks planted from inside the pod's compute
container (``kubectl exec``, as a VM owner or an escaped guest could) are refused, the VMI says why, and
nothing on the node changes.

- A containerDisk's ``disk_0.sock`` is swapped, before virt-handler mounts the image, for a link to the
  kubelet's pod-resources socket: followed, the kubelet's root (the node's ``/``) would be taken for the disk
  container's and a node file mounted into the pod.
- The launcher's ``launcher-sock`` flips between the real socket and a link to the same kubelet socket while
  virt-handler works on the VMI: a dial that followed it would run phase 1 of the pod network in the node's
  network namespace.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from localcluster.handle import Cluster
from pyroute2 import IPRoute

from kubevirt.network.nft.libnft import Nft
from kubevirt_testing.waiting import first_result

JSON = dict[str, Any]
KUBEVIRT_NAMESPACE = "kubevirt"
NODE_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"  # served by the kubelet, a node process
CONTAINER_DISKS = "/var/run/kubevirt/container-disks"
SOCKETS = "/var/run/kubevirt/sockets"


def _vmi(name: str) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name},
        "spec": {
            "domain": {
                # The density run's compute limit: the launcher takes seconds to be ready, virt-handler
                # mounts only then, and the links are planted meanwhile.
                "resources": {
                    "requests": {"memory": "128Mi", "cpu": "100m"},
                    "limits": {"memory": "128Mi", "cpu": "100m"},
                },
                "devices": {
                    "disks": [{"name": "containerdisk", "disk": {"bus": "virtio"}}],
                    "interfaces": [{"name": "default", "masquerade": {}}],
                },
            },
            "networks": [{"name": "default", "pod": {}}],
            "terminationGracePeriodSeconds": 0,
            "volumes": [
                {
                    "name": "containerdisk",
                    "containerDisk": {"image": "localhost/kubevirt/test-guest-container-disk:devel"},
                }
            ],
        },
    }


def _node_state() -> JSON:
    """What a handler steered into the node would change: the node's own links (pods' veths come and go)
    and their addresses (link-local ones follow the pod bridge's state), and KubeVirt's nftables chains,
    which only a pod may hold. Phase 1 in the node's namespace would rename or strip a link, or add
    ``k6t-eth0``, ``tap0`` and the chains."""
    with IPRoute() as ipr:
        own = {
            int(link["index"]): str(link.get_attr("IFLA_IFNAME"))
            for link in ipr.get_links()
            if not str(link.get_attr("IFLA_IFNAME")).startswith("veth")
        }
        addresses = sorted(
            (own[int(address["index"])], str(address.get_attr("IFA_ADDRESS")))
            for address in ipr.get_addr()
            if int(address["index"]) in own and not str(address.get_attr("IFA_ADDRESS")).startswith("fe80:")
        )
    with Nft() as nft:
        chains = sorted(line.strip() for line in nft.run("list chains").splitlines() if "KUBEVIRT" in line)
    return {"links": sorted(own.values()), "addresses": addresses, "kubevirt_chains": chains}


def _mounts_of_pod(pod_uid: str) -> list[str]:
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if pod_uid in line]


def _compute_running(cluster: Cluster, namespace: str, vmi_uid: str) -> JSON | None:
    """The VMI's launcher pod once its compute container runs."""
    pods = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", f"kubevirt.io/created-by={vmi_uid}")
    for pod in pods["items"]:  # type: ignore[union-attr]
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            if status["name"] == "compute" and "running" in (status.get("state") or {}):
                return dict(pod)
    return None


def _exec(cluster: Cluster, namespace: str, pod: str, script: str, *, wait: bool = True) -> Any:
    argv = [
        "kubectl", "--kubeconfig", str(cluster.kubeconfig), "exec", "-n", namespace, pod, "-c", "compute",
        "--", "sh", "-c", script,
    ]  # fmt: skip
    if wait:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _events(cluster: Cluster, namespace: str, name: str) -> list[str]:
    found = cluster.kubectl_json(
        "get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}"
    )
    return [f"{event['reason']}: {event['message']}" for event in found["items"]]  # type: ignore[union-attr]


def _handler_logs(cluster: Cluster) -> str:
    return str(
        cluster.kubectl(
            "logs", "-n", KUBEVIRT_NAMESPACE, "-l", "kubevirt.io=virt-handler", "--tail=-1", check=False
        ).stdout
    )


@pytest.fixture
def namespace(cluster: Cluster, kubevirt: float) -> Iterator[str]:
    name = f"ft-isolation-{os.getpid() % 100000}"
    cluster.fresh_namespace(name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def node_socket() -> str:
    assert os.path.exists(NODE_SOCKET), f"{NODE_SOCKET} is not on this node"
    return NODE_SOCKET


def _start(cluster: Cluster, namespace: str, name: str) -> tuple[str, JSON]:
    created = json.loads(
        cluster.kubectl(
            "create", "-n", namespace, "-o", "json", "-f", "-", stdin=json.dumps(_vmi(name))
        ).stdout
    )
    uid = str(created["metadata"]["uid"])
    pod: JSON = first_result(
        f"{name}'s compute container running", lambda: _compute_running(cluster, namespace, uid), 120, 0.1
    )
    return uid, pod


def test_a_containerdisk_socket_linked_to_a_node_socket_is_refused(
    cluster: Cluster, namespace: str, node_socket: str
) -> None:
    before = _node_state()
    _, pod = _start(cluster, namespace, "linked-disk")
    pod_name, pod_uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    # At once, before the launcher is ready (virt-handler mounts only after that): the disk container's
    # socket makes way for a link to the kubelet's socket.
    planted = _exec(cluster, namespace, pod_name, (
        f"cd {CONTAINER_DISKS} && i=0; while [ ! -S disk_0.sock ] && [ $i -lt 600 ]; do sleep 0.05; "
        f"i=$((i+1)); done; mv disk_0.sock moved.sock && ln -s {node_socket} disk_0.sock && ls -l"
    ))  # fmt: skip
    assert f"disk_0.sock -> {node_socket}" in planted.stdout

    refusal = first_result(
        "the VMI's refusal event",
        lambda: [
            e for e in _events(cluster, namespace, "linked-disk") if "disk_0.sock: refused, a symlink" in e
        ],
        120,
        1.0,
    )
    assert refusal[0].startswith("SyncFailed: containerDisk containerdisk: ")
    vmi = cluster.kubectl_json("get", "vmi", "-n", namespace, "linked-disk")
    assert vmi["status"].get("phase") != "Running"  # type: ignore[index]
    synchronized = [
        c
        for c in vmi["status"].get("conditions") or []  # type: ignore[index]
        if c["type"] == "Synchronized"
    ]
    assert synchronized, vmi["status"]  # type: ignore[index]
    assert synchronized[0]["status"] == "False"
    assert "refused, a symlink" in synchronized[0]["message"]
    assert not [line for line in _mounts_of_pod(pod_uid) if "disk_0.img" in line]
    assert _node_state() == before


def test_a_launcher_socket_flipping_to_a_node_socket_never_reaches_the_node(
    cluster: Cluster, namespace: str, node_socket: str
) -> None:
    before = _node_state()
    _, pod = _start(cluster, namespace, "flipping")
    pod_name = pod["metadata"]["name"]
    # Once the launcher is ready, its socket alternates with a link to the kubelet's socket (the real one
    # kept through a hard link), for a minute: whatever virt-handler looks at, it meets both.
    flipper = _exec(cluster, namespace, pod_name, (
        f"cd {SOCKETS} && i=0; while [ ! -S launcher-sock ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); "
        f"done; ln launcher-sock .real && end=$(( $(date +%s) + 60 )); "
        f"while [ $(date +%s) -lt $end ]; do ln -s {node_socket} .link && mv -T .link launcher-sock; "
        f"sleep 0.02; ln .real .back && mv -T .back launcher-sock; sleep 0.02; done"
    ), wait=False)  # fmt: skip
    try:
        outcome = first_result(
            "virt-handler refusing the flipping launcher socket, or failing the VMI",
            lambda: _refused_or_failed(cluster, namespace, "flipping", pod["metadata"]["uid"]),
            90,
            2.0,
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            flipper.kill()
        flipper.wait(10)
    print(f"virt-handler's answer to the flipping socket: {outcome}")
    assert _node_state() == before


def _refused_or_failed(cluster: Cluster, namespace: str, name: str, pod_uid: str) -> str | None:
    """A refusal in virt-handler's log, or the VMI failed: a socket that is missing half the time is a
    launcher gone once it was reached, which of the two comes first is up to timing."""
    for line in _handler_logs(cluster).splitlines():
        if pod_uid in line and "launcher-sock: refused, a symlink" in line:
            return f"refused: {line}"
    vmi = cluster.kubectl_json("get", "vmi", "-n", namespace, name)
    if vmi["status"].get("phase") == "Failed":  # type: ignore[index]
        return "the VMI failed"
    return None


def _status_fields(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _pod_processes(pod_uid: str) -> dict[str, int]:
    """The node's PIDs of the launcher pod's processes, by command name (the last one of each)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if pod_uid in (entry / "cgroup").read_text():
                found[(entry / "comm").read_text().strip()] = int(entry.name)
    return found


def _running(cluster: Cluster, namespace: str, name: str) -> JSON | None:
    vmi = cluster.kubectl_json("get", "vmi", "-n", namespace, name)
    return vmi if vmi["status"].get("phase") == "Running" else None  # type: ignore[index]


def test_launchers_run_non_root_with_kubevirts_capabilities_and_seccomp_profile(
    cluster: Cluster, namespace: str
) -> None:
    spec = _vmi("non-root")
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(spec))
    vmi: JSON = first_result("the VMI Running", lambda: _running(cluster, namespace, "non-root"), 240, 2.0)
    assert vmi["status"]["runtimeUser"] == 107
    pod = _compute_running(cluster, namespace, vmi["metadata"]["uid"])
    assert pod is not None
    security = pod["spec"]["securityContext"]
    assert security["runAsUser"] == 107
    assert security["runAsNonRoot"] is True
    assert security["seccompProfile"] == {"type": "Localhost", "localhostProfile": "kubevirt/kubevirt.json"}
    (compute,) = [c for c in pod["spec"]["containers"] if c["name"] == "compute"]
    assert compute["securityContext"]["capabilities"] == {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}
    assert compute["securityContext"]["allowPrivilegeEscalation"] is False
    assert Path("/var/lib/kubelet/seccomp/kubevirt/kubevirt.json").is_file()  # virt-handler installed it

    processes = _pod_processes(pod["metadata"]["uid"])
    net_bind_service = f"{1 << 10:016x}"
    for name in ("virt-launcher", "libvirtd"):
        assert name in processes, processes
        status = _status_fields(processes[name])
        assert status["Uid"].split()[0] == "107", (name, status["Uid"])
        assert status["CapEff"] == net_bind_service, (name, status["CapEff"])
        assert status["CapBnd"] == net_bind_service, (name, status["CapBnd"])
        assert status["NoNewPrivs"] == "1"
        assert status["Seccomp"] == "2"  # filtered
    qemu = [pid for name, pid in processes.items() if name.startswith("qemu")]
    assert qemu, processes
    assert _status_fields(qemu[0])["Uid"].split()[0] == "107"
