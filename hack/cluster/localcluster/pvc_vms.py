"""VMs on PersistentVolumeClaims of the local cluster's CSI storage, as examples/ describes them: the root
claim filled from the CirrOS-compatible guest's containerDisk image by the example's import Job, and the
example's PVC-root VM with data claims added as disks with serials. Shared by the functional tests and
hack/bench-storage."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .csi.driver import TOPOLOGY_KEY
from .handle import Cluster
from .layout import REPO, image_name

JSON = dict[str, Any]
EXAMPLES = REPO / "examples"
IMPORT_EXAMPLE = EXAMPLES / "pvc-root-disk-import.yaml"
VM_EXAMPLE = EXAMPLES / "vm-test-guest-pvc-root.yaml"
ROOT_CLAIM = "test-guest-cirros-root"
IMPORT_JOB = "test-guest-cirros-root-import"


@dataclass(frozen=True)
class DataDisk:
    """A claim attached as a virtio disk whose serial the guest reads in /sys/block/vd*/serial; as a
    ``dataVolume`` volume naming the claim (as KubeVirt takes one without CDI's DataVolume) if asked."""

    volume: str
    claim: str
    serial: str
    data_volume: bool = False


def claim(
    name: str,
    size: str,
    *,
    block: bool = False,
    source: str = "",
    node: str = "",
    access_modes: tuple[str, ...] = ("ReadWriteOnce",),
) -> JSON:
    """A claim of ``size`` on the default StorageClass, ReadWriteOnce unless ``access_modes`` says otherwise
    (ReadWriteMany: a volume every node can use at once); ``source`` restores a VolumeSnapshot; ``node`` is
    the scheduler's mark of a WaitForFirstConsumer claim's node once it placed the claim's first pod, which
    has the claim provisioned without a pod."""
    spec: JSON = {
        "accessModes": list(access_modes),
        "volumeMode": "Block" if block else "Filesystem",
        "resources": {"requests": {"storage": size}},
    }
    if source:
        spec["dataSource"] = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": source}
    metadata: JSON = {"name": name}
    if node:
        metadata["annotations"] = {"volume.kubernetes.io/selected-node": node}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}


def import_root_claim(cluster: Cluster, namespace: str, timeout: float = 180.0) -> None:
    """Applies the import example in ``namespace`` and waits for its Job; fails with the Job's logs."""
    cluster.kubectl("apply", "-n", namespace, "-f", str(IMPORT_EXAMPLE))
    _wait_job(cluster, namespace, IMPORT_JOB, timeout)


def blank_disk_image(
    cluster: Cluster, namespace: str, claim_name: str, size: str, timeout: float = 120.0
) -> None:
    """A sparse raw ``disk.img`` of ``size`` written into Filesystem claim ``claim_name`` by a Job, owned
    by the qemu user (what CDI's blank DataVolume leaves; a hotplugged Filesystem claim must hold one)."""
    job = f"{claim_name}-blank"
    container = {
        "name": "blank",
        "image": image_name("virt-launcher"),
        "command": ["qemu-img", "create", "-f", "raw", "/pvc/disk.img", size],
        "volumeMounts": [{"name": "pvc", "mountPath": "/pvc"}],
    }
    pod_spec = {
        "restartPolicy": "Never",
        "securityContext": {"runAsUser": 107, "runAsGroup": 107, "fsGroup": 107},
        "containers": [container],
        "volumes": [{"name": "pvc", "persistentVolumeClaim": {"claimName": claim_name}}],
    }
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job},
        "spec": {"backoffLimit": 2, "template": {"spec": pod_spec}},
    }
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(manifest))
    _wait_job(cluster, namespace, job, timeout)


def _wait_job(cluster: Cluster, namespace: str, job: str, timeout: float) -> None:
    """Waits for Job ``job`` to complete; fails with its pods' logs."""
    waited = cluster.kubectl(
        "wait",
        "-n",
        namespace,
        "--for=condition=complete",
        f"job/{job}",
        f"--timeout={timeout:.0f}s",
        check=False,
        timeout=timeout + 10,
    )
    if waited.returncode != 0:
        logs = cluster.kubectl("logs", "-n", namespace, f"job/{job}", "--all-containers", check=False)
        pods = cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False)
        raise AssertionError(
            f"Job {job} did not complete: {waited.stderr}\n{logs.stdout}{logs.stderr}\n{pods.stdout}"
        )


def pvc_root_vm(name: str, disks: tuple[DataDisk, ...] = (), *, user_data: str | None = None) -> JSON:
    """The example's PVC-root VM named ``name``, started at once, without a NIC (the boot and the console
    are what its users need), with ``disks`` added and, if given, other cloud-init user data."""
    vm: JSON = copy.deepcopy(_vm_example())
    vm["metadata"] = {"name": name}
    vm["spec"]["runStrategy"] = "Always"
    template = vm["spec"]["template"]
    template["metadata"] = {"labels": {"kubevirt.io/vm": name}}
    spec = template["spec"]
    devices = spec["domain"]["devices"]
    devices["autoattachPodInterface"] = False
    for disk in disks:
        devices["disks"].append({"name": disk.volume, "serial": disk.serial, "disk": {"bus": "virtio"}})
        source = (
            {"dataVolume": {"name": disk.claim}}
            if disk.data_volume
            else {"persistentVolumeClaim": {"claimName": disk.claim}}
        )
        spec["volumes"].append({"name": disk.volume, **source})
    if user_data is not None:
        (cloud_init,) = [v for v in spec["volumes"] if "cloudInitNoCloud" in v]
        cloud_init["cloudInitNoCloud"] = {"userData": user_data}
    return vm


def container_disk_vm(name: str, disks: tuple[DataDisk, ...] = (), *, user_data: str | None = None) -> JSON:
    """:func:`pvc_root_vm`'s guest with its root disk from the containerDisk image instead of the claim."""
    vm = pvc_root_vm(name, disks, user_data=user_data)
    (root,) = [v for v in vm["spec"]["template"]["spec"]["volumes"] if v["name"] == "rootdisk"]
    root.pop("persistentVolumeClaim")
    root["containerDisk"] = {"image": image_name("test-guest-cirros-compatible")}
    return vm


def volume_node(pv: JSON) -> str:
    """The node a node-local volume of the driver lives on (its topology; a shared one has every node's)."""
    (term,) = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    (expression,) = term["matchExpressions"]
    assert expression["key"] == TOPOLOGY_KEY
    (node,) = expression["values"]
    return str(node)


def volume_path(cluster: Cluster, pv: JSON, node: str = "") -> Path:
    """Where the CSI driver keeps ``pv`` on its node (or on ``node``): the folder of a filesystem volume,
    the image file behind a block volume's loop device."""
    handle = pv["spec"]["csi"]["volumeHandle"]
    volumes = cluster.layout.run / "csi" / (node or volume_node(pv)) / "volumes"
    return volumes / (f"{handle}.img" if pv["spec"].get("volumeMode") == "Block" else handle)


def bound_volume(cluster: Cluster, namespace: str, claim_name: str) -> JSON:
    """The PersistentVolume of a bound claim."""
    pvc = cluster.find("pvc", claim_name, namespace) or {}
    if pvc.get("status", {}).get("phase") != "Bound":
        raise AssertionError(f"claim {namespace}/{claim_name} is not Bound: {pvc.get('status')}")
    pv = cluster.find("pv", pvc["spec"]["volumeName"])
    if pv is None:
        raise AssertionError(f"the volume of claim {namespace}/{claim_name} is gone")
    return pv


def _vm_example() -> JSON:
    loaded = yaml.safe_load(VM_EXAMPLE.read_text())
    assert isinstance(loaded, dict)
    return loaded
