"""Nodes after the first: each runs its containerd, kubelet and kube-proxy in PID, mount and network
namespaces of its own, started by an init process (nodeinit) that holds the namespaces.

Its network namespace has one address on the pod bridge's subnet (a /32 behind a point-to-point veth from
the host, which answers ARP for it on the bridge) and routes its own pod subnet; every packet between
nodes passes through the host, so both directions meet the same connection tracking. Its mount namespace
has private copies of the host directories the kubelet, containerd, the CNI plugins and KubeVirt's
virt-handler use (their hostPaths), so nothing of one node shows on the other.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from . import components, hostfs, hostnet, pki, processes
from .csi import deploy as csi_deploy
from .layout import KUBELET_ROOT, KUBEVIRT_SHARE_DIR, REPO, Node

# Host directories each further node has its own copy of (target, shared mount). /run covers what
# virt-handler's DaemonSet names there (/var/run is /run): kubevirt, kubevirt-private,
# kubevirt-libvirt-runtimes, libvirt, and containerd's shim sockets.
PRIVATE_DIRS: tuple[tuple[str, bool], ...] = (
    ("/run", False),
    (str(KUBEVIRT_SHARE_DIR), True),
    (str(KUBELET_ROOT), True),
    ("/var/lib/kubevirt", False),
    ("/var/lib/kubevirt-node-labeller", False),
    ("/var/lib/cni", False),
    ("/var/log/containers", False),
)
INIT = "init"
AGENTS = ("containerd", "kubelet", "kube-proxy", csi_deploy.NODE_PLUGIN)
INIT_TIMEOUT = 20.0


def mounts(node: Node) -> list[tuple[str, str, bool]]:
    return [(str(node.host_dirs / target.lstrip("/")), target, shared) for target, shared in PRIVATE_DIRS]


def init_argv(node: Node) -> list[str]:
    spec = {"mounts": mounts(node), "ready": str(node.init_ready)}
    return [
        "unshare",
        "--pid",
        "--mount",
        "--net",
        "--fork",
        "--kill-child=SIGKILL",
        "--propagation=slave",
        "--mount-proc",
        sys.executable,
        "-m",
        "localcluster.nodeinit",
        json.dumps(spec),
    ]


def _init_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "hack" / "cluster")}


def init_record(node: Node) -> processes.Record | None:
    found = [r for r in processes.recorded(node.pids) if r.name == INIT and processes.alive(r)]
    return found[0] if found else None


def enter(node: Node) -> list[str]:
    """The prefix that runs a command in the node's namespaces (nsenter forks into its PID namespace)."""
    init = init_record(node)
    if init is None:
        raise RuntimeError(f"node {node.name}: its init process is not running")
    return ["nsenter", f"--target={init.pid}", "--mount", "--net", "--pid", "--"]


def running(node: Node) -> bool:
    records = processes.recorded(node.pids)
    return {r.name for r in records} == {INIT, *AGENTS} and all(processes.alive(r) for r in records)


def start_namespaces(node: Node) -> processes.Record:
    node.dir.mkdir(parents=True, exist_ok=True)
    node.init_ready.unlink(missing_ok=True)
    hostfs.make_cgroup_root(node.cgroup_root)
    record = processes.start(
        INIT, init_argv(node), pid_dir=node.pids, log_dir=node.logs, forks=True, env=_init_env()
    )
    deadline = time.monotonic() + INIT_TIMEOUT
    while not node.init_ready.exists():
        if not processes.alive(record) or time.monotonic() > deadline:
            log = (node.logs / f"{INIT}.log").read_text()[-2000:]
            raise RuntimeError(f"node {node.name}: its namespaces are not ready:\n{log}")
        time.sleep(0.02)
    hostnet.connect_node(node, record.pid)
    return record


def prepare(node: Node) -> None:
    """Certificates and configuration files of a further node."""
    pki.add_leaves(node.layout.pki, components.node_certificates(node))
    components.write_node_configuration(node)


def stop(node: Node, remove_containers: Callable[[Path], int]) -> None:
    """Stops the node's agents, its containers (through its containerd), its containerd, then its init:
    the kernel ends what is left in its PID namespace and the namespaces go (veth and routes with them)."""
    records = list(reversed(processes.recorded(node.pids)))
    for name in (csi_deploy.NODE_PLUGIN, "kubelet", "kube-proxy", "containerd", INIT):
        if name == "containerd":
            remove_containers(node.containerd_socket)
        for record in records:
            if record.name == name:
                processes.stop(record)
    deadline = time.monotonic() + 10.0
    while hostnet.link_exists(node.host_veth) and time.monotonic() < deadline:
        time.sleep(0.05)
    hostfs.remove_cgroup_root(node.cgroup_root)


def leftovers(node: Node) -> list[str]:
    left = [
        f"process {r.name} of {node.name} (pid {r.pid})"
        for r in processes.recorded(node.pids)
        if processes.alive(r)
    ]
    if hostnet.link_exists(node.host_veth):
        left.append(f"link {node.host_veth}")
    left += [f"cgroup {path}" for path in hostfs.cgroup_root_dirs(node.cgroup_root)]
    return left


def host_path(node: Node, path: Path) -> Path:
    """Where ``path`` as the node sees it lives on the host: in its private copy, or the shared original."""
    for target, _shared in sorted(PRIVATE_DIRS, key=lambda item: len(item[0]), reverse=True):
        if path == Path(target) or Path(target) in path.parents:
            return node.host_dirs / str(path).lstrip("/")
    return path
