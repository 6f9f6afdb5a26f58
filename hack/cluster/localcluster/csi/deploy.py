"""The hostpath CSI driver on the local cluster: its processes, its API objects, what cluster-down removes.

The driver and the CSI project's sidecars run as cluster processes, recorded and stopped like the kubelet,
not as pods: the node plugin must be in the node's mount namespace anyway (node N's is its init's, which
the node's kubelet joins with nsenter), the controller needs every node's data directory (one host
filesystem), and as processes neither the Python driver nor the Go binaries need an image, so cluster-up
builds no image for them and a changed driver takes effect on the next cluster-up. Their kubeconfig is a
certificate of its own in system:masters (the cluster's other clients are set up the same way).

- node plugin ``csi-hostpath-node`` on each node (started after its kubelet): the Node and Identity services
  on ``/var/lib/kubelet/plugins/<driver>/csi.sock`` (the node's own kubelet directory), registered through
  ``/var/lib/kubelet/plugins_registry``; its data directory ``run/csi/<node name>`` under the cluster state,
  the same path in every node's mount namespace, and the shared data directory ``run/csi/_shared`` (no node
  name has an underscore), where every node finds the multi-node volumes.
- ``csi-hostpath-controller`` on the host: the Controller service over every node's data directory and the
  shared one, on ``run/csi/controller.sock``, with csi-provisioner, csi-resizer and csi-snapshotter on that
  socket, and the snapshot-controller.
- objects: the (group) snapshot CRDs, the CSIDriver (no attach step; the kubelet applies fsGroup to
  the files), StorageClass ``local`` (the default; WaitForFirstConsumer, expandable) and VolumeSnapshotClass
  ``local`` (the default for the driver). A claim's access mode picks the kind of volume: ReadWriteOnce a
  node-local one on the node of its first pod, ReadWriteMany (or ReadOnlyMany) a shared one that pods on
  every node can use at once, so a VM on it can live-migrate.

Cluster-down detaches the shared Block volumes' loop devices (the nodes leave them attached until a volume
is deleted) with the others: they are over files under the cluster state too.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..components import Component, run_build_script
from ..layout import KUBELET_ROOT, MAX_NODES, REPO, Layout, Node
from .driver import DRIVER_NAME

NODE_PLUGIN = "csi-hostpath-node"
CONTROLLER = "csi-hostpath-controller"
STORAGE_CLASS = "local"
SNAPSHOT_CLASS = "local"
KUBECONFIG_USER = "csi"  # components.certificates makes its certificate
# The snapshot CRDs, and the group snapshot ones: the driver offers no group snapshots, but without their
# CRDs the snapshot-controller waits 30 s for them at every start (its gate cannot be turned off).
CRDS = tuple(
    f"{group}.storage.k8s.io_{kind}"
    for group, kinds in (
        ("snapshot", ("volumesnapshotclasses", "volumesnapshotcontents", "volumesnapshots")),
        (
            "groupsnapshot",
            ("volumegroupsnapshotclasses", "volumegroupsnapshotcontents", "volumegroupsnapshots"),
        ),
    )
    for kind in kinds
)
# The sidecars' diagnostics (/metrics once they serve): readiness for cluster-up.
HTTP_PORTS = {
    "csi-provisioner": 19801,
    "csi-resizer": 19802,
    "csi-snapshotter": 19803,
    "snapshot-controller": 19804,
}
PLUGIN_DIR = KUBELET_ROOT / "plugins" / DRIVER_NAME
REGISTRY = KUBELET_ROOT / "plugins_registry"


def build_dir(layout: Layout) -> Path:
    """Where hack/cluster/build-csi puts the binaries and CRDs of the pinned versions."""
    module = REPO / "hack" / "cluster" / "csi"
    key = hashlib.sha256((module / "go.mod").read_bytes() + (module / "go.sum").read_bytes()).hexdigest()
    return layout.cache / "csi" / key[:16]


def build(layout: Layout) -> Path:
    """Builds the pinned CSI components into the cache unless they are there (hack/cluster/build-csi: a few
    minutes from a cold cache, nothing when warm); returns the build directory."""
    run_build_script(layout, "build-csi")
    return build_dir(layout)


def _binary(layout: Layout, name: str) -> str:
    path = build_dir(layout) / "bin" / name
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run hack/cluster/build-csi (hack/cluster-up does)")
    return str(path)


def data_dir(layout: Layout, node: Node) -> Path:
    return layout.run / "csi" / node.name


def shared_dir(layout: Layout) -> Path:
    """The multi-node volumes' data directory (a Kubernetes node name has no underscore: no node's)."""
    return layout.run / "csi" / "_shared"


def controller_socket(layout: Layout) -> Path:
    return layout.run / "csi" / "controller.sock"


def _driver(*args: str) -> list[str]:
    """The driver's command line with this environment's Python (the project's virtualenv: grpcio)."""
    return ["env", f"PYTHONPATH={REPO / 'hack' / 'cluster'}", sys.executable, "-m", "localcluster.csi", *args]


def node_plugin(node: Node) -> Component:
    """The node plugin (to run in the node's namespaces); ready once its socket answers, seen from the host
    through the node's private kubelet directory."""
    from ..nodes import host_path  # nodes imports this module: imported when called

    socket = PLUGIN_DIR / "csi.sock"
    argv = _driver(
        f"--endpoint={socket}",
        f"--node={node.name}",
        f"--data-dir={data_dir(node.layout, node)}",
        f"--shared-dir={shared_dir(node.layout)}",
        f"--registration-dir={REGISTRY}",
    )
    return Component(NODE_PLUGIN, argv, ready_socket=socket if node.primary else host_path(node, socket))


def controller_processes(layout: Layout, http_ports: dict[str, int] | None = None) -> list[Component]:
    """The controller service and the CSI project's controllers, in start order (``http_ports``: other
    diagnostics ports than the cluster's)."""
    ports = http_ports or HTTP_PORTS
    socket = controller_socket(layout)
    nodes = [layout.node(index) for index in range(1, MAX_NODES + 1)]
    kubeconfig = f"--kubeconfig={layout.kubeconfig(KUBECONFIG_USER)}"

    def sidecar(name: str, *args: str) -> Component:
        endpoint = f"127.0.0.1:{ports[name]}"
        argv = [_binary(layout, name), kubeconfig, f"--http-endpoint={endpoint}", "--leader-election=false"]
        return Component(name, [*argv, *args], ready_url=f"http://{endpoint}/metrics")

    address = f"--csi-address={socket}"
    return [
        Component(
            CONTROLLER,
            _driver(
                f"--endpoint={socket}",
                *(f"--controller={n.name}={data_dir(layout, n)}" for n in nodes),
                f"--shared-dir={shared_dir(layout)}",
            ),
            ready_socket=socket,
        ),
        # A VolumeSnapshot kept by its as-source finalizer while a claim was being made from it is let go
        # on its next sync: resync within a minute, not the default 15, so a namespace ends promptly.
        sidecar("snapshot-controller", "--resync-period=1m"),
        # Only the selected node's topology is offered for a WaitForFirstConsumer claim: a node-local volume
        # is made where its first pod was scheduled (a shared one is accessible from every node anyway).
        sidecar("csi-provisioner", address, "--strict-topology", "--extra-create-metadata", "--timeout=60s"),
        sidecar("csi-resizer", address, "--timeout=60s"),
        sidecar("csi-snapshotter", address, "--timeout=60s"),
    ]


def processes(layout: Layout) -> list[Component]:
    """Every process of the driver recorded on the host (node 1's plugin included)."""
    return [node_plugin(layout.node(1)), *controller_processes(layout)]


def objects() -> list[dict[str, object]]:
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": DRIVER_NAME},
            "spec": {
                "attachRequired": False,
                "podInfoOnMount": False,
                "volumeLifecycleModes": ["Persistent"],
                # Filesystem volumes are directories: the kubelet gives their files to a pod's fsGroup.
                "fsGroupPolicy": "File",
                "storageCapacity": False,
            },
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": STORAGE_CLASS,
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": DRIVER_NAME,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": True,
        },
        {
            "apiVersion": "snapshot.storage.k8s.io/v1",
            "kind": "VolumeSnapshotClass",
            "metadata": {
                "name": SNAPSHOT_CLASS,
                "annotations": {"snapshot.storage.kubernetes.io/is-default-class": "true"},
            },
            "driver": DRIVER_NAME,
            "deletionPolicy": "Delete",
        },
    ]


def _kubectl(layout: Layout, *args: str, stdin: str | None = None) -> None:
    result = subprocess.run(
        [*layout.kubectl(), *args], input=stdin, capture_output=True, text=True, check=False, timeout=120
    )
    if result.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")


def install_objects(layout: Layout) -> None:
    """The snapshot CRDs (established before anything uses them), then the driver's objects."""
    crd_dir = build_dir(layout) / "crd"
    files = [crd_dir / f"{name}.yaml" for name in CRDS]
    for path in files:
        if not path.exists():
            raise RuntimeError(f"{path} is missing: run hack/cluster/build-csi (hack/cluster-up does)")
    _kubectl(layout, "apply", "--server-side", *(f"--filename={path}" for path in files))
    names = [f"crd/{'.'.join(reversed(name.split('_')))}" for name in CRDS]
    _kubectl(layout, "wait", "--for=condition=Established", "--timeout=60s", *names)
    _kubectl(layout, "apply", "--server-side", "--filename=-", stdin=yaml.safe_dump_all(objects()))


def prepare(layout: Layout) -> None:
    """The data directories (the controller is given every possible node's) and the shared one."""
    for index in range(1, MAX_NODES + 1):
        data_dir(layout, layout.node(index)).mkdir(parents=True, exist_ok=True)
    shared_dir(layout).mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class LoopDevice:
    name: str
    backing: str  # the backing file's path (as the kernel can still name it)
    backing_file_id: tuple[str, int]  # the backing file's filesystem (major:minor) and inode


def _loop_devices() -> list[LoopDevice]:
    result = subprocess.run(
        ["losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-MAJ:MIN,BACK-INO,BACK-FILE"],
        capture_output=True,
        text=True,
        check=False,
    )
    found = []
    for line in result.stdout.splitlines():
        name, device, inode, backing = [*line.split(" ", 3), "", "", ""][:4]
        device = device.replace("\\x20", "")  # --raw pads the column with escaped spaces
        found.append(
            LoopDevice(name, backing.replace("\\x20", " "), (device, int(inode) if inode.isdigit() else -1))
        )
    return found


def _device_node_id(name: str) -> tuple[str, int] | None:
    """The filesystem (major:minor) and inode of a loop device's node, as a backing file's are given."""
    try:
        found = os.stat(name)
    except OSError:
        return None
    return f"{os.major(found.st_dev)}:{os.minor(found.st_dev)}", found.st_ino


def _ours(layout: Layout, backing: str) -> bool:
    """A loop device over a volume's file (under the cluster state) or one the kubelet made over a published
    device node (under a kubelet directory; node N's is under the cluster state too)."""
    return backing.startswith((f"{layout.state}/", f"{KUBELET_ROOT}/"))


def ours(
    layout: Layout,
    loops: list[LoopDevice],
    node_id: Callable[[str], tuple[str, int] | None] = _device_node_id,
) -> list[LoopDevice]:
    """The cluster's loop devices, the kubelet's first (each holds a volume's device open): those over our
    paths, and those over the device node of one of ours. A kubelet's loop device made in node N's mount
    namespace names its backing device node only by inode once that namespace is gone."""
    by_path = [loop for loop in loops if _ours(layout, loop.backing)]
    nodes = {node_id(loop.name) for loop in by_path} - {None}
    over_ours = [loop for loop in loops if loop not in by_path and loop.backing_file_id in nodes]
    kubelets = [loop for loop in by_path if loop.backing.startswith(f"{KUBELET_ROOT}/")]
    return [*over_ours, *kubelets, *(loop for loop in by_path if loop not in kubelets)]


def detach_loop_devices(layout: Layout) -> list[str]:
    """Detaches the cluster's loop devices; returns them. One still open is cleared by the kernel when it is
    closed. Called before the nodes and their mounts go and once more after."""
    detached: list[str] = []
    for _round in range(5):
        found = ours(layout, _loop_devices())
        if not found:
            break
        for loop in found:
            subprocess.run(["losetup", "--detach", loop.name], capture_output=True, check=False)
            detached.append(loop.name)
        time.sleep(0.2)
    return sorted(set(detached))


def leftovers(layout: Layout) -> list[str]:
    return [f"loop device {loop.name} ({loop.backing})" for loop in ours(layout, _loop_devices())]
