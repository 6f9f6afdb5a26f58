"""cluster-up and cluster-down: start the recorded processes in order, stop exactly those, undo the host
changes."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path

from . import components, dns, hostfs, hostnet, images, nodes, pki, processes, prometheus, readiness
from .csi import deploy as csi_deploy
from .layout import BRIDGE, DNS_SERVICE_IP, SHARED_MOUNTS, Layout, Node
from .timing import Timer

STEP_TIMEOUT = 120.0
# Processes started on a running cluster and stopped with it, which do not make it incomplete.
ADD_ONS = frozenset({prometheus.PROCESS_NAME, prometheus.KSM_PROCESS_NAME})


def running(layout: Layout) -> bool:
    """Whether every recorded process of the cluster is alive and the apiserver answers (add-ons such as
    hack/monitoring's are recorded beside them and may come and go)."""
    records = [r for r in processes.recorded(layout.pids) if r.name not in ADD_ONS]
    if not records:
        # Nothing started: on a cold machine the CSI binaries the expected set names are not built yet.
        return False
    names = {record.name for record in records}
    started = [*components.processes(layout), *csi_deploy.processes(layout), dns.process(layout)]
    expected = {component.name for component in started}
    if names != expected or not all(processes.alive(record) for record in records):
        return False
    return readiness.url_ok(f"{components.APISERVER_URL}/readyz", layout.pki)


def up(layout: Layout, nodes: int = 1) -> None:
    """Brings the cluster up with ``nodes`` nodes; a running cluster gets the nodes it lacks."""
    if running(layout):
        print(f"cluster already running; KUBECONFIG={layout.admin_kubeconfig}")
    else:
        _up_first(layout)
    for index in range(2, nodes + 1):
        add_node(layout.node(index))


def _up_first(layout: Layout) -> None:
    if processes.recorded(layout.pids) or layout.run.exists():
        print("cleaning up a previous, incomplete cluster first")
        left = down(layout)
        if left:
            raise RuntimeError(f"the previous cluster left {', '.join(left)}")
    timer = Timer()
    print(f"starting a Kubernetes {layout.kubernetes_version} cluster in {layout.state}", flush=True)
    layout.run.mkdir(parents=True, exist_ok=True)
    layout.logs.mkdir(parents=True, exist_ok=True)
    if not layout.host_before.exists():
        layout.host_before.write_text(json.dumps(hostnet.snapshot()))
    with timer.step("certificates and configuration"):
        pki.generate(layout.pki, components.certificates(layout), components.AUTHORITIES)
        components.write_configuration(layout)
    with timer.step(f"network (bridge {BRIDGE})"):
        hostnet.prepare()
    with timer.step("shared mounts"):
        # The bind mounts first: made while / is still private, each gets a peer group of its own. Bound
        # from a shared /, they would join its group, and every mount below them would show twice.
        for directory in SHARED_MOUNTS:
            hostfs.make_shared(directory)
        hostfs.make_root_shared(layout.root_made_shared)
    kubectl = layout.kubectl()
    for component in components.processes(layout):
        with timer.step(component.name):
            _start(layout, component)
        if component.name == "containerd":
            with timer.step("import images"):
                imported = images.import_cached(layout)
            print(f"    imported: {', '.join(imported) or 'nothing new'}")
    with timer.step(f"node {layout.node_name} Ready"):
        readiness.wait_for(
            "node Ready",
            lambda: (
                readiness.node_ready(kubectl, layout.node_name) and readiness.default_service_account(kubectl)
            ),
            timeout=STEP_TIMEOUT,
            alive=lambda: all(processes.alive(r) for r in processes.recorded(layout.pids)),
        )
    with timer.step("CSI storage (hostpath driver, sidecars, snapshot controller, StorageClass local)"):
        csi_deploy.build(layout)
        csi_deploy.prepare(layout)
        csi_deploy.install_objects(layout)
        for component in csi_deploy.processes(layout):
            _start(layout, component)
    with timer.step(f"cluster DNS (CoreDNS behind kube-dns {DNS_SERVICE_IP})"):
        dns.build(layout)
        dns.prepare(layout)
        dns.install_objects(layout)
        _start(layout, dns.process(layout))
    print(f"cluster up in {timer.total:.1f} s; processes:")
    for record in processes.recorded(layout.pids):
        print(f"  {record.name:<24} pid {record.pid}")
    print(f"export KUBECONFIG={layout.admin_kubeconfig} PATH={layout.kubernetes_bin}:$PATH")


def add_node(node: Node) -> None:
    """Starts a further node (its namespaces, containerd with the cached images, kubelet, kube-proxy) and
    waits for it to be Ready; a running node is left alone, a half-started one is cleaned up first."""
    if node_running(node):
        print(f"node {node.name} already running")
        return
    if node.dir.exists():
        print(f"cleaning up a previous, incomplete node {node.name} first")
        _remove_node_processes(node)
    timer = Timer()
    with timer.step(f"{node.name}: certificates and configuration"):
        nodes.prepare(node)
    with timer.step(f"{node.name}: namespaces and network"):
        nodes.start_namespaces(node)
    with timer.step(f"{node.name}: containerd"):
        _start(node.layout, components.containerd(node), node)
    with timer.step(f"{node.name}: import images"):
        imported = images.import_cached(node.layout, node)
    print(f"    imported: {', '.join(imported) or 'nothing new'}")
    for agent in [*components.node_agents(node), csi_deploy.node_plugin(node)]:
        with timer.step(f"{node.name}: {agent.name}"):
            _start(node.layout, agent, node)
    kubectl = node.layout.kubectl()
    with timer.step(f"node {node.name} Ready"):
        readiness.wait_for(
            f"node {node.name} Ready",
            lambda: readiness.node_ready(kubectl, node.name),
            timeout=STEP_TIMEOUT,
            alive=lambda: node_running(node),
        )
    print(f"node {node.name} added in {timer.total:.1f} s ({node.ip}, pods {node.pod_subnet})")


def node_running(node: Node) -> bool:
    return nodes.running(node)


def remove_node(node: Node) -> list[str]:
    """Stops a further node, deletes its Node object, the pods bound to it and its files; returns what
    is left over.

    Without its kubelet nothing would finish those pods: the API server would list them as Running until
    the pod garbage collector got to them (up to a minute later), so later users of the cluster would
    find components that no longer exist.
    """
    _remove_node_processes(node)
    kubectl = node.layout.kubectl()
    subprocess.run(
        [*kubectl, "delete", "node", node.name, "--ignore-not-found"], capture_output=True, check=False
    )
    subprocess.run(
        [*kubectl, "delete", "pods", "--all-namespaces", f"--field-selector=spec.nodeName={node.name}",
         "--force", "--grace-period=0", "--wait=false"],
        capture_output=True,
        check=False,
    )  # fmt: skip
    return nodes.leftovers(node)


def _remove_node_processes(node: Node) -> None:
    nodes.stop(node, _remove_containers)
    if not hostfs.mounts_under(node.dir):
        shutil.rmtree(node.dir, ignore_errors=True)


def _start(layout: Layout, component: components.Component, node: Node | None = None) -> None:
    """Starts ``component`` on node 1, or inside a further ``node``'s namespaces."""
    pid_dir, log_dir = (node.pids, node.logs) if node else (layout.pids, layout.logs)
    log = log_dir / f"{component.name}.log"
    log.unlink(missing_ok=True)
    argv = [*nodes.enter(node), *component.argv] if node else component.argv
    record = processes.start(component.name, argv, pid_dir=pid_dir, log_dir=log_dir, forks=node is not None)
    url, ready_socket = component.ready_url, component.ready_socket

    def ready() -> bool:
        if url:
            return readiness.url_ok(url, layout.pki)
        return bool(ready_socket and ready_socket.exists() and _answers(ready_socket))

    readiness.wait_for(
        f"{component.name} (log: {log})", ready, timeout=STEP_TIMEOUT, alive=lambda: processes.alive(record)
    )


def _remove_containers(containerd_socket: Path) -> int:
    """Kills and deletes every container task through containerd, so shims and rootfs mounts go too."""
    if not containerd_socket.exists():
        return 0
    ctr = ["ctr", f"--address={containerd_socket}", "--namespace=k8s.io"]
    listing = subprocess.run([*ctr, "tasks", "ls", "-q"], capture_output=True, text=True, check=False)
    tasks = listing.stdout.split() if listing.returncode == 0 else []
    for task in tasks:
        # Kills the task, waits for it and deletes it (a sandbox may already be gone with its pod).
        subprocess.run([*ctr, "tasks", "rm", "--force", task], capture_output=True, check=False)
    listing = subprocess.run([*ctr, "containers", "ls", "-q"], capture_output=True, text=True, check=False)
    for container in listing.stdout.split() if listing.returncode == 0 else []:
        subprocess.run([*ctr, "containers", "rm", container], capture_output=True, check=False)
    return len(tasks)


# Stopped last, after the containers are gone: the runtime that removes them and the store.
FOUNDATION = ("containerd", "etcd")


def down(layout: Layout) -> list[str]:
    """Stops what cluster-up started and undoes its host changes; returns what is still left over."""
    timer = Timer()
    # Loop devices first, while their backing paths resolve: the kubelet's (over published devices, in the
    # nodes' kubelet directories) go at once, a volume's still in use goes when its last user closes it.
    csi_deploy.detach_loop_devices(layout)
    further = layout.extra_nodes()
    if further:
        with timer.step(f"stop {', '.join(node.name for node in further)}"):
            for node in further:
                nodes.stop(node, _remove_containers)
    newest_first = list(reversed(processes.recorded(layout.pids)))
    with timer.step("stop the kubelet, kube-proxy and the control plane"):
        for record in newest_first:
            if record.name not in FOUNDATION:
                processes.stop(record)
    with timer.step("remove containers"):
        removed = _remove_containers(layout.containerd_socket)
    print(f"    {removed} container tasks")
    with timer.step("stop containerd and etcd"):
        for record in newest_first:
            if record.name in FOUNDATION:
                processes.stop(record)
        # Container shims outlive containerd (they are given its socket); containers live in pod cgroups.
        for pid in _shims(layout) + hostfs.pod_processes():
            subprocess.run(["kill", "-KILL", str(pid)], capture_output=True, check=False)
        _wait_gone(layout)
    with timer.step("unmount"):
        unmounted = hostfs.unmount_all(layout.run)
        for directory in SHARED_MOUNTS:
            unmounted += hostfs.unmount_all(directory)
        hostfs.restore_root(layout.root_made_shared)
        # Volumes' loop devices (and the kubelet's over published ones), free once nothing is mounted.
        detached = csi_deploy.detach_loop_devices(layout)
    print(f"    {len(unmounted)} mounts, {len(detached)} loop devices")
    with timer.step("network and cgroups"):
        before = hostnet.load(layout.host_before) if layout.host_before.exists() else hostnet.snapshot()
        for change in hostnet.restore(before):
            print(f"    undid {change}")
        hostfs.remove_pod_cgroups()
        _remove_host_paths(layout, before)
    left = leftovers(layout, before)
    if not left:
        shutil.rmtree(layout.run, ignore_errors=True)
        layout.admin_kubeconfig.unlink(missing_ok=True)
        layout.host_before.unlink(missing_ok=True)
    print(f"cluster down in {timer.total:.1f} s")
    return left


def _shims(layout: Layout) -> list[int]:
    return processes.processes_mentioning(layout.containerd_socket)


def _wait_gone(layout: Layout, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while _shims(layout) or hostfs.pod_processes():
        if time.monotonic() > deadline:
            return
        time.sleep(0.1)


def _remove_host_paths(layout: Layout, before: dict[str, object]) -> None:
    logs = Path("/var/log/containers")
    if logs.is_dir():
        for link in logs.iterdir():
            if link.is_symlink() and str(link.readlink()).startswith(str(layout.state)):
                link.unlink()
    # Shims killed without warning leave their sockets behind; nothing answers on those any more.
    shim_sockets = Path("/run/containerd/s")
    if shim_sockets.is_dir():
        for entry in shim_sockets.iterdir():
            if entry.is_socket() and not _answers(entry):
                entry.unlink()
    existed = before.get("host_paths", {})
    assert isinstance(existed, dict)
    for path in hostnet.HOST_PATHS:
        # Created by this cluster's kubelet or runtime (nothing else ran them): all of it is ours. Never
        # removed through a mount that is still there (a subPath bind mount would expose host files).
        if not existed.get(path, True) and Path(path).is_dir() and not hostfs.mounts_under(Path(path)):
            shutil.rmtree(path)
    cni_results = Path("/var/lib/cni/results")
    if cni_results.is_dir():
        _remove_cni_results(cni_results)


def _remove_cni_results(results: Path) -> None:
    """The CNI library's cached results of this cluster's pods: its network's and their loopback's."""
    prefix = f"{components.CNI_NETWORK}-"
    ours = {entry.name[len(prefix) :].rsplit("-", 1)[0] for entry in results.glob(f"{prefix}*")}
    for entry in results.iterdir():
        container = entry.name.rsplit("-", 1)[0].removeprefix("cni-loopback-")
        if entry.name.startswith(prefix) or container in ours:
            entry.unlink()


def _answers(path: Path) -> bool:
    """Whether a process listens on the unix socket at ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def leftovers(layout: Layout, before: dict[str, object]) -> list[str]:
    """Everything of this cluster still on the host: processes, mounts, network changes, cgroups."""
    left = [f"process {r.name} (pid {r.pid})" for r in processes.recorded(layout.pids) if processes.alive(r)]
    for node in layout.extra_nodes():
        left += nodes.leftovers(node)
    left += [f"container shim {pid}" for pid in _shims(layout)]
    left += [f"process {pid} in a pod cgroup" for pid in hostfs.pod_processes()]
    mounts = hostfs.mounts_under(layout.state)
    for directory in SHARED_MOUNTS:
        mounts += hostfs.mounts_under(directory)
    left += [f"mount {mount}" for mount in mounts]
    left += hostnet.differences(before)
    left += [f"cgroup {path}" for path in hostfs.pod_cgroups()]
    left += csi_deploy.leftovers(layout)
    existed = before.get("host_paths", {})
    assert isinstance(existed, dict)
    left += [
        f"directory {path}"
        for path in hostnet.HOST_PATHS
        if not existed.get(path, True) and Path(path).exists()
    ]
    return left
