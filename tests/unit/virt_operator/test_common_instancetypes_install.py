"""virt-operator installs the common-instancetypes bundle as KubeVirt v1.6 does: once the components are
rolled out, stamped as the operator's, kept whole, and removed when the CR turns the deployment off."""

from __future__ import annotations

from typing import Any

from kubevirt.client import KUBEVIRTS, Resource
from kubevirt.client.resources import (
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
)
from kubevirt.virt_operator.kubevirt import BUNDLE_CACHE_RECHECK_SECONDS, KubeVirtReconciler, OperatorSettings
from kubevirt.virt_operator.resource.common_instancetypes import cluster_instancetypes, cluster_preferences

from .test_kubevirt_reconciler import NS, Harness

JSON = dict[str, Any]
INSTANCETYPES = VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES
PREFERENCES = VIRTUAL_MACHINE_CLUSTER_PREFERENCES


def deployed(harness: Harness, **spec: Any) -> Harness:
    harness.add_kubevirt(generation=3)
    if spec:
        harness.api.objects[(KUBEVIRTS.plural, NS, "kubevirt")]["spec"] = spec
    harness.sync()
    harness.make_workloads_ready()
    harness.sync()
    return harness


def names(harness: Harness, resource: Resource) -> set[str]:
    return {obj["metadata"]["name"] for obj in harness.api.objects_of(resource)}


def disable(harness: Harness) -> None:
    spec = {"configuration": {"commonInstancetypesDeployment": {"enabled": False}}}
    kv = harness.api.objects[(KUBEVIRTS.plural, NS, "kubevirt")]
    kv["spec"] = spec
    kv["metadata"]["generation"] = 4


def test_nothing_of_the_bundle_is_written_before_the_components_are_rolled_out() -> None:
    harness = Harness()
    harness.add_kubevirt()
    harness.sync()
    assert names(harness, INSTANCETYPES) == set()
    assert names(harness, PREFERENCES) == set()


def test_a_rolled_out_install_gets_every_instancetype_and_preference_and_is_then_deployed() -> None:
    harness = deployed(Harness())
    assert names(harness, INSTANCETYPES) == {obj["metadata"]["name"] for obj in cluster_instancetypes()}
    assert names(harness, PREFERENCES) == {obj["metadata"]["name"] for obj in cluster_preferences()}
    assert {"u1.small", "u1.nano", "cx1.medium1gi", "m1.large"} <= names(harness, INSTANCETYPES)
    assert harness.kubevirt()["status"]["phase"] == "Deployed"


def test_the_bundle_carries_its_own_labels_and_the_operators() -> None:
    harness = deployed(Harness())
    small = harness.api.get(INSTANCETYPES, None, "u1.small")
    assert small["spec"] == {"cpu": {"guest": 1}, "memory": {"guest": "2Gi"}}
    labels, annotations = small["metadata"]["labels"], small["metadata"]["annotations"]
    assert labels["instancetype.kubevirt.io/vendor"] == "kubevirt.io"
    assert labels["instancetype.kubevirt.io/common-instancetypes-version"] == "v1.4.1"
    assert labels["app.kubernetes.io/managed-by"] == "virt-operator"
    assert labels["app.kubernetes.io/component"] == "kubevirt"
    assert annotations["kubevirt.io/install-strategy-version"] == "v1"
    assert annotations["kubevirt.io/generation"] == "3"
    assert annotations["instancetype.kubevirt.io/displayName"] == "General Purpose"
    fedora = harness.api.get(PREFERENCES, None, "fedora")
    assert fedora["metadata"]["labels"]["instancetype.kubevirt.io/os-type"] == "linux"
    assert fedora["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "virt-operator"


def test_a_deployed_install_with_nothing_to_do_writes_nothing() -> None:
    harness = deployed(Harness())
    before = len(harness.api.writes)
    harness.sync()
    assert harness.api.writes[before:] == []


def test_an_edited_or_deleted_bundle_object_is_made_whole_again() -> None:
    harness = deployed(Harness())
    small = harness.api.objects[(INSTANCETYPES.plural, None, "u1.small")]
    small["spec"]["cpu"] = {"guest": 4, "dedicatedCPUPlacement": True}
    small["spec"]["ioThreadsPolicy"] = "auto"
    small["metadata"]["labels"]["mine"] = "yes"
    harness.api.delete(PREFERENCES, None, "fedora")
    harness.sync()
    restored = harness.api.get(INSTANCETYPES, None, "u1.small")
    # Replaced, not merged: what a user added is gone too.
    assert restored["spec"] == {"cpu": {"guest": 1}, "memory": {"guest": "2Gi"}}
    assert "mine" not in restored["metadata"]["labels"]
    assert "fedora" in names(harness, PREFERENCES)


def test_a_managed_instancetype_the_bundle_does_not_have_is_deleted_and_a_users_is_kept() -> None:
    harness = deployed(Harness())
    managed = {"app.kubernetes.io/managed-by": "virt-operator"}
    for name, labels in (("u1.retired", managed), ("mine.large", {})):
        body = {"apiVersion": INSTANCETYPES.api_version, "kind": INSTANCETYPES.kind}
        body["metadata"] = {"name": name, "labels": labels}
        body["spec"] = {"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}}
        harness.api.add(INSTANCETYPES, body)
    harness.sync()
    assert "u1.retired" not in names(harness, INSTANCETYPES)
    assert "mine.large" in names(harness, INSTANCETYPES)


def test_turning_the_deployment_off_removes_the_bundle_but_not_users_objects() -> None:
    harness = deployed(Harness())
    body = {"apiVersion": PREFERENCES.api_version, "kind": PREFERENCES.kind, "spec": {}}
    body["metadata"] = {"name": "my-os"}
    harness.api.add(PREFERENCES, body)
    disable(harness)
    harness.sync()
    assert names(harness, INSTANCETYPES) == set()
    assert names(harness, PREFERENCES) == {"my-os"}
    assert harness.kubevirt()["status"]["phase"] == "Deployed"


def test_the_bundle_waits_for_its_caches_and_looks_again_shortly() -> None:
    harness = Harness()
    ready: set[Resource] = set()
    settings = OperatorSettings(namespace=NS, operator_image="reg.test/kv/virt-operator:v1")
    harness.reconciler = KubeVirtReconciler(
        harness.api, settings, harness.kubevirts, harness.cache, synced=lambda resource: resource in ready
    )
    harness.add_kubevirt()
    harness.sync()
    harness.make_workloads_ready()
    assert harness.sync() == BUNDLE_CACHE_RECHECK_SECONDS
    assert names(harness, INSTANCETYPES) == set()
    assert harness.kubevirt()["status"]["phase"] == "Deploying"
    ready.update((INSTANCETYPES, PREFERENCES))
    harness.sync()
    assert "u1.small" in names(harness, INSTANCETYPES)
    assert harness.kubevirt()["status"]["phase"] == "Deployed"
