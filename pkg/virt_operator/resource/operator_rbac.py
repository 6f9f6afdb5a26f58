"""virt-operator's own ServiceAccount and RBAC, published in the operator manifest, laid out as KubeVirt's
``rbac/operator.go``: a Role in the install namespace and a ClusterRole, each bound to the ServiceAccount.

Kubernetes only lets a subject grant permissions it holds itself, where the grant applies. So the
ClusterRole carries the operator's own cluster-wide rules plus every rule of the ClusterRoles it installs,
and the namespaced Role carries its own namespaced rules (certificate Secrets by name, ConfigMaps, Routes,
Leases) plus every rule of the Roles it installs, all of which live in the install namespace. Nothing
namespaced is widened to the whole cluster: the operator reads no Secret outside its namespace.

KubeVirt's three ``security.openshift.io`` SecurityContextConstraints rules are left out: this operator
manages no SCCs. The rules of KubeVirt's synchronization controller are absent with that component, which
this project does not install. The DataVolume importer's roles (installed under the DataImporter gate)
are counted among the components' whatever the gate. Its Roles in its own namespace cannot be held there
by a Role of the operator's manifest (that namespace is the operator's to create), so the ClusterRole
carries their rules, which name every Secret they touch. Beyond KubeVirt's rules, the operator creates the
importer's namespace and the bundle ConfigMaps in it, and writes the upload path's certificate Secrets by
name: the only Secrets it reads outside its namespace, wherever they are.
"""

from __future__ import annotations

from kubevirt.virt_operator import cdi_certificates
from kubevirt.virt_operator.certificates import CA_SECRET, EXPORT_CA_SECRET, component_certificates
from kubevirt.virt_operator.resource import cdi, cdi_upload, cluster_roles, rbac
from kubevirt.virt_operator.resource.rbac import RBAC_API_VERSION, Rule, metadata, rules
from kubevirt_api.view import JSON

OPERATOR_SERVICE_ACCOUNT = "kubevirt-operator"
OPERATOR_ROLE_BINDING = "kubevirt-operator-rolebinding"
_WRITE = ("get", "list", "watch", "create", "delete", "patch")
_WRITE_UPDATE = ("get", "list", "watch", "create", "delete", "update", "patch")
_NAMESPACED_WRITE = ("create", "get", "list", "watch", "patch", "delete")

_OPERATOR_CLUSTER_RULES: tuple[Rule, ...] = (
    (("kubevirt.io",), ("kubevirts",), ("get", "list", "watch", "patch", "update")),
    (
        ("",),
        ("serviceaccounts", "services", "endpoints", "pods/exec"),
        ("get", "list", "watch", "create", "update", "delete", "patch"),
    ),
    (("",), ("configmaps",), ("patch", "delete")),
    (("batch",), ("jobs",), _WRITE),
    (("apps",), ("controllerrevisions",), ("watch", "list", "create", "delete", "patch")),
    (("apps",), ("deployments", "daemonsets"), _WRITE),
    (
        ("rbac.authorization.k8s.io",),
        ("clusterroles", "clusterrolebindings", "roles", "rolebindings"),
        ("get", "list", "watch", "create", "delete", "patch", "update"),
    ),
    (("apiextensions.k8s.io",), ("customresourcedefinitions",), _WRITE),
    (
        ("admissionregistration.k8s.io",),
        (
            "validatingwebhookconfigurations",
            "mutatingwebhookconfigurations",
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicies",
        ),
        _WRITE_UPDATE,
    ),
    (("apiregistration.k8s.io",), ("apiservices",), _WRITE_UPDATE),
    (("monitoring.coreos.com",), ("servicemonitors", "prometheusrules"), _WRITE_UPDATE),
    (("",), ("namespaces",), ("get", "list", "watch", "patch")),
)
# Beyond KubeVirt's: the DataVolume importer's namespace is the operator's to create (never to delete,
# it outlives the importer), and so are the upload path's certificates in it: the bundle ConfigMaps (a
# create cannot be limited to a name; KubeVirt's rules already patch and delete ConfigMaps anywhere) and
# the Secrets, by name but for the create.
_DATA_IMPORTER_RULES: tuple[Rule, ...] = (
    (("",), ("namespaces",), ("create",)),
    (("",), ("configmaps",), ("create",)),
    (("",), ("secrets",), ("create",)),
)
_CDI_SECRET_VERBS = ("get", "list", "watch", "patch", "delete")

# What system:auth-delegator grants, which virt-api's binding to it needs the operator to hold.
_AUTH_DELEGATION_RULES: tuple[Rule, ...] = (
    (("authentication.k8s.io",), ("tokenreviews",), ("create",)),
    (("authorization.k8s.io",), ("subjectaccessreviews",), ("create",)),
)

_OPERATOR_NAMESPACED_RULES: tuple[Rule, ...] = (
    (("",), ("configmaps",), _NAMESPACED_WRITE),
    (("route.openshift.io",), ("routes",), _NAMESPACED_WRITE),
    (("route.openshift.io",), ("routes/custom-host",), ("create",)),
    (("coordination.k8s.io",), ("leases",), ("get", "list", "watch", "delete", "update", "create", "patch")),
)


def certificate_secrets(namespace: str) -> list[str]:
    """The Secrets the operator writes: its CAs and the certificates they sign."""
    return [CA_SECRET, EXPORT_CA_SECRET, *(spec.secret for spec in component_certificates(namespace))]


def _component_rbac(namespace: str) -> list[JSON]:
    """The components' RBAC objects, as the install strategy creates them (the DataVolume importer's
    whatever its gate says: the operator's own RBAC does not follow the CR)."""
    return [
        *rbac.api_rbac(namespace),
        *rbac.controller_rbac(namespace),
        *rbac.handler_rbac(namespace),
        *rbac.exportproxy_rbac(namespace),
        *cluster_roles.cluster_roles(),
        *cdi.controller_rbac(namespace),
        *cdi.user_roles(),
        *cdi_upload.apiserver_rbac(),
        *cdi_upload.uploadproxy_rbac(),
    ]


def _rules_of(kind: str, objects: list[JSON], namespace: str | None = None) -> list[JSON]:
    """The rules of the roles of ``kind`` (only those in ``namespace`` when one is given)."""
    return [
        rule
        for obj in objects
        if obj["kind"] == kind and (namespace is None or obj["metadata"].get("namespace") == namespace)
        for rule in obj.get("rules", ())
    ]


def _data_importer_rules() -> list[JSON]:
    secrets: JSON = {
        "apiGroups": [""],
        "resources": ["secrets"],
        "resourceNames": cdi_certificates.secret_names(),
        "verbs": list(_CDI_SECRET_VERBS),
    }
    return [*rules(_DATA_IMPORTER_RULES), secrets]


def operator_cluster_rules(namespace: str) -> list[JSON]:
    """The operator's own cluster-wide rules, then the components' ClusterRoles', then the rules of the
    components' Roles outside the install namespace, then auth delegation, then what installing the
    DataVolume importer needs besides."""
    objects = _component_rbac(namespace)
    elsewhere = [
        rule
        for obj in objects
        if obj["kind"] == "Role" and obj["metadata"].get("namespace") != namespace
        for rule in obj.get("rules", ())
    ]
    return [
        *rules(_OPERATOR_CLUSTER_RULES),
        *_rules_of("ClusterRole", objects),
        *elsewhere,
        *rules(_AUTH_DELEGATION_RULES),
        *_data_importer_rules(),
    ]


def operator_namespaced_rules(namespace: str) -> list[JSON]:
    """The operator's own rules in the install namespace, then the components' Roles' there."""
    secrets: JSON = {
        "apiGroups": [""],
        "resources": ["secrets"],
        # By name: the operator writes only its certificates. The components' Roles below still let
        # it read the namespace's Secrets, as virt-controller may.
        "resourceNames": certificate_secrets(namespace),
        "verbs": list(_NAMESPACED_WRITE),
    }
    components = _rules_of("Role", _component_rbac(namespace), namespace)
    return [secrets, *rules(_OPERATOR_NAMESPACED_RULES), *components]


def operator_rbac(namespace: str) -> list[JSON]:
    name = OPERATOR_SERVICE_ACCOUNT
    subjects = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
    role_ref = {"apiGroup": "rbac.authorization.k8s.io", "name": name}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(name, namespace)},
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "Role",
            "metadata": metadata(name, namespace),
            "rules": operator_namespaced_rules(namespace),
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "RoleBinding",
            "metadata": metadata(OPERATOR_ROLE_BINDING, namespace),
            "roleRef": {**role_ref, "kind": "Role"},
            "subjects": subjects,
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRole",
            "metadata": metadata(name),
            "rules": operator_cluster_rules(namespace),
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRoleBinding",
            "metadata": metadata(name),
            "roleRef": {**role_ref, "kind": "ClusterRole"},
            "subjects": subjects,
        },
    ]
