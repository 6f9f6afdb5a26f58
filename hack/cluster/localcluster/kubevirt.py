"""KubeVirt's components deployed by hand on the local cluster, for functional tests and benchmarks, until
virt-operator installs them: virt-controller's Deployment, virt-handler's DaemonSet, and a node equipped
as virt-handler would leave it (labelled schedulable, with the ``devices.kubevirt.io/*`` resources its
device plugins advertise) for tests that run without virt-handler."""

from __future__ import annotations

import json
from typing import Any

from . import manifests
from .handle import Cluster
from .pki import serving_pair

INSTALL_NAMESPACE = "kubevirt"
VIRT_CONTROLLER = "virt-controller"
VIRT_HANDLER = "virt-handler"
CONTROLLER_CERT_DIR = "/etc/virt-controller/certificates"
DEVICES = ("devices.kubevirt.io/kvm", "devices.kubevirt.io/tun", "devices.kubevirt.io/vhost-net")
SCHEDULABLE_LABEL = "kubevirt.io/schedulable"

JSON = dict[str, Any]


def virt_controller_objects(
    cluster: Cluster, *, rbac: list[JSON], launcher_image: str, replicas: int = 2
) -> list[JSON]:
    """virt-controller's RBAC (given: the library defines it), certificate Secret and Deployment."""
    _ca, cert, key = serving_pair(f"{VIRT_CONTROLLER}.{INSTALL_NAMESPACE}.svc")
    labels = {"kubevirt.io": VIRT_CONTROLLER}
    image = cluster.image(VIRT_CONTROLLER)
    container = manifests.https_container(VIRT_CONTROLLER, image, 8443, {"certificates": CONTROLLER_CERT_DIR})
    container["args"] = ["--launcher-image", launcher_image, "--port", "8443"]
    volumes: list[dict[str, object]] = [{"name": "certificates", "secret": {"secretName": VIRT_CONTROLLER}}]
    deployment: JSON = manifests.deployment(VIRT_CONTROLLER, INSTALL_NAMESPACE, labels, container, volumes)
    deployment["spec"]["replicas"] = replicas
    deployment["spec"]["template"]["spec"]["serviceAccountName"] = "kubevirt-controller"
    return [*rbac, manifests.tls_secret(VIRT_CONTROLLER, INSTALL_NAMESPACE, cert, key), deployment]


def deploy_virt_controller(
    cluster: Cluster, *, rbac: list[JSON], launcher_image: str, replicas: int = 2
) -> None:
    """Deploys virt-controller and waits until one replica leads."""
    cluster.kubectl("create", "namespace", INSTALL_NAMESPACE, check=False)
    cluster.apply(
        *virt_controller_objects(cluster, rbac=rbac, launcher_image=launcher_image, replicas=replicas)
    )
    cluster.rollout(INSTALL_NAMESPACE, VIRT_CONTROLLER)
    cluster.wait_until("a virt-controller leads", lambda: controller_leaders(cluster) != [])


def remove_virt_controller(cluster: Cluster) -> None:
    cluster.kubectl(
        "delete", "deployment", VIRT_CONTROLLER, "-n", INSTALL_NAMESPACE, "--wait=true", check=False
    )


def controller_leaders(cluster: Cluster) -> list[str]:
    """The running virt-controller pods whose ``/leader`` says they lead."""
    leaders = []
    pods = cluster.kubectl_json(
        "get", "pods", "-n", INSTALL_NAMESPACE, "-l", f"kubevirt.io={VIRT_CONTROLLER}"
    )
    for pod in pods["items"]:  # type: ignore[attr-defined]
        name = pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp") or pod["status"].get("phase") != "Running":
            continue
        path = f"/api/v1/namespaces/{INSTALL_NAMESPACE}/pods/https:{name}:8443/proxy/leader"
        answer = cluster.kubectl("get", "--raw", path, check=False)
        if answer.returncode == 0 and json.loads(answer.stdout)["apiserver"]["leader"] == "true":
            leaders.append(name)
    return leaders


def deploy_virt_handler(cluster: Cluster, *, rbac: list[JSON], daemonset: JSON) -> None:
    """Deploys virt-handler's RBAC and DaemonSet (the image as built locally) and waits for its pod."""
    cluster.kubectl("create", "namespace", INSTALL_NAMESPACE, check=False)
    for container in daemonset["spec"]["template"]["spec"]["containers"]:
        container["imagePullPolicy"] = "Never"
        # Without virt-operator there are no certificate Secrets, so virt-handler serves no /healthz to
        # probe: its probes would hold the pod unready and restart it.
        container.pop("livenessProbe", None)
        container.pop("readinessProbe", None)
    cluster.apply(*rbac, daemonset)
    cluster.kubectl("rollout", "status", "daemonset", VIRT_HANDLER, "-n", INSTALL_NAMESPACE, "--timeout=120s")


# KVM guests hang on this kind of machine: launcher pods ask for no /dev/kvm and QEMU uses TCG.
EMULATION_KUBEVIRT_CR: JSON = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "KubeVirt",
    "metadata": {"name": "kubevirt", "namespace": INSTALL_NAMESPACE},
    "spec": {"configuration": {"developerConfiguration": {"useEmulation": True}}},
}


def apply_emulation_config(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", INSTALL_NAMESPACE, check=False)
    cluster.apply(EMULATION_KUBEVIRT_CR)


def remove_emulation_config(cluster: Cluster) -> None:
    cluster.kubectl("delete", "kubevirt", "kubevirt", "-n", INSTALL_NAMESPACE, check=False)


def remove_virt_handler(cluster: Cluster) -> None:
    cluster.kubectl("delete", "daemonset", VIRT_HANDLER, "-n", INSTALL_NAMESPACE, "--wait=true", check=False)


def node_name(cluster: Cluster) -> str:
    return str(cluster.kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").stdout)


def equip_node(cluster: Cluster, node: str, *, devices: int = 110) -> None:
    """What virt-handler does to its node that the scheduler looks at, without virt-handler (benchmarks
    that schedule more launcher pods than the machine could run guests for). The kubelet keeps the
    resources only while no device plugin of the same names has registered since it started."""
    cluster.kubectl("label", "node", node, f"{SCHEDULABLE_LABEL}=true", "--overwrite")
    capacity = {"status": {"capacity": {device: str(devices) for device in DEVICES}}}
    cluster.kubectl("patch", "node", node, "--subresource=status", "--type=merge", "-p", json.dumps(capacity))


def unequip_node(cluster: Cluster, node: str) -> None:
    cluster.kubectl("label", "node", node, f"{SCHEDULABLE_LABEL}-", check=False)
    removal = [{"op": "remove", "path": f"/status/capacity/{d.replace('/', '~1')}"} for d in DEVICES]
    cluster.kubectl(
        "patch", "node", node, "--subresource=status", "--type=json", "-p", json.dumps(removal), check=False
    )
