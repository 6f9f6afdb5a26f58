"""virt-operator on the local cluster, installed as KubeVirt's users install it: the release operator
manifest, then a KubeVirt CR. The CR reaches Deployed with KubeVirt's conditions, every component is
ready, virt-api answers through its APIService and webhooks, a VM runs; a deleted virt-api Deployment is
restored; deleting the CR leaves nothing of KubeVirt behind.

The other functional modules deploy components by hand into the same namespace, so this module installs
and uninstalls within its own fixture and restores the CRDs that were there before it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from localcluster import install, up
from localcluster.handle import Cluster
from localcluster.prometheus import MONITORING_CRDS, monitoring_crd
from localcluster.vmis import INVALID_VMI_CAUSE, invalid_vmi_refusal

REPO = Path(__file__).resolve().parents[2]
VM_MANIFEST = REPO / "examples" / "vm-test-guest-no-network.yaml"
VM_NAMESPACE = f"operator-test-{os.getpid()}"
APISERVICES = ("v1.subresources.kubevirt.io", "v1alpha3.subresources.kubevirt.io")
WEBHOOKS = (
    ("validatingwebhookconfiguration", "virt-api-validator"),
    ("mutatingwebhookconfiguration", "virt-api-mutator"),
)
FINALIZER = "foregroundDeleteKubeVirt"
# What ``kubectl get`` lists after an uninstall (not ``all``: it would name the deleted CRDs' categories);
# nothing of these may carry the operator's label.
EVERY_KIND = (
    "deployment,daemonset,replicaset,pod,service,crd,apiservice,clusterrole,clusterrolebinding,role,rolebinding,serviceaccount,secret,configmap,"
    "validatingwebhookconfiguration,mutatingwebhookconfiguration,poddisruptionbudget,priorityclass"
)

JSON = dict[str, Any]


@pytest.fixture(scope="module")
def installed(cluster: Cluster) -> Iterator[float]:
    """KubeVirt installed from the release manifests; yields the seconds the CR took to be Deployed."""
    with install.installed(cluster) as deployed:
        print(f"KubeVirt Deployed {deployed:.1f} s after the operator manifest was applied")
        cluster.fresh_namespace(VM_NAMESPACE)
        try:
            yield deployed
        finally:
            cluster.kubectl(
                "delete", "namespace", VM_NAMESPACE, "--ignore-not-found", "--wait=true", check=False
            )


def test_cr_is_deployed_with_kubevirts_conditions(cluster: Cluster, installed: float) -> None:
    cr = install.kubevirt(cluster)
    assert cr is not None
    status = cr["status"]
    assert status["phase"] == "Deployed"
    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["Available"]["status"], conditions["Available"]["reason"]) == (
        "True",
        "AllComponentsReady",
    )
    assert conditions["Available"]["message"] == "All components are ready."
    assert (conditions["Progressing"]["status"], conditions["Degraded"]["status"]) == ("False", "False")
    assert (conditions["Created"]["status"], conditions["Created"]["reason"]) == (
        "True",
        "AllResourcesCreated",
    )
    assert conditions["Created"]["message"] == "All resources were created."
    assert status["observedGeneration"] == cr["metadata"]["generation"]
    assert FINALIZER in cr["metadata"]["finalizers"]
    assert status["operatorVersion"]
    assert status["targetKubeVirtVersion"] == status["observedKubeVirtVersion"]


def test_every_component_is_ready(cluster: Cluster, installed: float) -> None:
    # Deployed needs one ready replica of each Deployment (as KubeVirt's readiness check); all of them follow.
    for name in (install.OPERATOR, *install.COMPONENT_DEPLOYMENTS):
        cluster.rollout(install.NAMESPACE, name)
        deployment = cluster.find("deployment", name, install.NAMESPACE)
        assert deployment is not None, name
        assert deployment["status"].get("readyReplicas") == deployment["spec"]["replicas"] == 2, name
    handler = cluster.find("daemonset", install.HANDLER, install.NAMESPACE)
    assert handler is not None
    assert handler["status"]["numberReady"] == handler["status"]["desiredNumberScheduled"] >= 1
    # As on any node whose root is a shared mount: KubeVirt's own path for what virt-handler shares with
    # launchers (Bidirectional, on /), no customizeComponents patch to move it.
    volumes = {v["name"]: v for v in handler["spec"]["template"]["spec"]["volumes"]}
    assert volumes["virt-share-dir"]["hostPath"]["path"] == "/var/run/kubevirt"
    cr = install.kubevirt(cluster)
    assert cr is not None
    assert not cr["spec"].get("customizeComponents")
    for name in APISERVICES:
        apiservice = cluster.find("apiservice", name)
        assert apiservice is not None, name
        available = {c["type"]: c["status"] for c in apiservice["status"]["conditions"]}
        assert available["Available"] == "True", name


def test_the_node_labeller_labels_the_node(cluster: Cluster, installed: float) -> None:
    # The handler DaemonSet's node-labeller init container hands libvirt's capabilities to virt-handler.
    def labelled() -> bool:
        nodes = cluster.kubectl_json("get", "nodes")
        assert isinstance(nodes, dict)
        return all(
            (node["metadata"].get("labels") or {}).get("machine-type.node.kubevirt.io/q35") == "true"
            and any(key.startswith("cpu-model.node.kubevirt.io/") for key in node["metadata"]["labels"])
            for node in nodes["items"]
        )

    cluster.wait_until(
        "every node carries the labeller's machine-type and CPU-model labels", labelled, timeout=120
    )


def test_virt_api_answers_through_its_apiservice(cluster: Cluster, installed: float) -> None:
    health = json.loads(cluster.kubectl("get", "--raw", "/apis/subresources.kubevirt.io/v1/healthz").stdout)
    assert health["apiserver"]["connectivity"] == "ok"


def test_webhooks_refuse_an_invalid_vmi(cluster: Cluster, installed: float) -> None:
    assert INVALID_VMI_CAUSE in invalid_vmi_refusal(cluster, VM_NAMESPACE)


def test_vm_starts_through_virtctl_and_runs(cluster: Cluster, installed: float) -> None:
    name = up.start_vm(cluster, VM_MANIFEST, namespace=VM_NAMESPACE, timeout=300)
    vmi = cluster.find("vmi", name, VM_NAMESPACE)
    assert vmi is not None
    assert vmi["status"]["phase"] == "Running"
    assert vmi["status"]["launcherContainerImageVersion"] == "localhost/kubevirt/virt-launcher:devel"
    stopped = up.virtctl(cluster, "stop", name, "-n", VM_NAMESPACE)
    assert stopped.returncode == 0, stopped.stderr
    cluster.wait_until(
        f"VMI {name} is gone", lambda: cluster.find("vmi", name, VM_NAMESPACE) is None, timeout=120
    )


def test_deleted_virt_api_is_restored_and_webhooks_answer_again(cluster: Cluster, installed: float) -> None:
    before = cluster.find("deployment", "virt-api", install.NAMESPACE)
    assert before is not None
    cluster.kubectl("delete", "deployment", "virt-api", "-n", install.NAMESPACE, "--wait=true")

    def restored_and_ready() -> bool:
        now = cluster.find("deployment", "virt-api", install.NAMESPACE)
        return (
            now is not None
            and now["metadata"]["uid"] != before["metadata"]["uid"]
            and now["status"].get("readyReplicas") == now["spec"]["replicas"]
        )

    cluster.wait_until("virt-api recreated and ready", restored_and_ready, timeout=180)
    cluster.wait_until(
        "the webhooks refuse an invalid VMI again",
        lambda: INVALID_VMI_CAUSE in invalid_vmi_refusal(cluster, VM_NAMESPACE),
        timeout=60,
    )
    install.wait_deployed(cluster, timeout=120, progress=lambda line: None)


def test_monitoring_objects_follow_prometheus(cluster: Cluster, installed: float) -> None:
    """With the monitoring CRDs and a prometheus-k8s account in `monitoring`, virt-operator installs
    KubeVirt's ServiceMonitor, PrometheusRule and Role; without the account they go."""
    crds = [monitoring_crd(plural, kind) for plural, kind in MONITORING_CRDS]
    installed_objects = (
        ("prometheusrule", "kubevirt", "prometheus-kubevirt-rules"),
        ("servicemonitor", "monitoring", "prometheus-kubevirt-rules"),
        ("role", "kubevirt", "kubevirt-monitoring"),
        ("rolebinding", "kubevirt", "kubevirt-monitoring"),
    )

    def present() -> list[bool]:
        return [
            cluster.kubectl("get", kind, name, "-n", namespace, check=False).returncode == 0
            for kind, namespace, name in installed_objects
        ]

    try:
        cluster.kubectl(
            "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": crds})
        )
        cluster.kubectl("create", "namespace", "monitoring")
        cluster.kubectl("create", "serviceaccount", "prometheus-k8s", "-n", "monitoring")
        cluster.wait_until("the monitoring objects installed", lambda: all(present()), 120)
        rule = cluster.kubectl_json("get", "prometheusrule", "prometheus-kubevirt-rules", "-n", "kubevirt")
        groups = {g["name"]: g["rules"] for g in rule["spec"]["groups"]}  # type: ignore[index]
        alerts = {r["alert"] for r in groups["alerts.rules"]}
        assert len(alerts) == 26
        assert {
            "VirtAPIDown",
            "VirtHandlerDaemonSetRolloutFailing",
            "OrphanedVirtualMachineInstances",
        } <= alerts
        recorded = {r["record"] for r in groups["recordingRules.rules"]}
        assert {"kubevirt_vmi_phase_count", "kubevirt_virt_handler_up"} <= recorded
        monitor = cluster.kubectl_json(
            "get", "servicemonitor", "prometheus-kubevirt-rules", "-n", "monitoring"
        )
        selector = monitor["spec"]["selector"]["matchLabels"]  # type: ignore[index]
        service = cluster.kubectl_json("get", "service", "kubevirt-prometheus-metrics", "-n", "kubevirt")
        assert selector.items() <= service["metadata"]["labels"].items()  # type: ignore[index]

        cluster.kubectl("delete", "serviceaccount", "prometheus-k8s", "-n", "monitoring")
        cluster.wait_until("the monitoring objects removed", lambda: not any(present()), 120)
    finally:
        cluster.kubectl("delete", "namespace", "monitoring", "--ignore-not-found", "--wait=true", check=False)
        for crd in crds:
            cluster.kubectl("delete", "crd", crd["metadata"]["name"], "--ignore-not-found", check=False)


def test_uninstall_leaves_nothing_behind(cluster: Cluster, installed: float) -> None:
    cluster.kubectl("delete", "namespace", VM_NAMESPACE, "--wait=true")
    install.uninstall(cluster)
    assert cluster.find("namespace", install.NAMESPACE) is None
    for name in APISERVICES:
        assert cluster.find("apiservice", name) is None, name
    for kind, name in WEBHOOKS:
        assert cluster.find(kind, name) is None, name
    left_crds = [crd["metadata"]["name"] for crd in install.kubevirt_crds(cluster)]
    assert left_crds == []
    managed = cluster.kubectl(
        "get",
        EVERY_KIND,
        "--all-namespaces",
        "-l",
        "app.kubernetes.io/managed-by=virt-operator",
        "-o",
        "name",
    )
    assert managed.stdout.split() == []
    for document in install.operator_objects():
        kind, name = document["kind"], document["metadata"]["name"]
        assert cluster.find(kind, name, document["metadata"].get("namespace")) is None, (kind, name)
