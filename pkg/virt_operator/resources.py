"""The API resources virt-operator installs and watches, by kind."""

from __future__ import annotations

from typing import Any, Final

from kubevirt.client import Resource
from kubevirt.client.resources import (
    POD_DISRUPTION_BUDGETS,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
)

JSON = dict[str, Any]

CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount", namespaced=True)
SERVICES = Resource("", "v1", "services", "Service", namespaced=True)
SECRETS = Resource("", "v1", "secrets", "Secret", namespaced=True)
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
_RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = Resource(_RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource(_RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False)
ROLES = Resource(_RBAC, "v1", "roles", "Role", namespaced=True)
ROLE_BINDINGS = Resource(_RBAC, "v1", "rolebindings", "RoleBinding", namespaced=True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", namespaced=True)
DAEMON_SETS = Resource("apps", "v1", "daemonsets", "DaemonSet", namespaced=True)
_ADMISSION = "admissionregistration.k8s.io"
VALIDATING_WEBHOOKS = Resource(
    _ADMISSION, "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", namespaced=False
)
MUTATING_WEBHOOKS = Resource(
    _ADMISSION, "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", namespaced=False
)
API_SERVICES = Resource("apiregistration.k8s.io", "v1", "apiservices", "APIService", namespaced=False)

# In the order an uninstall removes them: what serves first, the API types last.
MANAGED: Final[tuple[Resource, ...]] = (
    DAEMON_SETS,
    DEPLOYMENTS,
    POD_DISRUPTION_BUDGETS,
    API_SERVICES,
    VALIDATING_WEBHOOKS,
    MUTATING_WEBHOOKS,
    SERVICES,
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    SECRETS,
    CONFIG_MAPS,
    CUSTOM_RESOURCE_DEFINITIONS,
)
# The common-instancetypes bundle. Kept apart from MANAGED: their CRDs are among what the operator
# installs, so they are watched only once those exist, and an uninstall removes them with the CRDs.
COMMON_INSTANCETYPES: Final[tuple[Resource, ...]] = (
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
)
BY_KIND: Final[dict[str, Resource]] = {
    resource.kind: resource for resource in (*MANAGED, *COMMON_INSTANCETYPES)
}


def resource_of(obj: JSON) -> Resource:
    kind = obj.get("kind", "")
    resource = BY_KIND.get(kind)
    if resource is None:
        raise ValueError(f"kind: virt-operator does not manage {kind!r} objects")
    return resource
