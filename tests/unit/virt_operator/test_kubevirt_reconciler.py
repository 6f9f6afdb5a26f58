"""The KubeVirt CR reconciler on an in-memory API: what it writes, what status it reports, and that a
sync with nothing to do writes nothing."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kubevirt.client import KUBEVIRTS, VIRTUAL_MACHINE_INSTANCES, Resource
from kubevirt.client.resources import (
    CUSTOM_RESOURCE_DEFINITIONS,
    DAEMON_SETS,
    DEPLOYMENTS,
    POD_DISRUPTION_BUDGETS,
    SECRETS,
    SERVICES,
)
from kubevirt.controller import RequeueAfter, Store
from kubevirt.virt_operator import conditions
from kubevirt.virt_operator.kubevirt import KubeVirtReconciler, OperatorSettings
from kubevirt.virt_operator.resources import MANAGED
from kubevirt_api.core.v1.kubevirt import KubeVirt
from kubevirt_testing.fake_kube_api import FakeKubeApi

JSON = dict[str, Any]
NS = "kubevirt"
NOW = datetime.datetime(2026, 6, 1, tzinfo=datetime.UTC)


class Harness:
    """The reconciler with caches that always hold exactly what the fake API holds."""

    def __init__(self) -> None:
        self.api = FakeKubeApi()
        self.kubevirts: Store[KubeVirt] = Store()
        settings = OperatorSettings(namespace=NS, operator_image="reg.test/kv/virt-operator:v1")
        self.reconciler = KubeVirtReconciler(
            self.api, settings, self.kubevirts, self.cache, clock=lambda: NOW
        )

    def cache(self, resource: Resource) -> Store[JSON]:
        store: Store[JSON] = Store()
        for obj in self.api.objects_of(resource):
            store.upsert(obj)
        return store

    def add_kubevirt(self, name: str = "kubevirt", namespace: str = NS, **metadata: Any) -> None:
        body = {"apiVersion": "kubevirt.io/v1", "kind": "KubeVirt", "spec": {}}
        body["metadata"] = {"name": name, "namespace": namespace, **metadata}
        self.api.add(KUBEVIRTS, body)

    def sync(self, name: str = "kubevirt", namespace: str = NS) -> float | None:
        for kv in self.kubevirts.list():
            self.kubevirts.remove(f"{kv.metadata.namespace}/{kv.metadata.name}")  # type: ignore[union-attr]
        for obj in self.api.objects_of(KUBEVIRTS):
            self.kubevirts.upsert(KubeVirt.from_dict(obj))
        try:
            self.reconciler.reconcile(f"{namespace}/{name}")
        except RequeueAfter as request:
            return request.seconds
        return None

    def kubevirt(self, name: str = "kubevirt", namespace: str = NS) -> JSON:
        return self.api.get(KUBEVIRTS, namespace, name)

    def condition(self, kind: str, name: str = "kubevirt") -> JSON:
        for found in self.kubevirt(name).get("status", {}).get("conditions", []):
            if found["type"] == kind:
                return dict(found)
        return {}

    def make_workloads_ready(self) -> None:
        for resource, name in ((DEPLOYMENTS, "virt-api"), (DEPLOYMENTS, "virt-controller")):
            obj = self.api.get(resource, NS, name)
            self.api.objects[(resource.plural, NS, name)]["status"] = {
                "observedGeneration": obj["metadata"].get("generation", 0),
                "replicas": 2,
                "updatedReplicas": 2,
                "readyReplicas": 2,
            }
        status = {"desiredNumberScheduled": 1, "numberReady": 1, "updatedNumberScheduled": 1}
        self.api.objects[(DAEMON_SETS.plural, NS, "virt-handler")]["status"] = status


@pytest.fixture
def harness() -> Harness:
    return Harness()


def test_a_first_sync_installs_everything_and_reports_deploying(harness: Harness) -> None:
    harness.add_kubevirt()
    requeue = harness.sync()
    kv = harness.kubevirt()
    assert kv["metadata"]["finalizers"] == [conditions.FINALIZER]
    assert kv["status"]["phase"] == "Deploying"
    assert harness.condition("Available")["reason"] == "DeploymentInProgress"
    assert harness.condition("Available")["message"] == "Deploying version v1 with registry reg.test/kv"
    assert harness.condition("Created")["status"] == "True"
    assert kv["status"]["observedDeploymentID"] == kv["status"]["targetDeploymentID"]
    assert harness.api.get(DEPLOYMENTS, NS, "virt-api")["spec"]["replicas"] == 2
    # The next certificate rotation is due in 0.8 days; the operator looks again within the hour.
    assert requeue == 3600.0


def test_a_sync_with_nothing_to_do_writes_nothing(harness: Harness) -> None:
    harness.add_kubevirt()
    harness.sync()
    harness.sync()
    before = len(harness.api.writes)
    harness.sync()
    assert harness.api.writes[before:] == []


def test_ready_workloads_make_it_deployed(harness: Harness) -> None:
    harness.add_kubevirt(generation=4)
    harness.sync()
    harness.make_workloads_ready()
    harness.sync()
    kv = harness.kubevirt()
    assert kv["status"]["phase"] == "Deployed"
    assert kv["status"]["observedGeneration"] == 4
    assert harness.condition("Degraded") | {"lastProbeTime": "", "lastTransitionTime": ""} == {
        "type": "Degraded",
        "status": "False",
        "reason": "AllComponentsReady",
        "message": "All components are ready.",
        "lastProbeTime": "",
        "lastTransitionTime": "",
    }


def test_a_deleted_object_is_recreated_on_the_next_sync(harness: Harness) -> None:
    harness.add_kubevirt()
    harness.sync()
    harness.api.delete(DEPLOYMENTS, NS, "virt-controller")
    harness.sync()
    assert harness.api.get(DEPLOYMENTS, NS, "virt-controller")["metadata"]["name"] == "virt-controller"


def test_a_kubevirt_in_another_namespace_is_refused_and_installs_nothing(harness: Harness) -> None:
    harness.add_kubevirt(namespace="elsewhere")
    harness.sync(namespace="elsewhere")
    kv = harness.api.get(KUBEVIRTS, "elsewhere", "kubevirt")
    (synchronized,) = kv["status"]["conditions"]
    assert (synchronized["reason"], synchronized["message"]) == (
        "ExistingDeployment",
        "There is an active KubeVirt deployment",
    )
    assert harness.api.objects_of(DEPLOYMENTS) == []


def test_the_older_kubevirt_keeps_the_install_and_a_newer_one_is_refused(harness: Harness) -> None:
    harness.add_kubevirt("first", creationTimestamp="2026-01-01T00:00:00Z")
    harness.add_kubevirt("second", creationTimestamp="2026-01-02T00:00:00Z")
    harness.sync("second")
    assert harness.condition("Synchronized", "second")["reason"] == "ExistingDeployment"
    assert harness.api.objects_of(DEPLOYMENTS) == []
    harness.sync("first")
    assert harness.kubevirt("first")["status"]["phase"] == "Deploying"


def test_the_kubevirt_in_charge_is_the_finalizer_holder_then_the_oldest(harness: Harness) -> None:
    assert harness.reconciler.active_install() is None
    harness.add_kubevirt("elsewhere", namespace="other", creationTimestamp="2025-01-01T00:00:00Z")
    harness.add_kubevirt("first", creationTimestamp="2026-01-01T00:00:00Z")
    harness.add_kubevirt(
        "second", creationTimestamp="2026-01-02T00:00:00Z", finalizers=[conditions.FINALIZER]
    )
    harness.sync("first")
    active = harness.reconciler.active_install()
    assert active is not None
    assert active.metadata is not None
    assert active.metadata.name == "second"


def test_deleting_the_kubevirt_removes_everything_then_the_finalizer(harness: Harness) -> None:
    harness.add_kubevirt()
    harness.sync()
    kv = harness.kubevirt()
    kv["metadata"]["deletionTimestamp"] = "2026-06-01T00:00:00Z"
    harness.api.objects[(KUBEVIRTS.plural, NS, "kubevirt")] = kv
    harness.sync()
    assert harness.kubevirt()["status"]["phase"] == "Deleting"
    assert harness.condition("Degraded")["message"] == "Deletion was triggered"
    # The CRDs (and with them every VM and VMI) go first, while virt-controller and virt-handler still run
    # to release the finalizers; the components follow once the CRDs are gone.
    assert harness.api.objects_of(CUSTOM_RESOURCE_DEFINITIONS) == []
    assert harness.api.objects_of(DEPLOYMENTS) != []
    assert harness.api.objects_of(DAEMON_SETS) != []
    harness.sync()
    assert all(harness.api.objects_of(resource) == [] for resource in MANAGED)
    harness.sync()
    kv = harness.kubevirt()
    assert kv["status"]["phase"] == "Deleted"
    assert kv["metadata"]["finalizers"] == []


def test_block_uninstall_waits_while_workloads_exist(harness: Harness) -> None:
    harness.add_kubevirt()
    harness.sync()
    kv = harness.kubevirt()
    kv["spec"]["uninstallStrategy"] = "BlockUninstallIfWorkloadsExist"
    kv["metadata"]["deletionTimestamp"] = "2026-06-01T00:00:00Z"
    harness.api.objects[(KUBEVIRTS.plural, NS, "kubevirt")] = kv
    harness.api.add(VIRTUAL_MACHINE_INSTANCES, {"metadata": {"name": "vm", "namespace": "default"}})
    assert harness.sync() == 5.0
    assert harness.condition("Synchronized")["reason"] == "DeletionFailed"
    assert "there are still Virtual Machine Instances present" in harness.condition("Synchronized")["message"]
    assert harness.api.objects_of(DEPLOYMENTS) != []
    harness.api.delete(VIRTUAL_MACHINE_INSTANCES, "default", "vm")
    harness.sync()  # the CRDs
    harness.sync()  # then the rest
    assert harness.api.objects_of(DEPLOYMENTS) == []


def test_an_unchanged_condition_keeps_its_times() -> None:
    before: JSON = {}
    conditions.available(before)
    conditions.stamp_times({}, before, "t1")
    after: JSON = {"conditions": [dict(c) for c in before["conditions"]]}
    conditions.available(after)
    conditions.created(after)
    conditions.stamp_times(before, after, "t2")
    times = {c["type"]: c["lastTransitionTime"] for c in after["conditions"]}
    assert times == {"Available": "t1", "Progressing": "t1", "Degraded": "t1", "Created": "t2"}


def test_a_removed_workloads_placement_leaves_the_handler_daemonset_again(harness: Harness) -> None:
    harness.add_kubevirt()
    harness.sync()
    kv = harness.kubevirt()
    preferred = [{"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    kv["spec"]["workloads"] = {
        "nodePlacement": {"nodeSelector": {"kubevirt.test/handler": "yes"}, "affinity": affinity}
    }
    harness.api.objects[(KUBEVIRTS.plural, NS, "kubevirt")] = kv
    harness.sync()
    pod = harness.api.get(DAEMON_SETS, NS, "virt-handler")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubevirt.test/handler": "yes", "kubernetes.io/os": "linux"}
    assert pod["affinity"] == affinity
    kv = harness.kubevirt()
    del kv["spec"]["workloads"]
    harness.api.objects[(KUBEVIRTS.plural, NS, "kubevirt")] = kv
    harness.sync()
    pod = harness.api.get(DAEMON_SETS, NS, "virt-handler")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert "affinity" not in pod
    before = len(harness.api.writes)
    harness.sync()
    assert [write for write in harness.api.writes[before:] if "virt-handler" in str(write)] == []


def _set_feature_gates(harness: Harness, gates: list[str]) -> None:
    kv = harness.api.objects[(KUBEVIRTS.plural, NS, "kubevirt")]
    kv["spec"] = {"configuration": {"developerConfiguration": {"featureGates": gates}}}


def _make_deployment_ready(harness: Harness, name: str) -> None:
    obj = harness.api.get(DEPLOYMENTS, NS, name)
    harness.api.objects[(DEPLOYMENTS.plural, NS, name)]["status"] = {
        "observedGeneration": obj["metadata"].get("generation", 0),
        "replicas": 2,
        "updatedReplicas": 2,
        "readyReplicas": 2,
    }


def _installed(harness: Harness, resource: Resource, name: str) -> bool:
    return (resource.plural, NS, name) in harness.api.objects


def test_the_vmexport_gate_runs_the_export_proxy_and_readiness_waits_for_it(harness: Harness) -> None:
    harness.add_kubevirt(generation=1)
    _set_feature_gates(harness, ["VMExport"])
    harness.sync()
    assert _installed(harness, DEPLOYMENTS, "virt-exportproxy")
    harness.make_workloads_ready()
    harness.sync()
    assert harness.kubevirt()["status"]["phase"] == "Deploying"  # the proxy is not ready yet
    _make_deployment_ready(harness, "virt-exportproxy")
    harness.sync()
    assert harness.kubevirt()["status"]["phase"] == "Deployed"


def test_turning_the_vmexport_gate_off_removes_only_the_export_proxys_deployment(harness: Harness) -> None:
    harness.add_kubevirt(generation=1)
    _set_feature_gates(harness, ["VMExport"])
    harness.sync()
    harness.make_workloads_ready()
    _make_deployment_ready(harness, "virt-exportproxy")
    harness.sync()
    deployment_id = harness.kubevirt()["status"]["observedDeploymentID"]
    assert _installed(harness, POD_DISRUPTION_BUDGETS, "virt-exportproxy-pdb")
    _set_feature_gates(harness, [])
    harness.sync()
    assert not _installed(harness, DEPLOYMENTS, "virt-exportproxy")
    assert not _installed(harness, POD_DISRUPTION_BUDGETS, "virt-exportproxy-pdb")
    # KubeVirt keeps the Service, the RBAC and the certificate; turning the gate off is no update.
    assert _installed(harness, SERVICES, "virt-exportproxy")
    assert _installed(harness, SECRETS, "kubevirt-exportproxy-certs")
    status = harness.kubevirt()["status"]
    assert (status["phase"], status["observedDeploymentID"]) == ("Deployed", deployment_id)
    assert harness.condition("Available")["status"] == "True"


def test_without_the_vmexport_gate_readiness_does_not_wait_for_the_export_proxy(harness: Harness) -> None:
    harness.add_kubevirt(generation=1)
    harness.sync()
    assert not _installed(harness, DEPLOYMENTS, "virt-exportproxy")
    harness.make_workloads_ready()
    harness.sync()
    assert harness.kubevirt()["status"]["phase"] == "Deployed"
