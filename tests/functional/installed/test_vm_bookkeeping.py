"""What KubeVirt's clients read from a VM's bookkeeping on a real API server, where KubeVirt's conformance
specs found this project different: the generations a start and template edits leave (a VM written by a Go
client, whose template carries ``creationTimestamp: null``), the start revision the VMI names, deletion
with the orphan and
foreground policies (the garbage collector rewrites the ControllerRevision's owner references, which the
API server allows only if the revision's data survives its patch round trip byte for byte), and a VM whose
claim does not exist yet.

The VMs select a label no node has: their VMIs stay Scheduling, which is all these specs need.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from localcluster.handle import Cluster
from localcluster.up import virtctl

pytestmark = pytest.mark.usefixtures("kubevirt")
NOWHERE = {"kubevirt.io/functional-test": "nowhere"}


def _vm(name: str, *, volumes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "domain": {"resources": {"requests": {"memory": "128Mi"}}, "devices": {}},
        "nodeSelector": NOWHERE,
        "terminationGracePeriodSeconds": 0,
    }
    if volumes:
        spec["volumes"] = volumes
        spec["domain"]["devices"]["disks"] = [{"name": v["name"], "disk": {"bus": "virtio"}} for v in volumes]
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {
            "runStrategy": "Always",
            # '&', '<' and '>' are what Go's encoder escapes: the stored revision must hold them Go's way.
            "template": {
                "metadata": {"annotations": {"note": "a & b <c> é"}},
                "spec": spec,
            },
        },
    }


def _started(
    cluster: Cluster, namespace: str, name: str, **kwargs: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Creates the VM and waits for its VMI; returns both as the API server has them."""
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(_vm(name, **kwargs)))
    cluster.wait_until("the VMI exists", lambda: cluster.find("vmi", name, namespace) is not None)
    vm, vmi = cluster.find("vm", name, namespace), cluster.find("vmi", name, namespace)
    assert vm is not None
    assert vmi is not None
    return vm, vmi


def _revision(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    return cluster.find("controllerrevision", name, namespace)


def _generations(cluster: Cluster, namespace: str, name: str) -> tuple[int, int, int, str]:
    vm, vmi = cluster.find("vm", name, namespace), cluster.find("vmi", name, namespace)
    assert vm is not None
    assert vmi is not None
    status = vm.get("status", {})
    annotation = vmi["metadata"]["annotations"]["kubevirt.io/vm-generation"]
    return (
        vm["metadata"]["generation"],
        status.get("desiredGeneration"),
        status.get("observedGeneration"),
        annotation,
    )


def test_a_start_and_template_edits_leave_the_generations_kubevirts_clients_expect(
    cluster: Cluster, namespace: str
) -> None:
    vm = _vm("generations")
    vm["spec"]["runStrategy"] = "Halted"
    vm["spec"]["template"]["metadata"]["creationTimestamp"] = None  # as every Go client writes it
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(vm))
    started = virtctl(cluster, "start", "generations", "-n", namespace)
    assert started.returncode == 0, started.stderr
    cluster.wait_until("the VMI exists", lambda: cluster.find("vmi", "generations", namespace) is not None)
    cluster.wait_until(
        "generation 2 observed", lambda: _generations(cluster, namespace, "generations") == (2, 2, 2, "2")
    )

    labels = [{"op": "replace", "path": "/spec/template/metadata/labels", "value": {"testkey": "testvalue"}}]
    cluster.kubectl("patch", "vm", "generations", "-n", namespace, "--type=json", "-p", json.dumps(labels))
    # The running VMI was built from generation 2: the VM wants 3, the VMI keeps its annotation.
    cluster.wait_until(
        "generation 3 desired", lambda: _generations(cluster, namespace, "generations") == (3, 3, 2, "2")
    )


def test_the_vmi_names_the_start_revision_which_holds_the_vms_spec(cluster: Cluster, namespace: str) -> None:
    vm, vmi = _started(cluster, namespace, "recorded")
    expected = f"revision-start-vm-{vm['metadata']['uid']}-{vm['metadata']['generation']}"
    assert vmi["status"]["virtualMachineRevisionName"] == expected
    assert vmi["metadata"]["annotations"]["kubevirt.io/vm-generation"] == str(vm["metadata"]["generation"])
    revision = _revision(cluster, namespace, expected)
    assert revision is not None
    assert revision["revision"] == vm["metadata"]["generation"]
    assert revision["data"]["spec"] == vm["spec"]


def test_orphan_deletion_leaves_the_vmi_and_the_revision_without_an_owner(
    cluster: Cluster, namespace: str
) -> None:
    _vm_obj, vmi = _started(cluster, namespace, "orphaned")
    revision_name = vmi["status"]["virtualMachineRevisionName"]
    deleted = cluster.kubectl(
        "delete", "vm", "orphaned", "-n", namespace, "--cascade=orphan", "--timeout=60s", check=False
    )
    assert deleted.returncode == 0, deleted.stderr
    assert cluster.find("vm", "orphaned", namespace) is None
    left = cluster.find("vmi", "orphaned", namespace)
    assert left is not None
    assert left["metadata"]["uid"] == vmi["metadata"]["uid"]
    assert not left["metadata"].get("ownerReferences")
    revision = _revision(cluster, namespace, revision_name)
    assert revision is not None
    assert not revision["metadata"].get("ownerReferences")
    assert revision["data"]["spec"]["template"]["metadata"]["annotations"]["note"] == "a & b <c> é"


def test_foreground_deletion_removes_the_vmi_and_the_revision_first(cluster: Cluster, namespace: str) -> None:
    _vm_obj, vmi = _started(cluster, namespace, "foreground")
    revision_name = vmi["status"]["virtualMachineRevisionName"]
    deleted = cluster.kubectl(
        "delete", "vm", "foreground", "-n", namespace, "--cascade=foreground", "--timeout=90s", check=False
    )
    assert deleted.returncode == 0, deleted.stderr
    assert cluster.find("vm", "foreground", namespace) is None
    assert cluster.find("vmi", "foreground", namespace) is None
    assert _revision(cluster, namespace, revision_name) is None


def test_a_vm_on_a_missing_claim_shows_error_pvc_not_found_until_the_claim_appears(
    cluster: Cluster, namespace: str
) -> None:
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "not-yet"}}]
    _started(cluster, namespace, "waiting", volumes=volumes)

    def printable() -> str:
        vm = cluster.find("vm", "waiting", namespace)
        return str((vm or {}).get("status", {}).get("printableStatus"))

    cluster.wait_until("the VM shows ErrorPvcNotFound", lambda: printable() == "ErrorPvcNotFound")
    vmi = cluster.find("vmi", "waiting", namespace)
    assert vmi is not None
    assert vmi["status"]["phase"] == "Pending"
    scheduled = next(c for c in vmi["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    assert scheduled["message"] == f"PVC {namespace}/not-yet does not exist, waiting for it to appear"
    pods = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", "kubevirt.io=virt-launcher")["items"]
    assert pods == []

    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "not-yet"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}},
    }
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(claim))
    cluster.wait_until(
        "the launcher pod is created once the claim exists",
        lambda: bool(
            cluster.kubectl_json("get", "pods", "-n", namespace, "-l", "kubevirt.io=virt-launcher")["items"]
        ),
    )
    cluster.wait_until("the VM leaves ErrorPvcNotFound", lambda: printable() != "ErrorPvcNotFound")
