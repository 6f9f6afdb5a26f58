"""virt-operator's own RBAC: KubeVirt v1.6's rules (``rbac/operator.go``), namespaced ones kept in a Role
of the install namespace, and enough in each place to create every role the operator installs."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kubevirt.virt_operator.cdi_certificates import CdiIssued, reconcile_cdi_certificates
from kubevirt.virt_operator.certificates import RotationPolicy, reconcile_certificates
from kubevirt.virt_operator.resource import cdi
from kubevirt.virt_operator.resource.config import install_config
from kubevirt.virt_operator.resource.operator_rbac import operator_rbac
from kubevirt.virt_operator.resource.strategy import install_strategy
from kubevirt.virt_operator.resources import BY_KIND
from kubevirt_api.core.v1.kubevirt import KubeVirt

JSON = dict[str, Any]
NS = "kubevirt"
_ALL = ["get", "list", "watch", "create", "delete", "update", "patch"]
_WRITE = ["get", "list", "watch", "create", "delete", "patch"]


def _rule(groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None) -> JSON:
    rule: JSON = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names is not None:
        rule["resourceNames"] = names
    return rule


# KubeVirt's NewOperatorClusterRole, before the components' rules. Left out: the duplicated "patch" of
# the first rule, and the three security.openshift.io rules (this operator manages no SCCs).
KUBEVIRT_OPERATOR_CLUSTER_RULES = [
    _rule(["kubevirt.io"], ["kubevirts"], ["get", "list", "watch", "patch", "update"]),
    _rule(
        [""],
        ["serviceaccounts", "services", "endpoints", "pods/exec"],
        ["get", "list", "watch", "create", "update", "delete", "patch"],
    ),
    _rule([""], ["configmaps"], ["patch", "delete"]),
    _rule(["batch"], ["jobs"], _WRITE),
    _rule(["apps"], ["controllerrevisions"], ["watch", "list", "create", "delete", "patch"]),
    _rule(["apps"], ["deployments", "daemonsets"], _WRITE),
    _rule(
        ["rbac.authorization.k8s.io"],
        ["clusterroles", "clusterrolebindings", "roles", "rolebindings"],
        ["get", "list", "watch", "create", "delete", "patch", "update"],
    ),
    _rule(["apiextensions.k8s.io"], ["customresourcedefinitions"], _WRITE),
    _rule(
        ["admissionregistration.k8s.io"],
        [
            "validatingwebhookconfigurations",
            "mutatingwebhookconfigurations",
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicies",
        ],
        _ALL,
    ),
    _rule(["apiregistration.k8s.io"], ["apiservices"], _ALL),
    _rule(["monitoring.coreos.com"], ["servicemonitors", "prometheusrules"], _ALL),
    _rule([""], ["namespaces"], ["get", "list", "watch", "patch"]),
]
# getKubeVirtComponentsClusterRules' auth delegation, after the components' rules.
KUBEVIRT_AUTH_DELEGATION_RULES = [
    _rule(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
    _rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
]
# The upload path's certificate Secrets in the DataVolume importer's namespace (CDI's cert factory).
CDI_CERTIFICATE_SECRETS = [
    "cdi-apiserver-signer",
    "cdi-uploadproxy-signer",
    "cdi-uploadserver-signer",
    "cdi-uploadserver-client-signer",
    "cdi-apiserver-server-cert",
    "cdi-uploadproxy-server-cert",
    "cdi-uploadserver-client-cert",
]
# The project's additions: the DataVolume importer's namespace and the upload path's certificates in it.
DATA_IMPORTER_RULES = [
    _rule([""], ["namespaces"], ["create"]),
    _rule([""], ["configmaps"], ["create"]),
    _rule([""], ["secrets"], ["create"]),
    _rule([""], ["secrets"], ["get", "list", "watch", "patch", "delete"], CDI_CERTIFICATE_SECRETS),
]
CDI_NAMESPACE = "cdi"
# What the operator may read of Secrets anywhere: the upload path's certificates and the token key
# cdi-apiserver makes (granted to it by name).
CDI_READABLE_SECRETS = {*CDI_CERTIFICATE_SECRETS, "cdi-api-signing-key"}
# KubeVirt's certificate Secrets; the last two belong to a component this project does not install.
KUBEVIRT_CERTIFICATE_SECRETS = {
    "kubevirt-ca",
    "kubevirt-export-ca",
    "kubevirt-virt-handler-certs",
    "kubevirt-virt-handler-server-certs",
    "kubevirt-operator-certs",
    "kubevirt-virt-api-certs",
    "kubevirt-controller-certs",
    "kubevirt-exportproxy-certs",
}
NOT_INSTALLED_SECRETS = {
    "kubevirt-synchronization-controller-certs",
    "kubevirt-synchronization-controller-server-certs",
}
_NAMESPACED_WRITE = ["create", "get", "list", "watch", "patch", "delete"]
# NewOperatorRole, before the components' Roles' rules (the Secrets rule's names compared apart).
KUBEVIRT_OPERATOR_ROLE_RULES = [
    _rule([""], ["configmaps"], _NAMESPACED_WRITE),
    _rule(["route.openshift.io"], ["routes"], _NAMESPACED_WRITE),
    _rule(["route.openshift.io"], ["routes/custom-host"], ["create"]),
    _rule(
        ["coordination.k8s.io"], ["leases"], ["get", "list", "watch", "delete", "update", "create", "patch"]
    ),
]


def _operator_objects(namespace: str = NS) -> dict[str, JSON]:
    return {obj["kind"]: obj for obj in operator_rbac(namespace)}


def _installed(namespace: str = NS) -> list[JSON]:
    """Everything the operator installs for a KubeVirt CR with the DataImporter gate (the most it
    installs)."""
    kv = KubeVirt.model_validate(
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "KubeVirt",
            "metadata": {"name": "kubevirt", "namespace": namespace},
            "spec": {"configuration": {"developerConfiguration": {"featureGates": ["DataImporter"]}}},
        }
    )
    return install_strategy(
        install_config(kv, namespace=namespace, operator_image="reg.test/virt-operator:v1")
    )


def _installed_rules(kind: str, namespace: str | None = None) -> list[JSON]:
    return [
        rule
        for obj in _installed()
        if obj["kind"] == kind and (namespace is None or obj["metadata"]["namespace"] == namespace)
        for rule in obj["rules"]
    ]


def _sorted(rules: list[JSON]) -> list[str]:
    return sorted(repr(sorted(rule.items())) for rule in rules)


def test_the_cluster_role_is_kubevirts_own_rules_then_the_installed_roles_outside_its_namespace() -> None:
    rules = _operator_objects()["ClusterRole"]["rules"]
    own, rest = rules[: len(KUBEVIRT_OPERATOR_CLUSTER_RULES)], rules[len(KUBEVIRT_OPERATOR_CLUSTER_RULES) :]
    assert own == KUBEVIRT_OPERATOR_CLUSTER_RULES
    assert rest[-len(DATA_IMPORTER_RULES) :] == DATA_IMPORTER_RULES
    # The installed ClusterRoles' rules and those of the Roles in the importer's namespace (which the
    # operator's manifest cannot hold a Role in), in the strategy's order, then auth delegation.
    components = rest[: -len(DATA_IMPORTER_RULES) - len(KUBEVIRT_AUTH_DELEGATION_RULES)]
    assert _sorted(components) == _sorted(
        [*_installed_rules("ClusterRole"), *_installed_rules("Role", CDI_NAMESPACE)]
    )
    assert rest[len(components) : -len(DATA_IMPORTER_RULES)] == KUBEVIRT_AUTH_DELEGATION_RULES


def test_the_role_is_kubevirts_own_rules_then_the_installed_roles() -> None:
    role = _operator_objects()["Role"]
    assert role["metadata"]["namespace"] == NS
    secrets, *rules = role["rules"]
    assert set(secrets.pop("resourceNames")) == KUBEVIRT_CERTIFICATE_SECRETS
    assert secrets == _rule([""], ["secrets"], _NAMESPACED_WRITE)
    assert rules == [*KUBEVIRT_OPERATOR_ROLE_RULES, *_installed_rules("Role", NS)]


def test_the_role_names_every_certificate_secret_the_operator_writes() -> None:
    written = {obj["metadata"]["name"] for obj in _certificate_secrets()}
    (secrets, *_) = _operator_objects()["Role"]["rules"]
    assert written == set(secrets["resourceNames"])
    assert not written & NOT_INSTALLED_SECRETS


def _certificate_secrets() -> list[JSON]:
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    secrets: list[JSON] = reconcile_certificates(NS, RotationPolicy(), {}, {}, now).secrets
    return secrets


def _touches_secrets(rule: JSON) -> bool:
    groups, resources = rule["apiGroups"], rule["resources"]
    return ("" in groups or "*" in groups) and ("secrets" in resources or "*" in resources)


def test_the_cluster_role_reads_no_secret_but_the_upload_paths_by_name() -> None:
    # Cluster-wide Secret rights: the create virt-controller and cdi-controller have (it cannot be limited
    # by name, and reveals nothing), and the upload path's certificates and token key by name.
    cluster_wide = _operator_objects()["ClusterRole"]["rules"]
    for rule in cluster_wide:
        if _touches_secrets(rule) and rule["verbs"] != ["create"]:
            assert set(rule.get("resourceNames") or ["*"]) <= CDI_READABLE_SECRETS, rule
    for verb in ("get", "list", "watch", "patch", "update", "delete"):
        assert not _holds(cluster_wide, ("", "secrets", verb, "kubevirt-ca")), verb
        assert not _holds(cluster_wide, ("", "secrets", verb, "")), verb
    for name in CDI_CERTIFICATE_SECRETS:
        for verb in ("get", "list", "watch", "create", "patch", "delete"):
            assert _holds(cluster_wide, ("", "secrets", verb, name)), (name, verb)


def test_the_role_writes_only_named_secrets() -> None:
    for rule in _operator_objects()["Role"]["rules"]:
        if _touches_secrets(rule) and set(rule["verbs"]) - {"get", "list", "watch"}:
            assert rule.get("resourceNames"), rule


def test_the_bindings_are_kubevirts() -> None:
    objects = _operator_objects("elsewhere")
    account = {"kind": "ServiceAccount", "name": "kubevirt-operator", "namespace": "elsewhere"}
    assert [obj["kind"] for obj in operator_rbac("elsewhere")] == [
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    ]
    binding = objects["RoleBinding"]
    assert (binding["metadata"]["name"], binding["metadata"]["namespace"]) == (
        "kubevirt-operator-rolebinding",
        "elsewhere",
    )
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "kubevirt-operator",
    }
    assert binding["subjects"] == [account]
    cluster_binding = objects["ClusterRoleBinding"]
    assert cluster_binding["metadata"]["name"] == "kubevirt-operator"
    assert cluster_binding["roleRef"]["kind"] == "ClusterRole"
    assert cluster_binding["subjects"] == [account]
    assert objects["Role"]["metadata"]["namespace"] == "elsewhere"


# Kubernetes' RBAC escalation check: creating or binding a role needs every permission it grants, held
# where it applies (cluster-wide for a ClusterRole, in the Role's namespace for a Role).


def _permissions(rule: JSON) -> set[tuple[str, str, str, str]]:
    names = rule.get("resourceNames") or [""]
    return {
        (group, resource, verb, name)
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        for name in names
    }


def _holds(rules: list[JSON], wanted: tuple[str, str, str, str]) -> bool:
    group, resource, verb, name = wanted
    for rule in rules:
        if (
            (group in rule["apiGroups"] or "*" in rule["apiGroups"])
            and (resource in rule["resources"] or "*" in rule["resources"])
            and (verb in rule["verbs"] or "*" in rule["verbs"])
            and (not rule.get("resourceNames") or name in rule["resourceNames"])
        ):
            return True
    return False


def _missing(held: list[JSON], granted: list[JSON]) -> list[tuple[str, str, str, str]]:
    return sorted(p for rule in granted for p in _permissions(rule) if not _holds(held, p))


# system:auth-delegator, which virt-api's ClusterRoleBinding refers to.
_AUTH_DELEGATOR = KUBEVIRT_AUTH_DELEGATION_RULES


@pytest.mark.parametrize("namespace", [NS, "elsewhere"])
def test_the_operator_holds_every_permission_it_grants(namespace: str) -> None:
    operator = _operator_objects(namespace)
    cluster_wide = operator["ClusterRole"]["rules"]
    in_namespace = [*cluster_wide, *operator["Role"]["rules"]]
    installed = _installed(namespace)
    roles = {(o["kind"], o["metadata"]["name"]): o for o in installed if o["kind"] in ("Role", "ClusterRole")}
    assert roles, "the install strategy holds roles"
    for (kind, name), role in roles.items():
        if kind == "Role":
            # In the importer's namespace only the ClusterRole's rules hold.
            held = in_namespace if role["metadata"]["namespace"] == namespace else cluster_wide
            assert role["metadata"]["namespace"] in (namespace, CDI_NAMESPACE)
            assert _missing(held, role["rules"]) == [], name
        else:
            assert _missing(cluster_wide, role["rules"]) == [], name
    for binding in (o for o in installed if o["kind"].endswith("Binding")):
        ref = binding["roleRef"]
        granted = (
            _AUTH_DELEGATOR
            if ref["name"] == "system:auth-delegator"
            else roles[(ref["kind"], ref["name"])]["rules"]
        )
        in_install_namespace = binding["metadata"].get("namespace") == namespace
        held = in_namespace if binding["kind"] == "RoleBinding" and in_install_namespace else cluster_wide
        assert _missing(held, granted) == [], binding["metadata"]["name"]


def test_leases_are_held_in_the_install_namespace_only() -> None:
    objects = _operator_objects()
    assert not _holds(objects["ClusterRole"]["rules"], ("coordination.k8s.io", "leases", "update", ""))
    assert _holds(objects["Role"]["rules"], ("coordination.k8s.io", "leases", "update", ""))


def test_the_operator_may_create_everything_it_installs_outside_its_namespace() -> None:
    # The DataVolume importer's namespace and what lives in it, the cluster-wide objects, and the CDI
    # object it creates once.
    cluster_wide = _operator_objects()["ClusterRole"]["rules"]
    outside = [obj for obj in _installed() if obj["metadata"].get("namespace") != NS]
    assert {obj["kind"] for obj in outside} >= {
        "Namespace",
        "ServiceAccount",
        "Deployment",
        "ClusterRole",
        "Service",
        "Role",
        "APIService",
    }
    certificates = [
        *_cdi_certificates().secrets,
        *_cdi_certificates().config_maps,
    ]
    for obj in [*outside, cdi.cdi_cr(), *certificates]:
        group = obj["apiVersion"].rpartition("/")[0]
        plural = BY_KIND[obj["kind"]].plural if obj["kind"] in BY_KIND else "cdis"
        name = obj["metadata"]["name"] if obj["kind"] == "Secret" else ""
        for verb in ("create", "patch", "get", "list", "watch", "delete"):
            if verb == "delete" and obj["kind"] in ("Namespace", "CDI"):
                continue  # they outlive the install
            assert _holds(cluster_wide, (group, plural, verb, name)), (obj["kind"], verb)


def _cdi_certificates() -> CdiIssued:
    return reconcile_cdi_certificates({}, {}, datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
