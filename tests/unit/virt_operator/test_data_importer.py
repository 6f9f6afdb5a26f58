"""virt-operator installs the project's DataVolume importer under the ``DataImporter`` gate, with CDI's
names, never over CDI's own CRDs, and keeps the users' API (CRDs, roles) when the gate goes off, and what
holds their DataVolumes (CRDs, namespace) when KubeVirt is uninstalled."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from structlog.testing import capture_logs

from kubevirt.client import KUBEVIRTS, Resource
from kubevirt.client.resources import (
    API_SERVICES,
    CDIS,
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIG_MAPS,
    CUSTOM_RESOURCE_DEFINITIONS,
    DATA_VOLUMES,
    DEPLOYMENTS,
    NAMESPACES,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
)
from kubevirt.controller import Store
from kubevirt.virt_operator.apply import CacheUnion
from kubevirt.virt_operator.kubevirt import BUNDLE_CACHE_RECHECK_SECONDS, KubeVirtReconciler, OperatorSettings
from kubevirt.virt_operator.resource import cdi
from kubevirt.virt_operator.resource.config import InstallConfig, install_config
from kubevirt.virt_operator.resource.metadata import MANAGED_BY_LABEL, is_managed
from kubevirt.virt_operator.resource.strategy import install_strategy
from kubevirt.virt_operator.resources import MANAGED
from kubevirt_api.cdi.crds import cdi_custom_resource_definition
from kubevirt_api.core.v1.kubevirt import KubeVirt

from .test_kubevirt_reconciler import NOW, NS, Harness, _set_feature_gates
from .test_operator_healthz import _operator, _VersionServer

JSON = dict[str, Any]
GATE = "DataImporter"
CDI_CRDS = {
    "datavolumes.cdi.kubevirt.io",
    "cdis.cdi.kubevirt.io",
    "cdiconfigs.cdi.kubevirt.io",
    "storageprofiles.cdi.kubevirt.io",
    "datasources.cdi.kubevirt.io",
}
CDI_DEPLOYMENTS = {"cdi-deployment", "cdi-apiserver", "cdi-uploadproxy"}
CDI_ACCOUNTS = {"cdi-sa", "cdi-apiserver", "cdi-uploadproxy"}
# The upload path's certificates (CDI's cert factory names).
CDI_CERT_SECRETS = {
    "cdi-apiserver-signer",
    "cdi-uploadproxy-signer",
    "cdi-uploadserver-signer",
    "cdi-uploadserver-client-signer",
    "cdi-apiserver-server-cert",
    "cdi-uploadproxy-server-cert",
    "cdi-uploadserver-client-cert",
}
CDI_BUNDLES = {
    "cdi-apiserver-signer-bundle",
    "cdi-uploadproxy-signer-bundle",
    "cdi-uploadserver-signer-bundle",
    "cdi-uploadserver-client-signer-bundle",
}
UPLOAD_API_SERVICE = "v1beta1.upload.cdi.kubevirt.io"
USER_ROLES = {
    "cdi.kubevirt.io:admin",
    "cdi.kubevirt.io:edit",
    "cdi.kubevirt.io:view",
    "cdi.kubevirt.io:config-reader",
}


class CdiHarness(Harness):
    """The reconciler harness, reading CRDs by name from the fake API whoever manages them."""

    def __init__(self) -> None:
        super().__init__()
        self.cdi_synced = True
        settings = OperatorSettings(namespace=NS, operator_image="reg.test/kv/virt-operator:v1")
        self.reconciler = KubeVirtReconciler(
            self.api,
            settings,
            self.kubevirts,
            self.cache,
            clock=lambda: NOW,
            synced=lambda resource: resource != CDIS or self.cdi_synced,
            crd_named=self.crd_named,
        )

    def crd_named(self, name: str) -> JSON | None:
        found = [
            crd for crd in self.api.objects_of(CUSTOM_RESOURCE_DEFINITIONS) if crd["metadata"]["name"] == name
        ]
        return found[0] if found else None

    def names(self, resource: Resource, namespace: str | None = None) -> set[str]:
        return {
            obj["metadata"]["name"]
            for obj in self.api.objects_of(resource)
            if namespace is None or obj["metadata"].get("namespace") == namespace
        }

    def crds(self) -> set[str]:
        return self.names(CUSTOM_RESOURCE_DEFINITIONS)

    def gates(self, *gates: str) -> None:
        _set_feature_gates(self, list(gates))

    def make_cdi_ready(self, *names: str) -> None:
        for name in names or CDI_DEPLOYMENTS:
            deployment = self.api.objects[(DEPLOYMENTS.plural, "cdi", name)]
            deployment["status"] = {
                "observedGeneration": deployment["metadata"].get("generation", 0),
                "replicas": 1,
                "updatedReplicas": 1,
                "readyReplicas": 1,
            }


@pytest.fixture
def harness() -> CdiHarness:
    return CdiHarness()


def _with_gate(harness: CdiHarness) -> CdiHarness:
    harness.add_kubevirt(generation=1)
    harness.gates(GATE)
    harness.sync()
    return harness


def test_without_the_gate_nothing_of_the_importer_is_installed(harness: CdiHarness) -> None:
    harness.add_kubevirt()
    harness.sync()
    assert not harness.crds() & CDI_CRDS
    assert harness.names(NAMESPACES) == set()
    assert harness.names(DEPLOYMENTS, "cdi") == set()
    assert not harness.names(CLUSTER_ROLES) & USER_ROLES
    assert harness.api.objects_of(CDIS) == []


def test_the_gate_installs_the_importer_with_cdis_names(harness: CdiHarness) -> None:
    _with_gate(harness)
    assert harness.crds() >= CDI_CRDS
    assert harness.names(NAMESPACES) == {"cdi"}
    assert harness.names(SERVICE_ACCOUNTS, "cdi") == CDI_ACCOUNTS
    assert harness.names(DEPLOYMENTS, "cdi") == CDI_DEPLOYMENTS
    assert harness.names(SERVICES, "cdi") == {"cdi-api", "cdi-uploadproxy"}
    assert harness.names(API_SERVICES) >= {UPLOAD_API_SERVICE}
    assert harness.names(SECRETS, "cdi") == CDI_CERT_SECRETS
    assert harness.names(CONFIG_MAPS, "cdi") == CDI_BUNDLES
    # The leader Lease's Role is in the install namespace, where the operator may grant leases.
    assert "cdi-deployment" in harness.names(ROLES, NS)
    assert "cdi-deployment" in harness.names(ROLE_BINDINGS, NS)
    roles = {"cdi-deployment-signers", "cdi-apiserver", "cdi-uploadproxy"}
    assert harness.names(ROLES, "cdi") == harness.names(ROLE_BINDINGS, "cdi") == roles
    assert {"cdi", "cdi-apiserver", "cdi-uploadproxy", *USER_ROLES} <= harness.names(CLUSTER_ROLES)
    assert {"cdi-sa", "cdi-apiserver", "cdi-uploadproxy", "cdi.kubevirt.io:config-reader"} <= harness.names(
        CLUSTER_ROLE_BINDINGS
    )
    installed = [
        obj
        for resource in MANAGED
        for obj in harness.api.objects_of(resource)
        if obj["metadata"].get("namespace") == "cdi"
        or obj["metadata"]["name"] in {"cdi", "cdi-sa", UPLOAD_API_SERVICE, *USER_ROLES, *CDI_CRDS}
    ]
    assert len(installed) > 30
    assert all(is_managed(obj) for obj in installed)


def test_the_upload_api_service_trusts_the_published_apiserver_signer_bundle(harness: CdiHarness) -> None:
    _with_gate(harness)
    service = harness.api.get(API_SERVICES, None, UPLOAD_API_SERVICE)
    bundle = harness.api.get(CONFIG_MAPS, "cdi", "cdi-apiserver-signer-bundle")["data"]["ca-bundle.crt"]
    assert base64.b64decode(service["spec"]["caBundle"]).decode() == bundle
    signer = harness.api.get(SECRETS, "cdi", "cdi-apiserver-signer")
    assert signer["type"] == "kubernetes.io/tls"
    assert base64.b64decode(signer["data"]["tls.crt"]).decode() in bundle


def test_the_upload_certificates_are_kept_until_due(harness: CdiHarness) -> None:
    _with_gate(harness)
    before = {name: harness.api.get(SECRETS, "cdi", name)["data"] for name in CDI_CERT_SECRETS}
    harness.sync()
    assert {name: harness.api.get(SECRETS, "cdi", name)["data"] for name in CDI_CERT_SECRETS} == before


def test_the_cdi_object_is_created_once_and_left_to_its_users(harness: CdiHarness) -> None:
    _with_gate(harness)
    (created,) = harness.api.objects_of(CDIS)
    assert created["metadata"]["name"] == "cdi"
    assert created["metadata"]["annotations"] == {"cdi.kubevirt.io/configAuthority": ""}
    assert created["spec"] == {"config": {"featureGates": ["HonorWaitForFirstConsumer"]}}
    edited = harness.api.objects[(CDIS.plural, None, "cdi")]
    edited["spec"]["config"] = {"featureGates": [], "insecureRegistries": ["registry.test:5000"]}
    harness.sync()
    assert harness.api.get(CDIS, None, "cdi")["spec"]["config"]["insecureRegistries"] == [
        "registry.test:5000"
    ]
    assert harness.api.get(CDIS, None, "cdi")["spec"]["config"]["featureGates"] == []


def test_a_cdi_object_of_any_name_is_enough(harness: CdiHarness) -> None:
    harness.api.add(CDIS, {"metadata": {"name": "mine"}, "spec": {}})
    _with_gate(harness)
    assert harness.names(CDIS) == {"mine"}


def test_a_deleted_cdi_object_is_made_again_kubevirt_needs_one(harness: CdiHarness) -> None:
    _with_gate(harness)
    harness.api.delete(CDIS, None, "cdi")
    harness.sync()
    assert harness.names(CDIS) == {"cdi"}


def test_the_install_waits_for_the_cdi_objects_cache(harness: CdiHarness) -> None:
    harness.cdi_synced = False
    harness.add_kubevirt(generation=1)
    harness.gates(GATE)
    assert harness.sync() == BUNDLE_CACHE_RECHECK_SECONDS
    assert harness.api.objects_of(CDIS) == []
    harness.make_workloads_ready()
    harness.make_cdi_ready()
    harness.sync()
    assert harness.kubevirt()["status"]["phase"] == "Deploying"
    harness.cdi_synced = True
    harness.sync()
    assert harness.names(CDIS) == {"cdi"}


def test_readiness_waits_for_the_importers_controller_and_upload_servers(harness: CdiHarness) -> None:
    _with_gate(harness)
    harness.make_workloads_ready()
    harness.sync()
    assert harness.kubevirt()["status"]["phase"] == "Deploying"
    harness.make_cdi_ready("cdi-deployment", "cdi-apiserver")
    harness.sync()
    assert harness.kubevirt()["status"]["phase"] == "Deploying"
    harness.make_cdi_ready()
    harness.sync()
    assert harness.kubevirt()["status"]["phase"] == "Deployed"


def test_a_sync_with_nothing_to_do_writes_nothing_with_the_gate(harness: CdiHarness) -> None:
    _with_gate(harness)
    harness.sync()
    before = len(harness.api.writes)
    harness.sync()
    assert harness.api.writes[before:] == []


def _cdis_crd(name: str = "datavolumes.cdi.kubevirt.io") -> JSON:
    kind = {"datavolumes.cdi.kubevirt.io": "DataVolume", "cdis.cdi.kubevirt.io": "CDI"}[name]
    crd = cdi_custom_resource_definition(kind)
    crd["metadata"]["labels"] = {MANAGED_BY_LABEL: "cdi-operator"}
    return crd


@pytest.mark.parametrize("name", ["datavolumes.cdi.kubevirt.io", "cdis.cdi.kubevirt.io"])
def test_with_cdis_own_crds_the_gate_installs_nothing_and_says_so_once(
    harness: CdiHarness, name: str
) -> None:
    harness.api.add(CUSTOM_RESOURCE_DEFINITIONS, _cdis_crd(name))
    harness.add_kubevirt()
    harness.gates(GATE)
    with capture_logs() as logs:
        harness.sync()
        harness.sync()
    # (Without a monitoring namespace the operator also warns, once, that it installs no monitoring.)
    warnings = [entry for entry in logs if entry["log_level"] == "warning" and "crds" in entry]
    assert [entry["crds"] for entry in warnings] == [[name]]
    assert harness.crds() & CDI_CRDS == {name}
    assert harness.api.get(CUSTOM_RESOURCE_DEFINITIONS, None, name)["metadata"]["labels"] == {
        MANAGED_BY_LABEL: "cdi-operator"
    }
    assert harness.names(NAMESPACES) == set()
    assert harness.names(DEPLOYMENTS, "cdi") == set()
    assert harness.api.objects_of(CDIS) == []


def test_cdi_arriving_later_stops_the_importers_controller(harness: CdiHarness) -> None:
    _with_gate(harness)
    crd = harness.api.objects[(CUSTOM_RESOURCE_DEFINITIONS.plural, None, "datavolumes.cdi.kubevirt.io")]
    crd["metadata"]["labels"] = {MANAGED_BY_LABEL: "cdi-operator"}  # CDI's operator took it over
    harness.sync()
    assert harness.names(DEPLOYMENTS, "cdi") == set()


def test_turning_the_gate_off_removes_the_controller_and_keeps_the_users_api(harness: CdiHarness) -> None:
    _with_gate(harness)
    harness.api.add(DATA_VOLUMES, {"metadata": {"name": "disk", "namespace": "default"}, "spec": {}})
    harness.gates()
    harness.sync()
    assert harness.names(DEPLOYMENTS, "cdi") == set()
    assert harness.names(SERVICE_ACCOUNTS, "cdi") == set()
    assert "cdi-deployment" not in harness.names(ROLES, NS) | harness.names(ROLE_BINDINGS, NS)
    assert "cdi" not in harness.names(CLUSTER_ROLES)
    assert "cdi-sa" not in harness.names(CLUSTER_ROLE_BINDINGS)
    # The upload path goes with the controller, its certificates too.
    for resource in (SERVICES, SECRETS, CONFIG_MAPS, ROLES, ROLE_BINDINGS):
        assert harness.names(resource, "cdi") == set(), resource.plural
    assert not {"cdi-apiserver", "cdi-uploadproxy"} & harness.names(CLUSTER_ROLES)
    assert not {"cdi-apiserver", "cdi-uploadproxy"} & harness.names(CLUSTER_ROLE_BINDINGS)
    assert UPLOAD_API_SERVICE not in harness.names(API_SERVICES)
    # The DataVolumes' API, who may use it, the namespace and the CDI object stay.
    assert harness.crds() >= CDI_CRDS
    assert harness.names(CLUSTER_ROLES) >= USER_ROLES
    assert harness.names(NAMESPACES) == {"cdi"}
    assert harness.names(CDIS) == {"cdi"}
    assert harness.names(DATA_VOLUMES) == {"disk"}
    harness.gates(GATE)
    harness.sync()
    assert harness.names(DEPLOYMENTS, "cdi") == CDI_DEPLOYMENTS
    assert harness.names(SECRETS, "cdi") == CDI_CERT_SECRETS


def test_uninstalling_keeps_only_what_holds_the_datavolumes(harness: CdiHarness) -> None:
    _with_gate(harness)
    kv = harness.kubevirt()
    kv["metadata"]["deletionTimestamp"] = "2026-06-01T00:00:00Z"
    harness.api.objects[(KUBEVIRTS.plural, NS, "kubevirt")] = kv
    for _ in range(3):
        harness.sync()
    assert harness.kubevirt()["status"]["phase"] == "Deleted"
    assert harness.crds() == CDI_CRDS
    assert harness.names(NAMESPACES) == {"cdi"}
    # The user roles go with the rest of the installation's RBAC.
    assert harness.names(CLUSTER_ROLES) == set()
    assert harness.names(CLUSTER_ROLE_BINDINGS) == set()
    assert harness.api.objects_of(DEPLOYMENTS) == []
    assert harness.api.objects_of(SERVICE_ACCOUNTS) == []
    # Nothing of the upload path is left either.
    for resource in (SERVICES, SECRETS, CONFIG_MAPS, ROLES, ROLE_BINDINGS, API_SERVICES):
        assert harness.api.objects_of(resource) == [], resource.plural


# The objects themselves.


def _installed(**spec: Any) -> dict[tuple[str, str], JSON]:
    developer = {"featureGates": [GATE]}
    kv = KubeVirt.model_validate(
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "KubeVirt",
            "metadata": {"name": "kubevirt", "namespace": NS},
            "spec": {"configuration": {"developerConfiguration": developer}, **spec},
        }
    )
    config = install_config(kv, namespace=NS, operator_image="reg.test/kv/virt-operator:v1")
    return {(obj["kind"], obj["metadata"]["name"]): obj for obj in install_strategy(config)}


def test_the_controller_runs_the_crs_images_and_pull_policy() -> None:
    installed = _installed(imageRegistry="registry.test/kv", imageTag="v9", imagePullPolicy="Always")
    deployment = installed[("Deployment", "cdi-deployment")]
    assert deployment["metadata"]["namespace"] == "cdi"
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "registry.test/kv/cdi-controller:v9"
    assert container["imagePullPolicy"] == "Always"
    assert container["command"] == ["cdi-controller"]
    assert container["args"] == [
        "--importer-image",
        "registry.test/kv/cdi-importer:v9",
        "--pull-policy",
        "Always",
        "--health-port",
        "8080",
        "--namespace",
        NS,
        "-v",
        "2",
    ]
    assert container["livenessProbe"]["httpGet"] == {"scheme": "HTTP", "port": 8080, "path": "/healthz"}
    assert container["readinessProbe"]["httpGet"] == {"scheme": "HTTP", "port": 8080, "path": "/readyz"}
    assert pod["serviceAccountName"] == "cdi-sa"
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_the_controllers_labels_are_cdis() -> None:
    deployment = _installed()[("Deployment", "cdi-deployment")]
    selector = {"cdi.kubevirt.io": "cdi-deployment"}
    assert deployment["spec"]["selector"]["matchLabels"] == selector
    for labels in (deployment["metadata"]["labels"], deployment["spec"]["template"]["metadata"]["labels"]):
        assert labels.items() >= {"app": "containerized-data-importer", **selector}.items()


def test_the_gate_does_not_change_the_deployment_id() -> None:
    def config(gates: list[str]) -> InstallConfig:
        developer = {"featureGates": gates}
        kv = KubeVirt.model_validate(
            {
                "metadata": {"name": "kubevirt", "namespace": NS},
                "spec": {"configuration": {"developerConfiguration": developer}},
            }
        )
        return install_config(kv, namespace=NS, operator_image="reg.test/kv/virt-operator:v1")

    without, with_gate = config([]), config([GATE])
    assert (without.data_importer, with_gate.data_importer) == (False, True)
    assert without.deployment_id == with_gate.deployment_id


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> JSON:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def test_the_user_roles_aggregate_as_cdis() -> None:
    installed = _installed()
    for role, aggregate in (("admin", "admin"), ("edit", "edit"), ("view", "view")):
        labels = installed[("ClusterRole", f"cdi.kubevirt.io:{role}")]["metadata"]["labels"]
        assert labels[f"rbac.authorization.k8s.io/aggregate-to-{aggregate}"] == "true"
    admin = installed[("ClusterRole", "cdi.kubevirt.io:admin")]["rules"]
    assert _rule(["cdi.kubevirt.io"], ["datavolumes/source"], ["create"]) in admin
    assert _rule(["upload.cdi.kubevirt.io"], ["uploadtokenrequests"], ["*"]) in admin
    assert installed[("ClusterRole", "cdi.kubevirt.io:edit")]["rules"] == admin
    view = installed[("ClusterRole", "cdi.kubevirt.io:view")]["rules"]
    assert all(set(rule["verbs"]) <= {"get", "list", "watch"} for rule in view[:-1])
    assert installed[("ClusterRole", "cdi.kubevirt.io:config-reader")]["rules"] == [
        _rule(["cdi.kubevirt.io"], ["cdiconfigs", "storageprofiles"], ["get", "list", "watch"])
    ]
    binding = installed[("ClusterRoleBinding", "cdi.kubevirt.io:config-reader")]
    assert {subject["name"] for subject in binding["subjects"]} == {
        "system:authenticated",
        "system:serviceaccount",
    }


def test_the_controller_reads_only_the_upload_signers_and_renews_only_its_lease() -> None:
    installed = _installed()
    for rule in installed[("ClusterRole", "cdi")]["rules"]:
        if "" in rule["apiGroups"] and {"secrets", "configmaps", "*"} & set(rule["resources"]):
            # An upload pod's certificate Secret: created, then collected with its pod.
            assert rule == _rule([""], ["secrets"], ["create"])
    assert (
        _rule([""], ["pods", "services"], ["get", "list", "watch", "create", "delete"])
        in installed[("ClusterRole", "cdi")]["rules"]
    )
    signers = installed[("Role", "cdi-deployment-signers")]
    assert signers["metadata"]["namespace"] == "cdi"
    assert signers["rules"] == [
        {
            **_rule([""], ["secrets"], ["get", "list", "watch"]),
            # The token key: clone tokens are checked, and the controller's own signed, with it.
            "resourceNames": [
                "cdi-uploadserver-signer",
                "cdi-uploadserver-client-signer",
                "cdi-api-signing-key",
            ],
        },
        {
            **_rule([""], ["configmaps"], ["get", "list", "watch"]),
            "resourceNames": ["cdi-uploadserver-signer-bundle", "cdi-uploadserver-client-signer-bundle"],
        },
    ]
    assert installed[("RoleBinding", "cdi-deployment-signers")]["subjects"] == [
        {"kind": "ServiceAccount", "name": "cdi-sa", "namespace": "cdi"}
    ]
    assert installed[("Role", "cdi-deployment")]["rules"] == [
        _rule(["coordination.k8s.io"], ["leases"], ["create"]),
        {
            **_rule(["coordination.k8s.io"], ["leases"], ["get", "update"]),
            "resourceNames": [cdi.LEADER_LEASE],
        },
    ]
    binding = installed[("ClusterRoleBinding", "cdi-sa")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "cdi-sa", "namespace": "cdi"}]


# The operator's caches.


def test_cache_union_reads_every_namespaces_cache() -> None:
    ours: Store[JSON] = Store()
    theirs: Store[JSON] = Store()
    ours.upsert({"metadata": {"name": "a", "namespace": "kubevirt"}})
    theirs.upsert({"metadata": {"name": "b", "namespace": "cdi"}})
    union = CacheUnion([ours, theirs])
    assert union.get_by_key("cdi/b") == {"metadata": {"name": "b", "namespace": "cdi"}}
    assert union.get_by_key("cdi/a") is None
    assert [obj["metadata"]["name"] for obj in union.list()] == ["a", "b"]


def test_the_operator_watches_the_importers_namespace_too() -> None:
    operator = _operator("https://api.test:6443", _VersionServer())  # never started: no request made
    assert isinstance(operator.cache(DEPLOYMENTS), CacheUnion)
    assert isinstance(operator.cache(SECRETS), CacheUnion)  # the install namespace's, and CDI's by name
    assert isinstance(operator.cache(CONFIG_MAPS), CacheUnion)
    assert operator.cache(CDIS).list() == []  # made on first use
    assert not operator.synced(CDIS)
    with pytest.raises(KeyError):
        operator.cache(DATA_VOLUMES)


def test_the_crd_names_watched_are_those_installed() -> None:
    assert set(cdi.crd_names()) == {crd["metadata"]["name"] for crd in cdi.crds()} == CDI_CRDS
