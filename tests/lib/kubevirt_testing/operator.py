"""virt-operator against an API server without controllers or nodes: the release manifest installed
as ``kubectl apply`` would, the operator run in-process, and the kube-controller-manager's part
(workload status) played by the test."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kubevirt.client import KUBEVIRTS, KubeClient, NotFoundError, Resource
from kubevirt.client.resources import CUSTOM_RESOURCE_DEFINITIONS, DAEMON_SETS, DEPLOYMENTS, NAMESPACES
from kubevirt.virt_operator.app import Options, VirtOperator
from kubevirt.virt_operator.resource.release import operator_manifest
from kubevirt.virt_operator.resources import BY_KIND
from kubevirt_testing.waiting import first_result

JSON = dict[str, Any]
NS = "kubevirt"
IMAGE = "registry.test/kubevirt/virt-operator:v1"
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
_RELEASE_RESOURCES = {**BY_KIND, "Namespace": NAMESPACES, "PriorityClass": PRIORITY_CLASSES}


def eventually(what: str, check: Callable[[], bool], timeout: float = 30.0) -> None:
    """Returns once ``check()`` holds; fails the test, naming ``what``, after ``timeout`` seconds."""
    first_result(what, check, timeout, interval=0.2)


def find(kube: KubeClient, resource: Resource, namespace: str | None, name: str) -> JSON | None:
    try:
        return kube.get(resource, namespace, name)
    except NotFoundError:
        return None


def kubevirt(kube: KubeClient, name: str = "kubevirt", namespace: str = NS) -> JSON | None:
    return find(kube, KUBEVIRTS, namespace, name)


def create_kubevirt(kube: KubeClient, name: str = "kubevirt", spec: JSON | None = None) -> None:
    body = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": name},
        "spec": spec or {},
    }
    kube.create(KUBEVIRTS, NS, body)


def condition(kv: JSON | None, kind: str) -> JSON:
    """The CR's condition of type ``kind`` ({} when absent)."""
    for found in ((kv or {}).get("status") or {}).get("conditions") or []:
        if found["type"] == kind:
            return dict(found)
    return {}


def phase(kube: KubeClient) -> str | None:
    return ((kubevirt(kube) or {}).get("status") or {}).get("phase")


def install_release(kube: KubeClient) -> None:
    """The operator manifest but its Deployment (the operator runs in the test's process instead)."""
    for obj in operator_manifest(NS, IMAGE):
        if obj["kind"] != "Deployment":
            resource = _RELEASE_RESOURCES[obj["kind"]]
            kube.create(resource, NS if resource.namespaced else None, obj)
    eventually("the KubeVirt CRD is established", lambda: _established(kube, "kubevirts.kubevirt.io"))


def _established(kube: KubeClient, name: str) -> bool:
    status = kube.get(CUSTOM_RESOURCE_DEFINITIONS, None, name).get("status") or {}
    return any(c["type"] == "Established" and c["status"] == "True" for c in status.get("conditions") or [])


def play_controller_manager(kube: KubeClient) -> None:
    """What the kube-controller-manager would report once every pod of the workloads is ready."""
    for name in ("virt-api", "virt-controller"):
        deployment = kube.get(DEPLOYMENTS, NS, name)
        replicas = deployment["spec"]["replicas"]
        status = {
            "observedGeneration": deployment["metadata"]["generation"],
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
        }
        kube.patch(DEPLOYMENTS, NS, name, {"status": status}, patch_type="merge", subresource="status")
    daemonset = kube.get(DAEMON_SETS, NS, "virt-handler")
    status = {
        "observedGeneration": daemonset["metadata"]["generation"],
        "desiredNumberScheduled": 1,
        "currentNumberScheduled": 1,
        "numberReady": 1,
        "updatedNumberScheduled": 1,
        "numberAvailable": 1,
        "numberMisscheduled": 0,
    }
    kube.patch(DAEMON_SETS, NS, "virt-handler", {"status": status}, patch_type="merge", subresource="status")


def deployed(kube: KubeClient) -> None:
    """Reports the workloads ready and waits for the operator to say Deployed."""
    play_controller_manager(kube)
    eventually("Deployed", lambda: phase(kube) == "Deployed")


@contextmanager
def running_operator(api: KubeClient, *, wait_for_lead: bool = True) -> Iterator[VirtOperator]:
    """virt-operator on threads, talking to the API as ``api``, with a short Lease so that a successor
    takes over within seconds."""
    options = Options(
        namespace=NS, operator_image=IMAGE, lease_duration=4.0, renew_deadline=3.0, retry_period=0.5
    )
    operator = VirtOperator(api, options)
    thread = threading.Thread(target=operator.run, daemon=True)
    thread.start()
    try:
        if wait_for_lead:
            eventually("the operator leads", operator.leading.is_set)
        yield operator
    finally:
        operator.stop()
        thread.join(timeout=15)
