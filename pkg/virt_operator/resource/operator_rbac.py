"""virt-operator's own ServiceAccount and RBAC, published in the operator manifest (KubeVirt's
``rbac/operator.go``). Kubernetes only lets a subject grant permissions it holds itself, so the operator's
ClusterRole also carries every rule of the roles it installs."""

from __future__ import annotations

from typing import Any

from kubevirt.virt_operator.resource import cluster_roles, rbac
from kubevirt.virt_operator.resource.rbac import RBAC_API_VERSION, Rule, metadata, rules

JSON = dict[str, Any]
OPERATOR_SERVICE_ACCOUNT = "kubevirt-operator"
_ALL = ("get", "list", "watch", "create", "delete", "patch", "update")

_OPERATOR_CLUSTER_RULES: tuple[Rule, ...] = (
    (("kubevirt.io",), ("kubevirts",), ("get", "list", "watch", "patch", "update")),
    (("kubevirt.io",), ("kubevirts/status", "kubevirts/finalizers"), ("get", "patch", "update")),
    (("",), ("serviceaccounts", "services", "endpoints", "pods/exec"), _ALL),
    (("",), ("configmaps",), ("patch", "delete")),
    (("batch",), ("jobs",), ("get", "list", "watch", "create", "delete", "patch")),
    (("apps",), ("controllerrevisions",), ("watch", "list", "create", "delete", "patch")),
    (("apps",), ("deployments", "daemonsets"), ("get", "list", "watch", "create", "delete", "patch")),
    (("policy",), ("poddisruptionbudgets",), ("get", "list", "watch", "create", "delete", "patch")),
    (("rbac.authorization.k8s.io",), ("clusterroles", "clusterrolebindings", "roles", "rolebindings"), _ALL),
    (
        ("apiextensions.k8s.io",),
        ("customresourcedefinitions",),
        ("get", "list", "watch", "create", "delete", "patch"),
    ),
    (
        ("admissionregistration.k8s.io",),
        (
            "validatingwebhookconfigurations",
            "mutatingwebhookconfigurations",
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicies",
        ),
        _ALL,
    ),
    (("apiregistration.k8s.io",), ("apiservices",), _ALL),
    (("monitoring.coreos.com",), ("servicemonitors", "prometheusrules"), _ALL),
    (("",), ("namespaces",), ("get", "list", "watch", "patch")),
    (("authentication.k8s.io",), ("tokenreviews",), ("create",)),
    (("authorization.k8s.io",), ("subjectaccessreviews",), ("create",)),
)

_OPERATOR_NAMESPACED_RULES: tuple[Rule, ...] = (
    (("",), ("secrets",), ("create", "get", "list", "watch", "patch", "delete")),
    (("",), ("configmaps",), ("create", "get", "list", "watch", "patch", "delete")),
    (("route.openshift.io",), ("routes",), ("create", "get", "list", "watch", "patch", "delete")),
    (("route.openshift.io",), ("routes/custom-host",), ("create",)),
    (("coordination.k8s.io",), ("leases",), _ALL),
)


def _installed_rules(namespace: str) -> list[JSON]:
    """Every rule of every role the operator installs."""
    installed = [
        *rbac.api_rbac(namespace),
        *rbac.controller_rbac(namespace),
        *rbac.handler_rbac(namespace),
        *cluster_roles.cluster_roles(),
    ]
    found: list[JSON] = []
    for obj in installed:
        for rule in obj.get("rules", ()):
            if rule not in found:
                found.append(rule)
    return found


def operator_rbac(namespace: str) -> list[JSON]:
    name = OPERATOR_SERVICE_ACCOUNT
    cluster_rules = rules(_OPERATOR_CLUSTER_RULES)
    cluster_rules += [rule for rule in _installed_rules(namespace) if rule not in cluster_rules]
    subjects = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
    role_ref = {"apiGroup": "rbac.authorization.k8s.io", "name": name}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(name, namespace)},
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRole",
            "metadata": metadata(name),
            "rules": cluster_rules,
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRoleBinding",
            "metadata": metadata(name),
            "roleRef": {**role_ref, "kind": "ClusterRole"},
            "subjects": subjects,
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "Role",
            "metadata": metadata(name, namespace),
            "rules": rules(_OPERATOR_NAMESPACED_RULES),
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "RoleBinding",
            "metadata": metadata(name, namespace),
            "roleRef": {**role_ref, "kind": "Role"},
            "subjects": subjects,
        },
    ]
