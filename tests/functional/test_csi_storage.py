"""The local cluster's CSI storage (localcluster.csi): the default StorageClass ``local`` provisions a volume
of each mode on the node of the pod that first uses it, the pod reads and writes it, the claim grows while
the pod runs, a VolumeSnapshot of it restores into a new claim with the data as it was, and deleting the
claims removes the volumes; on the two-node cluster a claim whose pod runs on node 2 lives there.
"""

from __future__ import annotations

import json
from typing import Any

from localcluster.csi import deploy
from localcluster.csi.driver import DRIVER_NAME, TOPOLOGY_KEY
from localcluster.handle import Cluster
from localcluster.pvc_vms import claim, volume_node, volume_path

from kubevirt_testing.waiting import first_result

JSON = dict[str, Any]
TIMEOUT = 120
MIB = 1 << 20
DEVICE = "/dev/xvda"
# Prints a block device's size (the image has Python, not necessarily util-linux).
DEVICE_SIZE = f"import os; f = os.open('{DEVICE}', os.O_RDONLY); print(os.lseek(f, 0, os.SEEK_END))"


def _apply(cluster: Cluster, namespace: str, *objects: JSON) -> None:
    cluster.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=json.dumps({"kind": "List", "apiVersion": "v1", "items": list(objects)}),
    )


def _pod(cluster: Cluster, name: str, claim: str, *, block: bool, node: str | None = None) -> JSON:
    container: JSON = {
        "name": "user",
        "image": cluster.image("virt-launcher"),
        "imagePullPolicy": "Never",
        "command": ["sleep", "3600"],
    }
    spec: JSON = {
        "containers": [container],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        "terminationGracePeriodSeconds": 0,
    }
    if block:
        container["volumeDevices"] = [{"name": "data", "devicePath": DEVICE}]
        container["securityContext"] = {"runAsUser": 0}
    else:
        # Not root: the kubelet hands the volume's files to the pod's fsGroup (CSIDriver fsGroupPolicy File).
        container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        spec["securityContext"] = {"runAsUser": 107, "runAsGroup": 107, "fsGroup": 107}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _wait_running(cluster: Cluster, namespace: str, pod: str) -> JSON:
    def running() -> JSON | None:
        found = cluster.find("pod", pod, namespace)
        return found if found and found.get("status", {}).get("phase") == "Running" else None

    return first_result(f"pod {pod} Running", running, TIMEOUT)


def _exec(cluster: Cluster, namespace: str, pod: str, *command: str) -> str:
    return cluster.kubectl("exec", "-n", namespace, pod, "--", *command).stdout


def _bound_pv(cluster: Cluster, namespace: str, claim: str) -> JSON:
    def bound() -> str | None:
        found = cluster.find("pvc", claim, namespace) or {}
        return (
            found.get("spec", {}).get("volumeName")
            if found.get("status", {}).get("phase") == "Bound"
            else None
        )

    volume = first_result(f"claim {claim} Bound", bound, TIMEOUT)
    pv = cluster.find("pv", volume)
    assert pv is not None
    return pv


def _capacity(cluster: Cluster, namespace: str, claim: str) -> str:
    found = cluster.find("pvc", claim, namespace) or {}
    return str(found.get("status", {}).get("capacity", {}).get("storage", ""))


def _snapshot(cluster: Cluster, namespace: str, name: str, claim: str) -> JSON:
    snapshot = {
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshot",
        "metadata": {"name": name},
        "spec": {"source": {"persistentVolumeClaimName": claim}},  # the default VolumeSnapshotClass
    }
    _apply(cluster, namespace, snapshot)

    def ready() -> JSON | None:
        found = cluster.find("volumesnapshot", name, namespace) or {}
        return found if found.get("status", {}).get("readyToUse") is True else None

    return first_result(f"snapshot {name} readyToUse", ready, TIMEOUT)


def test_the_default_storage_class_and_snapshot_class_are_the_drivers(cluster: Cluster) -> None:
    storage_class = cluster.kubectl_json("get", "storageclass", deploy.STORAGE_CLASS)
    assert storage_class["provisioner"] == DRIVER_NAME
    assert storage_class["volumeBindingMode"] == "WaitForFirstConsumer"
    assert storage_class["allowVolumeExpansion"] is True
    annotations = storage_class["metadata"]["annotations"]  # type: ignore[index]
    assert annotations["storageclass.kubernetes.io/is-default-class"] == "true"
    snapshot_class = cluster.kubectl_json("get", "volumesnapshotclass", deploy.SNAPSHOT_CLASS)
    assert snapshot_class["driver"] == DRIVER_NAME
    csi_node = cluster.kubectl_json("get", "csinode", cluster.layout.node_name)
    drivers = {d["name"]: d for d in csi_node["spec"]["drivers"]}  # type: ignore[index]
    assert drivers[DRIVER_NAME]["topologyKeys"] == [TOPOLOGY_KEY]
    node = cluster.kubectl_json("get", "node", cluster.layout.node_name)
    assert node["metadata"]["labels"][TOPOLOGY_KEY] == cluster.layout.node_name  # type: ignore[index]


def test_a_filesystem_claim_is_provisioned_grown_snapshotted_and_restored(
    cluster: Cluster, namespace: str
) -> None:
    _apply(cluster, namespace, claim("fs", "64Mi", block=False), _pod(cluster, "fs-user", "fs", block=False))
    pod = _wait_running(cluster, namespace, "fs-user")
    pv = _bound_pv(cluster, namespace, "fs")
    assert pv["spec"]["storageClassName"] == deploy.STORAGE_CLASS
    assert volume_node(pv) == pod["spec"]["nodeName"]  # where the scheduler put the first pod
    _exec(cluster, namespace, "fs-user", "sh", "-c", "echo before > /data/file")
    assert volume_path(cluster, pv).joinpath("file").read_text() == "before\n"

    cluster.kubectl(
        "patch",
        "pvc",
        "fs",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"resources":{"requests":{"storage":"128Mi"}}}}',
    )
    first_result("claim fs grown to 128Mi", lambda: _capacity(cluster, namespace, "fs") == "128Mi", TIMEOUT)

    _snapshot(cluster, namespace, "fs-snap", "fs")
    _exec(cluster, namespace, "fs-user", "sh", "-c", "echo after > /data/file")
    _apply(
        cluster,
        namespace,
        claim("fs-restored", "128Mi", block=False, source="fs-snap"),
        _pod(cluster, "fs-restored-user", "fs-restored", block=False),
    )
    _wait_running(cluster, namespace, "fs-restored-user")
    assert _exec(cluster, namespace, "fs-restored-user", "cat", "/data/file") == "before\n"
    assert _exec(cluster, namespace, "fs-user", "cat", "/data/file") == "after\n"
    _delete_and_check_gone(cluster, namespace, [pv, _bound_pv(cluster, namespace, "fs-restored")])


def test_a_block_claim_is_a_device_that_grows_while_its_pod_runs(cluster: Cluster, namespace: str) -> None:
    _apply(cluster, namespace, claim("blk", "32Mi", block=True), _pod(cluster, "blk-user", "blk", block=True))
    pod = _wait_running(cluster, namespace, "blk-user")
    pv = _bound_pv(cluster, namespace, "blk")
    assert pv["spec"]["volumeMode"] == "Block"
    assert volume_node(pv) == pod["spec"]["nodeName"]
    assert int(_exec(cluster, namespace, "blk-user", "python3", "-c", DEVICE_SIZE)) == 32 * MIB
    write = f"printf 'block data' | dd of={DEVICE} conv=notrunc,fsync status=none"
    _exec(cluster, namespace, "blk-user", "sh", "-c", write)

    cluster.kubectl(
        "patch",
        "pvc",
        "blk",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"resources":{"requests":{"storage":"64Mi"}}}}',
    )
    first_result("claim blk grown to 64Mi", lambda: _capacity(cluster, namespace, "blk") == "64Mi", TIMEOUT)
    first_result(
        "the pod's device grown to 64 MiB",
        lambda: int(_exec(cluster, namespace, "blk-user", "python3", "-c", DEVICE_SIZE)) == 64 * MIB,
        TIMEOUT,
    )

    _snapshot(cluster, namespace, "blk-snap", "blk")
    _apply(
        cluster,
        namespace,
        claim("blk-restored", "64Mi", block=True, source="blk-snap"),
        _pod(cluster, "blk-restored-user", "blk-restored", block=True),
    )
    _wait_running(cluster, namespace, "blk-restored-user")
    read = f"dd if={DEVICE} bs=10 count=1 status=none"
    assert _exec(cluster, namespace, "blk-restored-user", "sh", "-c", read) == "block data"
    _delete_and_check_gone(cluster, namespace, [pv, _bound_pv(cluster, namespace, "blk-restored")])


def _delete_and_check_gone(cluster: Cluster, namespace: str, pvs: list[JSON]) -> None:
    """Deleting the pods, snapshots and claims deletes the volumes, their data and their loop devices."""
    for kind in ("pod", "volumesnapshot", "pvc"):
        cluster.kubectl("delete", kind, "--all", "-n", namespace, "--wait=true", "--timeout=120s")
    for pv in pvs:
        name = pv["metadata"]["name"]
        first_result(f"volume {name} deleted", lambda name=name: cluster.find("pv", name) is None, TIMEOUT)
        path = volume_path(cluster, pv)
        first_result(f"{path} removed", lambda path=path: not path.exists(), TIMEOUT)
    # The kubelet unmaps a device shortly after its pod goes; then no loop device is over the volumes (nor
    # over the kubelet's publish paths, which carry the PV names).
    names = [str(pv["metadata"]["name"]) for pv in pvs] + [
        str(pv["spec"]["csi"]["volumeHandle"]) for pv in pvs
    ]

    def loops() -> list[str]:
        return [item for item in deploy.leftovers(cluster.layout) if any(name in item for name in names)]

    first_result("no loop device left", lambda: not loops(), 30)


def test_a_claim_lives_on_the_node_of_its_first_pod(two_node_cluster: Cluster, namespace: str) -> None:
    cluster = two_node_cluster
    second = cluster.layout.node(2).name
    _apply(
        cluster,
        namespace,
        claim("remote", "16Mi", block=False),
        _pod(cluster, "remote-user", "remote", block=False, node=second),
        claim("remote-blk", "16Mi", block=True),
        _pod(cluster, "remote-blk-user", "remote-blk", block=True, node=second),
    )
    _wait_running(cluster, namespace, "remote-user")
    _wait_running(cluster, namespace, "remote-blk-user")
    pv = _bound_pv(cluster, namespace, "remote")
    block_pv = _bound_pv(cluster, namespace, "remote-blk")
    assert volume_node(pv) == second
    assert volume_node(block_pv) == second
    _exec(cluster, namespace, "remote-user", "sh", "-c", "echo on node 2 > /data/file")
    assert volume_path(cluster, pv, second).joinpath("file").read_text() == "on node 2\n"
    assert int(_exec(cluster, namespace, "remote-blk-user", "python3", "-c", DEVICE_SIZE)) == 16 * MIB
    # Node 1 has nothing of them.
    assert not volume_path(cluster, pv, cluster.layout.node_name).exists()
    _delete_and_check_gone(cluster, namespace, [pv, block_pv])
