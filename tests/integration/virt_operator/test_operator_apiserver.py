"""virt-operator against a real kube-apiserver: install from a KubeVirt CR, report status as KubeVirt
does, repair drift, refuse a second CR, upgrade, and uninstall.

The API server has no controller-manager and no nodes, so Deployments and DaemonSets never report
ready by themselves: where a test needs them ready it writes their status subresource, standing in
for the kube-controller-manager. The tests run in order against one install, the last one removing it.
"""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509

from kubevirt.client import KUBEVIRTS, VIRTUAL_MACHINE_INSTANCES, KubeClient
from kubevirt.client.resources import (
    CLUSTER_ROLES,
    CONFIG_MAPS,
    CUSTOM_RESOURCE_DEFINITIONS,
    DAEMON_SETS,
    DEPLOYMENTS,
    SECRETS,
    SERVICES,
    VALIDATING_WEBHOOKS,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
)
from kubevirt.virt_operator.app import VirtOperator
from kubevirt.virt_operator.certificates import component_certificates
from kubevirt.virt_operator.resource.common_instancetypes import cluster_instancetypes, cluster_preferences
from kubevirt.virt_operator.resource.config import InstallConfig
from kubevirt.virt_operator.resource.strategy import install_strategy
from kubevirt.virt_operator.resources import BY_KIND
from kubevirt_testing.operator import (
    NS,
    condition,
    create_kubevirt,
    deployed,
    eventually,
    find,
    kubevirt,
    phase,
    play_controller_manager,
    running_operator,
)

pytestmark = pytest.mark.integration

JSON = dict[str, Any]


def expected_objects(generation: int = 1) -> list[JSON]:
    config = InstallConfig(
        namespace=NS, registry="registry.test/kubevirt", tag="v1", kubevirt_generation=generation
    )
    return install_strategy(config)


@pytest.fixture(scope="module")
def operator(operator_kube: KubeClient) -> Iterator[VirtOperator]:
    with running_operator(operator_kube) as running:
        yield running


@pytest.fixture(scope="module")
def installed(kube: KubeClient, operator: VirtOperator) -> JSON:
    create_kubevirt(kube)
    eventually(
        "every object is created", lambda: condition(kubevirt(kube), "Created").get("status") == "True"
    )
    kv = kubevirt(kube)
    assert kv is not None
    return kv


def test_install_creates_every_object_with_the_operators_labels(kube: KubeClient, installed: JSON) -> None:
    for obj in expected_objects():
        resource = BY_KIND[obj["kind"]]
        namespace = obj["metadata"].get("namespace")
        found = find(kube, resource, namespace, obj["metadata"]["name"])
        assert found is not None, (obj["kind"], obj["metadata"]["name"])
        labels = found["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "virt-operator"
        assert labels["app.kubernetes.io/component"] == "kubevirt"
        annotations = found["metadata"]["annotations"]
        assert annotations["kubevirt.io/install-strategy-version"] == "v1"
        assert annotations["kubevirt.io/install-strategy-registry"] == "registry.test/kubevirt"
        assert (
            annotations["kubevirt.io/install-strategy-identifier"]
            == installed["status"]["targetDeploymentID"]
        )
    for spec in component_certificates(NS):
        secret = kube.get(SECRETS, NS, spec.secret)
        assert secret["type"] == "kubernetes.io/tls"
    bundle = kube.get(CONFIG_MAPS, NS, "kubevirt-ca")["data"]["ca-bundle"]
    validator = kube.get(VALIDATING_WEBHOOKS, None, "virt-api-validator")
    for hook in validator["webhooks"]:
        assert base64.b64decode(hook["clientConfig"]["caBundle"]).decode() == bundle
    assert installed["metadata"]["finalizers"] == ["foregroundDeleteKubeVirt"]


def test_healthz_reports_the_api_server_and_the_kubevirt_in_charge(
    kube: KubeClient, operator: VirtOperator, installed: JSON
) -> None:
    healthz = operator.probes()["/healthz"]
    status, body = healthz()
    assert status == 200
    assert body["apiserver"]["connectivity"] == "ok"
    assert body["apiserver"]["version"]["gitVersion"].startswith("v1.")

    def reports_the_current_cr() -> bool:
        # The operator keeps writing the CR's status: compared with the version read just before.
        current = (kubevirt(kube) or {}).get("metadata", {}).get("resourceVersion")
        return bool(healthz()[1]["config-resource-version"] == current)

    eventually("/healthz reports the KubeVirt CR's resourceVersion", reports_the_current_cr)


def test_status_walks_from_deploying_to_deployed_once_the_workloads_are_ready(
    kube: KubeClient, installed: JSON
) -> None:
    status = installed["status"]
    assert status["phase"] == "Deploying"
    assert status["targetKubeVirtVersion"] == status["observedKubeVirtVersion"] == "v1"
    assert status["targetKubeVirtRegistry"] == "registry.test/kubevirt"
    assert status["operatorVersion"]
    available = condition(installed, "Available")
    assert (available["status"], available["reason"]) == ("False", "DeploymentInProgress")
    assert available["message"] == "Deploying version v1 with registry registry.test/kubevirt"
    assert condition(installed, "Progressing")["status"] == "True"
    assert condition(installed, "Created")["message"] == "All resources were created."

    play_controller_manager(kube)
    eventually("Deployed", lambda: phase(kube) == "Deployed")
    kv = kubevirt(kube)
    assert kv is not None
    for kind, value in (("Available", "True"), ("Progressing", "False"), ("Degraded", "False")):
        found = condition(kv, kind)
        assert (found["status"], found["reason"], found["message"]) == (
            value,
            "AllComponentsReady",
            "All components are ready.",
        )
        assert found["lastTransitionTime"]
    assert kv["status"]["observedGeneration"] == kv["metadata"]["generation"]


def test_a_deleted_or_edited_object_is_restored(kube: KubeClient, installed: JSON) -> None:
    deployed(kube)
    old_uid = kube.get(DEPLOYMENTS, NS, "virt-api")["metadata"]["uid"]
    kube.delete(DEPLOYMENTS, NS, "virt-api")
    eventually(
        "virt-api's Deployment is recreated",
        lambda: (
            (find(kube, DEPLOYMENTS, NS, "virt-api") or {}).get("metadata", {}).get("uid")
            not in (None, old_uid)
        ),
    )
    kube.patch(CLUSTER_ROLES, None, "kubevirt.io:view", {"rules": []}, patch_type="merge")
    eventually(
        "the view role is restored", lambda: bool(kube.get(CLUSTER_ROLES, None, "kubevirt.io:view")["rules"])
    )
    kube.patch(
        SERVICES, NS, "virt-api", {"spec": {"ports": [{"port": 444, "targetPort": 8443}]}}, patch_type="merge"
    )
    eventually(
        "the virt-api Service is restored",
        lambda: kube.get(SERVICES, NS, "virt-api")["spec"]["ports"][0]["port"] == 443,
    )
    kube.delete(SECRETS, NS, "kubevirt-virt-api-certs")
    eventually(
        "the certificate is reissued", lambda: find(kube, SECRETS, NS, "kubevirt-virt-api-certs") is not None
    )
    deployed(kube)


def test_a_second_kubevirt_is_refused_and_the_first_keeps_working(kube: KubeClient, installed: JSON) -> None:
    deployed(kube)
    create_kubevirt(kube, "second")
    eventually(
        "the second CR is refused",
        lambda: condition(kubevirt(kube, "second"), "Synchronized").get("reason") == "ExistingDeployment",
    )
    refused = condition(kubevirt(kube, "second"), "Synchronized")
    assert (refused["status"], refused["message"]) == ("False", "There is an active KubeVirt deployment")
    second = kubevirt(kube, "second")
    assert second is not None
    assert not (second.get("status") or {}).get("phase")
    assert "finalizers" not in second["metadata"]
    assert phase(kube) == "Deployed"
    assert condition(kubevirt(kube), "Synchronized") == {}
    kube.delete(KUBEVIRTS, NS, "second")
    eventually("the second CR goes", lambda: kubevirt(kube, "second") is None)
    assert phase(kube) == "Deployed"


def test_an_invalid_configuration_is_reported_and_changes_nothing(kube: KubeClient, installed: JSON) -> None:
    deployed(kube)
    before = kube.get(DEPLOYMENTS, NS, "virt-api")
    bad = {"resourceName": "virt-api", "resourceType": "Deployment", "patch": "{nope", "type": "merge"}
    kube.patch(
        KUBEVIRTS, NS, "kubevirt", {"spec": {"customizeComponents": {"patches": [bad]}}}, patch_type="merge"
    )
    eventually(
        "the error is reported",
        lambda: condition(kubevirt(kube), "Synchronized").get("reason") == "DeploymentFailed",
    )
    synchronized = condition(kubevirt(kube), "Synchronized")
    assert synchronized["message"].startswith(
        "An error occurred during deployment: spec.customizeComponents.patches[0].patch"
    )
    assert condition(kubevirt(kube), "Degraded")["status"] == "True"
    assert (
        kube.get(DEPLOYMENTS, NS, "virt-api")["metadata"]["resourceVersion"]
        == before["metadata"]["resourceVersion"]
    )
    kube.patch(KUBEVIRTS, NS, "kubevirt", {"spec": {"customizeComponents": None}}, patch_type="merge")
    eventually("the error clears", lambda: condition(kubevirt(kube), "Synchronized") == {})
    deployed(kube)


def test_an_upgrade_rolls_every_component_through_kubevirts_update_conditions(
    kube: KubeClient, installed: JSON
) -> None:
    deployed(kube)
    kube.patch(KUBEVIRTS, NS, "kubevirt", {"spec": {"imageTag": "v2"}}, patch_type="merge")
    eventually(
        "the update starts",
        lambda: condition(kubevirt(kube), "Available").get("reason") == "UpdateInProgress",
    )
    kv = kubevirt(kube)
    message = (
        "Transitioning from previous version v1 with registry registry.test/kubevirt "
        "to target version v2 using registry registry.test/kubevirt"
    )
    for kind in ("Available", "Progressing", "Degraded"):
        assert (condition(kv, kind)["status"], condition(kv, kind)["message"]) == ("True", message)
    assert condition(kv, "Created") == {}
    assert kv is not None
    assert kv["status"]["observedKubeVirtVersion"] == "v1"
    assert kv["status"]["targetKubeVirtVersion"] == "v2"
    for name in ("virt-api", "virt-controller"):
        (container,) = kube.get(DEPLOYMENTS, NS, name)["spec"]["template"]["spec"]["containers"]
        assert container["image"] == f"registry.test/kubevirt/{name}:v2"
    (handler,) = kube.get(DAEMON_SETS, NS, "virt-handler")["spec"]["template"]["spec"]["containers"]
    assert handler["image"] == "registry.test/kubevirt/virt-handler:v2"

    # The update is over once the components rolled over to it.
    play_controller_manager(kube)
    eventually(
        "the update completes",
        lambda: condition(kubevirt(kube), "Available").get("reason") == "AllComponentsReady",
    )
    kv = kubevirt(kube)
    assert kv is not None
    assert kv["status"]["observedKubeVirtVersion"] == "v2"
    assert kv["status"]["observedDeploymentID"] == kv["status"]["targetDeploymentID"]
    assert condition(kv, "Created")["status"] == "True"
    assert phase(kube) == "Deployed"


def test_certificates_rotate_per_the_strategy_and_the_ca_stays_trusted(
    kube: KubeClient, installed: JSON
) -> None:
    deployed(kube)
    ca_before = kube.get(SECRETS, NS, "kubevirt-ca")["data"]
    bundle_before = kube.get(CONFIG_MAPS, NS, "kubevirt-ca")["data"]["ca-bundle"]
    first = kube.get(SECRETS, NS, "kubevirt-virt-api-certs")["data"]["tls.crt"]
    # Server certificates of 10 s, renewed with 5 s left: rotated every ~5 s without a CR change.
    strategy = {"selfSigned": {"server": {"duration": "10s", "renewBefore": "5s"}}}
    # (A changed duration reissues at once, then every ~5 s without a CR change.)
    kube.patch(
        KUBEVIRTS, NS, "kubevirt", {"spec": {"certificateRotateStrategy": strategy}}, patch_type="merge"
    )
    seen = {first}

    def rotated_twice() -> bool:
        seen.add(kube.get(SECRETS, NS, "kubevirt-virt-api-certs")["data"]["tls.crt"])
        return len(seen) >= 3

    eventually("virt-api's certificate rotates twice", rotated_twice, timeout=40)
    current = x509.load_pem_x509_certificate(
        base64.b64decode(kube.get(SECRETS, NS, "kubevirt-virt-api-certs")["data"]["tls.crt"])
    )
    assert current.not_valid_after_utc - current.not_valid_before_utc == datetime.timedelta(seconds=10)
    ca = x509.load_pem_x509_certificate(base64.b64decode(ca_before["tls.crt"]))
    current.verify_directly_issued_by(ca)
    assert kube.get(SECRETS, NS, "kubevirt-ca")["data"] == ca_before
    assert kube.get(CONFIG_MAPS, NS, "kubevirt-ca")["data"]["ca-bundle"] == bundle_before
    kube.patch(KUBEVIRTS, NS, "kubevirt", {"spec": {"certificateRotateStrategy": None}}, patch_type="merge")


def _bundle_names(kube: KubeClient) -> tuple[set[str], set[str]]:
    # The bundle is synced once the components are rolled out: keep them reported ready.
    play_controller_manager(kube)
    instancetypes, _ = kube.list(VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES, None)
    preferences, _ = kube.list(VIRTUAL_MACHINE_CLUSTER_PREFERENCES, None)
    return (
        {obj["metadata"]["name"] for obj in instancetypes},
        {obj["metadata"]["name"] for obj in preferences},
    )


def test_the_common_instancetypes_are_installed_kept_and_turned_off_and_on(
    kube: KubeClient, installed: JSON
) -> None:
    deployed(kube)
    bundle = (
        {obj["metadata"]["name"] for obj in cluster_instancetypes()},
        {obj["metadata"]["name"] for obj in cluster_preferences()},
    )
    assert _bundle_names(kube) == bundle
    small = kube.get(VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES, None, "u1.small")
    assert small["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "virt-operator"
    assert small["metadata"]["labels"]["instancetype.kubevirt.io/vendor"] == "kubevirt.io"

    # A user's edit is taken back (the informer reports it; nothing polls).
    edit = {"spec": {"cpu": {"guest": 4}, "ioThreadsPolicy": "auto"}}
    kube.patch(VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES, None, "u1.small", edit, patch_type="merge")

    def restored() -> bool:
        play_controller_manager(kube)
        spec = kube.get(VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES, None, "u1.small")["spec"]
        return bool(spec == {"cpu": {"guest": 1}, "memory": {"guest": "2Gi"}})

    eventually("u1.small is the bundle's again", restored)

    off = {"spec": {"configuration": {"commonInstancetypesDeployment": {"enabled": False}}}}
    kube.patch(KUBEVIRTS, NS, "kubevirt", off, patch_type="merge")
    eventually("the bundle is removed", lambda: _bundle_names(kube) == (set(), set()))
    on = {"spec": {"configuration": {"commonInstancetypesDeployment": None}}}
    kube.patch(KUBEVIRTS, NS, "kubevirt", on, patch_type="merge")
    eventually("the bundle is back", lambda: _bundle_names(kube) == bundle)
    deployed(kube)


def _ignore_webhook_failures() -> list[JSON]:
    """customizeComponents patches that let VMIs be created while virt-api does not run."""
    patches = []
    for obj in expected_objects():
        if obj["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            ops = [
                {"op": "replace", "path": f"/webhooks/{index}/failurePolicy", "value": "Ignore"}
                for index in range(len(obj["webhooks"]))
            ]
            patches.append(
                {
                    "resourceName": obj["metadata"]["name"],
                    "resourceType": obj["kind"],
                    "patch": json.dumps(ops),
                    "type": "json",
                }
            )
    return patches


def test_uninstall_waits_for_workloads_when_asked_then_removes_everything(
    kube: KubeClient, installed: JSON
) -> None:
    spec = {
        "uninstallStrategy": "BlockUninstallIfWorkloadsExist",
        "customizeComponents": {"patches": _ignore_webhook_failures()},
    }
    kube.patch(KUBEVIRTS, NS, "kubevirt", {"spec": spec}, patch_type="merge")
    eventually(
        "the webhooks ignore failures",
        lambda: (
            kube.get(VALIDATING_WEBHOOKS, None, "virt-api-validator")["webhooks"][0]["failurePolicy"]
            == "Ignore"
        ),
    )
    deployed(kube)
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "workload"},
        "spec": {"domain": {"devices": {}, "resources": {"requests": {"memory": "64Mi"}}}},
    }
    kube.create(VIRTUAL_MACHINE_INSTANCES, NS, vmi)

    kube.delete(KUBEVIRTS, NS, "kubevirt")
    eventually(
        "the uninstall is refused",
        lambda: condition(kubevirt(kube), "Synchronized").get("reason") == "DeletionFailed",
    )
    refused = condition(kubevirt(kube), "Synchronized")
    assert refused["message"] == (
        "An error occurred during deletion: Rejecting the uninstall request, since there are still Virtual "
        "Machine Instances present. Either delete all KubeVirt related workloads or change the uninstall "
        "strategy before uninstalling KubeVirt."
    )
    assert phase(kube) == "Deleting"
    assert condition(kubevirt(kube), "Degraded")["message"] == "Deletion was triggered"
    assert find(kube, DEPLOYMENTS, NS, "virt-api") is not None

    kube.delete(VIRTUAL_MACHINE_INSTANCES, NS, "workload")
    eventually("the KubeVirt CR is gone", lambda: kubevirt(kube) is None, timeout=60)
    for obj in expected_objects():
        resource = BY_KIND[obj["kind"]]
        eventually(
            f"{obj['kind']} {obj['metadata']['name']} is gone",
            lambda resource=resource, obj=obj: (
                find(kube, resource, obj["metadata"].get("namespace"), obj["metadata"]["name"]) is None
            ),
        )
    for spec_ in component_certificates(NS):
        assert find(kube, SECRETS, NS, spec_.secret) is None
    # The operator's own objects stay: they belong to the operator manifest.
    assert find(kube, CUSTOM_RESOURCE_DEFINITIONS, None, "kubevirts.kubevirt.io") is not None
    assert find(kube, CLUSTER_ROLES, None, "kubevirt-operator") is not None
