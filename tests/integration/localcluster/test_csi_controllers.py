"""The hostpath CSI driver's controller side as cluster-up runs it (localcluster.csi.deploy: the same command
lines and objects), against a real kube-apiserver on loopback with kube-controller-manager's volume binder and
protection controllers, but no scheduler or kubelet: the test plays the scheduler by annotating a claim with
its selected node, as the scheduler does for a WaitForFirstConsumer claim once it placed the claim's pod.

csi-provisioner makes a volume on that node for the default StorageClass, csi-resizer grows it, the
snapshot-controller and csi-snapshotter take a VolumeSnapshot with the default VolumeSnapshotClass, a claim
restored from it carries the data, and deleting the claims deletes the volumes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import processes, readiness  # noqa: E402
from localcluster.apiserver import ApiServer, free_port, running_apiserver  # noqa: E402
from localcluster.csi import deploy  # noqa: E402
from localcluster.csi.driver import DRIVER_NAME, TOPOLOGY_KEY  # noqa: E402
from localcluster.layout import MAX_NODES, Layout  # noqa: E402
from localcluster.pvc_vms import claim  # noqa: E402

from kubevirt_testing.waiting import first_result  # noqa: E402

JSON = dict[str, Any]
TIMEOUT = 90.0
_wait = partial(first_result, timeout=TIMEOUT, interval=0.3)  # the check's first truthy result


@dataclass(frozen=True)
class Controllers:
    server: ApiServer
    layout: Layout
    node: str

    @property
    def _kubectl(self) -> list[str]:
        return [str(self.server.bin_dir / "kubectl"), f"--kubeconfig={self.server.kubeconfig}"]

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        result = subprocess.run(
            [*self._kubectl, *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result.stdout

    def apply(self, *objects: JSON) -> None:
        self.kubectl(
            "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
        )

    def find(self, kind: str, name: str) -> JSON | None:
        result = subprocess.run(
            [*self._kubectl, "get", kind, name, "-n", "default", "-o", "json"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        return json.loads(result.stdout) if result.returncode == 0 else None

    @property
    def volumes(self) -> Path:
        return deploy.data_dir(self.layout, self.layout.node(1)) / "volumes"


@pytest.fixture(scope="module")
def controllers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controllers]:
    directory = tmp_path_factory.mktemp("csi-controllers")
    layout = Layout(state=directory / "state", cache=Layout.from_environment().cache)
    deploy.build(layout)
    with running_apiserver(directory / "apiserver", install_crds=False) as server:
        # The cluster layout's admin and CSI kubeconfigs are this API server's admin one.
        layout.run.mkdir(parents=True)
        shutil.copy(server.kubeconfig, layout.admin_kubeconfig)
        layout.kubeconfigs.mkdir()
        shutil.copy(server.kubeconfig, layout.kubeconfig(deploy.KUBECONFIG_USER))
        node = layout.node(1).name
        started: list[processes.Record] = []
        try:
            started.append(
                processes.start(
                    "kube-controller-manager",
                    [
                        str(server.bin_dir / "kube-controller-manager"),
                        f"--kubeconfig={server.kubeconfig}",
                        "--controllers=persistentvolume-binder-controller,persistentvolumeclaim-protection-controller,"
                        "persistentvolume-protection-controller",
                        "--leader-elect=false",
                        "--bind-address=127.0.0.1",
                        "--secure-port=0",
                    ],
                    pid_dir=layout.pids,
                    log_dir=layout.logs,
                )
            )
            deploy.prepare(layout)
            deploy.install_objects(layout)
            # What the kubelet writes when the node plugin registers: the Node's topology label and CSINode.
            controllers = Controllers(server, layout, node)
            controllers.apply(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": node, "labels": {TOPOLOGY_KEY: node}},
                },
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {"name": node},
                    "spec": {
                        "drivers": [{"name": DRIVER_NAME, "nodeID": node, "topologyKeys": [TOPOLOGY_KEY]}]
                    },
                },
            )
            ports = {name: free_port() for name in deploy.HTTP_PORTS}
            for component in deploy.controller_processes(layout, ports):
                record = processes.start(
                    component.name, component.argv, pid_dir=layout.pids, log_dir=layout.logs
                )
                started.append(record)
                url, socket = component.ready_url, component.ready_socket
                readiness.wait_for(
                    component.name,
                    lambda url=url, socket=socket: (  # type: ignore[misc]
                        readiness.url_ok(url, layout.pki) if url else bool(socket and socket.exists())
                    ),
                    timeout=TIMEOUT,
                    alive=lambda record=record: processes.alive(record),  # type: ignore[misc]
                )
            yield controllers
        finally:
            for record in reversed(started):
                processes.stop(record)
            for log in sorted(layout.logs.glob("*.log")):
                sys.stderr.write(f"--- {log.name}\n{log.read_text()[-3000:]}\n")


def _bound(controllers: Controllers, name: str) -> JSON:
    def bound() -> JSON | None:
        found = controllers.find("pvc", name) or {}
        if found.get("status", {}).get("phase") != "Bound":
            return None
        return controllers.find("pv", found["spec"]["volumeName"])

    return _wait(f"claim {name} bound", bound)


def test_claims_are_provisioned_on_the_selected_node_in_either_mode(controllers: Controllers) -> None:
    node = controllers.node
    controllers.apply(claim("fs", "64Mi", node=node), claim("blk", "32Mi", node=node, block=True))
    fs, blk = _bound(controllers, "fs"), _bound(controllers, "blk")
    for pv, size in ((fs, "64Mi"), (blk, "32Mi")):
        assert pv["spec"]["storageClassName"] == deploy.STORAGE_CLASS
        assert pv["spec"]["capacity"]["storage"] == size
        (term,) = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert term["matchExpressions"] == [{"key": TOPOLOGY_KEY, "operator": "In", "values": [node]}]
    assert (controllers.volumes / fs["spec"]["csi"]["volumeHandle"]).is_dir()
    image = controllers.volumes / f"{blk['spec']['csi']['volumeHandle']}.img"
    assert image.stat().st_size == 32 << 20


def test_a_read_write_many_claim_is_made_for_every_node(controllers: Controllers) -> None:
    # The scheduler's node is the only topology the provisioner offers; the volume is every node's anyway.
    rwx = ("ReadWriteMany",)
    controllers.apply(
        claim("rwx", "16Mi", node=controllers.node, access_modes=rwx),
        claim("rwx-blk", "8Mi", node=controllers.node, block=True, access_modes=rwx),
    )
    layout = controllers.layout
    every_node = sorted(layout.node(index).name for index in range(1, MAX_NODES + 1))
    fs, blk = _bound(controllers, "rwx"), _bound(controllers, "rwx-blk")
    for pv in (fs, blk):
        assert pv["spec"]["accessModes"] == ["ReadWriteMany"]
        assert pv["spec"]["storageClassName"] == deploy.STORAGE_CLASS
        terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        # One term per node (either admits the pod), each the driver's topology key.
        assert [e["key"] for term in terms for e in term["matchExpressions"]] == [TOPOLOGY_KEY] * len(terms)
        assert sorted(value for term in terms for e in term["matchExpressions"] for value in e["values"]) == (
            every_node
        )
    shared = deploy.shared_dir(layout) / "volumes"
    handles = [fs["spec"]["csi"]["volumeHandle"], f"{blk['spec']['csi']['volumeHandle']}.img"]
    assert all((shared / handle).exists() for handle in handles)
    assert not any((controllers.volumes / handle).exists() for handle in handles)

    controllers.kubectl("delete", "pvc", "rwx", "rwx-blk", "-n", "default", "--wait=true", "--timeout=60s")
    _wait("shared volumes removed", lambda: not any(shared.iterdir()))


def test_a_claim_grows_snapshots_and_restores_with_its_data(controllers: Controllers) -> None:
    node = controllers.node
    controllers.apply(claim("data", "16Mi", node=node))
    pv = _bound(controllers, "data")
    (controllers.volumes / pv["spec"]["csi"]["volumeHandle"] / "file").write_text("snapshotted\n")

    controllers.kubectl(
        "patch", "pvc", "data", "-n", "default", "--type=merge",
        "-p", '{"spec":{"resources":{"requests":{"storage":"48Mi"}}}}',
    )  # fmt: skip
    # A directory needs nothing on the node: the resizer completes the claim itself.
    _wait(
        "claim data grown",
        lambda: (
            (controllers.find("pvc", "data") or {}).get("status", {}).get("capacity", {}).get("storage")
            == "48Mi"
        ),
    )
    controllers.apply(
        {
            "apiVersion": "snapshot.storage.k8s.io/v1",
            "kind": "VolumeSnapshot",
            "metadata": {"name": "data-snap", "namespace": "default"},
            "spec": {"source": {"persistentVolumeClaimName": "data"}},
        }
    )
    snapshot = _wait(
        "snapshot ready",
        lambda: (
            (found := controllers.find("volumesnapshot", "data-snap"))
            and found.get("status", {}).get("readyToUse")
            and found
        ),
    )
    assert snapshot["status"]["restoreSize"] == "48Mi"
    content = controllers.find("volumesnapshotcontent", snapshot["status"]["boundVolumeSnapshotContentName"])
    assert content is not None
    assert content["spec"]["volumeSnapshotClassName"] == deploy.SNAPSHOT_CLASS

    controllers.apply(claim("restored", "48Mi", node=node, source="data-snap"))
    restored = _bound(controllers, "restored")
    assert (
        controllers.volumes / restored["spec"]["csi"]["volumeHandle"] / "file"
    ).read_text() == "snapshotted\n"

    controllers.kubectl(
        "delete", "volumesnapshot", "data-snap", "-n", "default", "--wait=true", "--timeout=60s"
    )
    controllers.kubectl("delete", "pvc", "data", "restored", "-n", "default", "--wait=true", "--timeout=60s")
    for gone in (pv, restored):
        name, handle = gone["metadata"]["name"], gone["spec"]["csi"]["volumeHandle"]
        _wait(f"volume {name} deleted", lambda name=name: controllers.find("pv", name) is None)
        _wait(f"{handle} removed", lambda handle=handle: not (controllers.volumes / handle).exists())
    snapshots = deploy.data_dir(controllers.layout, controllers.layout.node(1)) / "snapshots"
    _wait("snapshot data removed", lambda: not any(snapshots.iterdir()))
