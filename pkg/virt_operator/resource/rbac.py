"""Service accounts and RBAC of the KubeVirt components, with the rules KubeVirt v1.6 grants them.

Each rule is written as ``(api_groups, resources, verbs)``; :func:`rules` turns the table into
``rbac.authorization.k8s.io/v1`` PolicyRules.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubevirt.virt_operator.certificates import EXPORT_CA_SECRET
from kubevirt_api.core.v1.constants import APP_LABEL
from kubevirt_api.view import JSON

API_SERVICE_ACCOUNT = "kubevirt-apiserver"
CONTROLLER_SERVICE_ACCOUNT = "kubevirt-controller"
HANDLER_SERVICE_ACCOUNT = "kubevirt-handler"
EXPORTPROXY_SERVICE_ACCOUNT = "kubevirt-exportproxy"
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"

Rule = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]

_ALL_VERBS = ("get", "list", "watch", "delete", "update", "create", "patch")
_READ = ("get", "list", "watch")

_CONTROLLER_NAMESPACED_RULES: tuple[Rule, ...] = (
    (("route.openshift.io",), ("routes",), ("list", "get", "watch")),
    (("",), ("secrets",), ("list", "get", "watch")),
    (("networking.k8s.io",), ("ingresses",), ("list", "get", "watch")),
    (("coordination.k8s.io",), ("leases",), _ALL_VERBS),
)

_CONTROLLER_CLUSTER_RULES: tuple[Rule, ...] = (
    (("",), ("namespaces",), ("get", "list", "watch", "patch")),
    (("policy",), ("poddisruptionbudgets",), ("get", "list", "watch", "delete", "create", "patch")),
    (("",), ("pods", "configmaps", "endpoints", "services"), _ALL_VERBS),
    (("",), ("events",), ("update", "create", "patch")),
    (("",), ("secrets",), ("create",)),
    (("",), ("pods/finalizers",), ("update",)),
    (("",), ("pods/eviction",), ("create",)),
    (("",), ("pods/status",), ("patch",)),
    (("",), ("nodes",), ("get", "list", "watch", "update", "patch")),
    (("apps",), ("daemonsets",), ("list",)),
    (("apps",), ("controllerrevisions",), ("watch", "list", "create", "delete", "get", "update")),
    (("",), ("persistentvolumeclaims",), ("get", "list", "watch", "create", "update", "delete", "patch")),
    (
        ("snapshot.kubevirt.io",),
        (
            "virtualmachinesnapshots",
            "virtualmachinesnapshots/status",
            "virtualmachinesnapshots/finalizers",
            "virtualmachinesnapshotcontents",
            "virtualmachinesnapshotcontents/status",
            "virtualmachinesnapshotcontents/finalizers",
            "virtualmachinerestores",
            "virtualmachinerestores/status",
        ),
        ("get", "list", "watch", "create", "update", "delete", "patch"),
    ),
    (
        ("export.kubevirt.io",),
        ("virtualmachineexports", "virtualmachineexports/status", "virtualmachineexports/finalizers"),
        ("get", "list", "watch", "create", "update", "delete", "patch"),
    ),
    (
        ("pool.kubevirt.io",),
        (
            "virtualmachinepools",
            "virtualmachinepools/finalizers",
            "virtualmachinepools/status",
            "virtualmachinepools/scale",
        ),
        ("watch", "list", "create", "delete", "update", "patch", "get"),
    ),
    (("kubevirt.io",), ("*",), ("*",)),
    # Implied by the wildcard, but OwnerReferencesPermissionEnforcement looks for it by name.
    (("kubevirt.io",), ("virtualmachines/finalizers", "virtualmachineinstances/finalizers"), ("update",)),
    (
        ("subresources.kubevirt.io",),
        (
            "virtualmachines/stop",
            "virtualmachineinstances/addvolume",
            "virtualmachineinstances/removevolume",
            "virtualmachineinstances/freeze",
            "virtualmachineinstances/unfreeze",
            "virtualmachineinstances/reset",
            "virtualmachineinstances/softreboot",
            "virtualmachineinstances/sev/setupsession",
            "virtualmachineinstances/sev/injectlaunchsecret",
        ),
        ("update",),
    ),
    (("cdi.kubevirt.io",), ("*",), ("*",)),
    (("k8s.cni.cncf.io",), ("network-attachment-definitions",), ("get",)),
    (("apiextensions.k8s.io",), ("customresourcedefinitions",), _READ),
    (("authorization.k8s.io",), ("subjectaccessreviews",), ("create",)),
    (("snapshot.storage.k8s.io",), ("volumesnapshotclasses",), _READ),
    (
        ("snapshot.storage.k8s.io",),
        ("volumesnapshots",),
        ("get", "list", "watch", "create", "update", "delete"),
    ),
    (("storage.k8s.io",), ("storageclasses",), _READ),
    (
        ("instancetype.kubevirt.io",),
        (
            "virtualmachineinstancetypes",
            "virtualmachineclusterinstancetypes",
            "virtualmachinepreferences",
            "virtualmachineclusterpreferences",
        ),
        _READ,
    ),
    (("migrations.kubevirt.io",), ("migrationpolicies",), _READ),
    (
        ("clone.kubevirt.io",),
        ("virtualmachineclones", "virtualmachineclones/status", "virtualmachineclones/finalizers"),
        ("get", "list", "watch", "update", "patch", "delete"),
    ),
    (("",), ("namespaces",), ("get",)),
    (("",), ("resourcequotas",), ("list", "watch")),
    (("batch",), ("jobs",), ("create", "get", "delete")),
    (("resource.k8s.io",), ("resourceslices", "resourceclaims"), ("list", "watch", "get")),
)

_API_NAMESPACED_RULES: tuple[Rule, ...] = ((("",), ("configmaps",), _READ),)

_INSTANCETYPES = (
    "virtualmachineinstancetypes",
    "virtualmachineclusterinstancetypes",
    "virtualmachinepreferences",
    "virtualmachineclusterpreferences",
)

_API_CLUSTER_RULES: tuple[Rule, ...] = (
    (("",), ("pods",), ("get", "list", "delete", "patch")),
    (
        ("kubevirt.io",),
        ("virtualmachines", "virtualmachineinstances"),
        ("get", "list", "watch", "patch", "update"),
    ),
    (("",), ("persistentvolumeclaims",), ("get", "list")),
    (("kubevirt.io",), ("virtualmachines/status",), ("patch",)),
    (("kubevirt.io",), ("virtualmachineinstancemigrations",), ("create", "get", "list", "watch", "patch")),
    (("kubevirt.io",), ("virtualmachineinstancepresets",), ("watch", "list")),
    (("",), ("configmaps",), _READ),
    (("",), ("limitranges",), ("watch", "list")),
    (("apiextensions.k8s.io",), ("customresourcedefinitions",), _READ),
    (("kubevirt.io",), ("kubevirts",), _READ),
    (
        ("snapshot.kubevirt.io",),
        ("virtualmachinesnapshots", "virtualmachinerestores", "virtualmachinesnapshotcontents"),
        _READ,
    ),
    (("cdi.kubevirt.io",), ("datasources", "datavolumes"), _READ),
    (("",), ("namespaces",), _READ),
    (("instancetype.kubevirt.io",), _INSTANCETYPES, _READ),
    (("migrations.kubevirt.io",), ("migrationpolicies",), _READ),
    (("apps",), ("controllerrevisions",), ("create", "list", "get")),
)

_HANDLER_NAMESPACED_RULES: tuple[Rule, ...] = ((("",), ("configmaps",), _READ),)

_HANDLER_CLUSTER_RULES: tuple[Rule, ...] = (
    (("kubevirt.io",), ("virtualmachineinstances",), ("update", "patch", "list", "watch")),
    (("",), ("nodes",), ("patch", "list", "watch", "get")),
    (("",), ("configmaps",), _READ),
    (("",), ("events",), ("create", "patch")),
    (("apiextensions.k8s.io",), ("customresourcedefinitions",), _READ),
    (("kubevirt.io",), ("kubevirts",), _READ),
    (("migrations.kubevirt.io",), ("migrationpolicies",), _READ),
    (("apps",), ("controllerrevisions",), ("get",)),
)


# virt-exportproxy reads the exports and the KubeVirt CR (its tlsConfiguration) everywhere, and of its own
# namespace only the export CA bundle.
_EXPORTPROXY_CLUSTER_RULES: tuple[Rule, ...] = (
    (("export.kubevirt.io",), ("virtualmachineexports",), _READ),
    (("kubevirt.io",), ("kubevirts",), ("list", "watch")),
)
_EXPORTPROXY_NAMESPACED_RULE: Rule = (("",), ("configmaps",), _READ)


def rules(table: Iterable[Rule]) -> list[JSON]:
    return [
        {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}
        for groups, resources, verbs in table
    ]


def metadata(name: str, namespace: str | None = None) -> JSON:
    metadata: JSON = {"name": name, "labels": {APP_LABEL: ""}}
    if namespace is not None:
        metadata["namespace"] = namespace
    return metadata


def _binding(kind: str, name: str, namespace: str, account_namespace: str) -> JSON:
    binding: JSON = {
        "apiVersion": RBAC_API_VERSION,
        "kind": f"{kind}Binding",
        "metadata": metadata(name, namespace if kind == "Role" else None),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": account_namespace}],
    }
    return binding


def api_rbac(namespace: str) -> list[JSON]:
    """virt-api's ServiceAccount, Role and ClusterRole, bound, plus the delegation of authentication and
    authorization reviews an aggregated API server needs."""
    objects = _component_rbac(
        API_SERVICE_ACCOUNT, namespace, rules(_API_NAMESPACED_RULES), rules(_API_CLUSTER_RULES)
    )
    objects.append(
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRoleBinding",
            "metadata": metadata("kubevirt-apiserver-auth-delegator"),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:auth-delegator",
            },
            "subjects": [{"kind": "ServiceAccount", "name": API_SERVICE_ACCOUNT, "namespace": namespace}],
        }
    )
    return objects


def controller_rbac(namespace: str) -> list[JSON]:
    """virt-controller's ServiceAccount, its Role in the install namespace and its ClusterRole, bound."""
    return _component_rbac(
        CONTROLLER_SERVICE_ACCOUNT,
        namespace,
        rules(_CONTROLLER_NAMESPACED_RULES),
        rules(_CONTROLLER_CLUSTER_RULES),
    )


def handler_rbac(namespace: str) -> list[JSON]:
    """virt-handler's ServiceAccount, its Role in the install namespace and its ClusterRole, bound."""
    return _component_rbac(
        HANDLER_SERVICE_ACCOUNT, namespace, rules(_HANDLER_NAMESPACED_RULES), rules(_HANDLER_CLUSTER_RULES)
    )


def exportproxy_rbac(namespace: str) -> list[JSON]:
    """virt-exportproxy's ServiceAccount, its Role (the export CA bundle, by name) and its ClusterRole,
    bound (KubeVirt's ``rbac/exportproxy.go``). Installed whatever the VMExport gate says, as KubeVirt
    installs them; only the Deployment follows the gate."""
    (configmaps,) = rules([_EXPORTPROXY_NAMESPACED_RULE])
    configmaps["resourceNames"] = [EXPORT_CA_SECRET]
    return _component_rbac(
        EXPORTPROXY_SERVICE_ACCOUNT, namespace, [configmaps], rules(_EXPORTPROXY_CLUSTER_RULES)
    )


def _component_rbac(name: str, namespace: str, namespaced: list[JSON], cluster: list[JSON]) -> list[JSON]:
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(name, namespace)},
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "Role",
            "metadata": metadata(name, namespace),
            "rules": namespaced,
        },
        _binding("Role", name, namespace, namespace),
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRole",
            "metadata": metadata(name),
            "rules": cluster,
        },
        _binding("ClusterRole", name, namespace, namespace),
    ]
