"""The API resources virt-operator installs and watches, by kind."""

from __future__ import annotations

from typing import Final

from kubevirt.client import Resource
from kubevirt.client.resources import (
    API_SERVICES,
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIG_MAPS,
    CUSTOM_RESOURCE_DEFINITIONS,
    DAEMON_SETS,
    DEPLOYMENTS,
    MUTATING_WEBHOOKS,
    NAMESPACES,
    POD_DISRUPTION_BUDGETS,
    PROMETHEUS_RULES,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICE_MONITORS,
    SERVICES,
    VALIDATING_WEBHOOKS,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
)
from kubevirt.virt_operator.cdi_certificates import secret_names as cdi_secret_names
from kubevirt_api.view import JSON

# The Prometheus operator's kinds: watched (cluster-wide, as the ServiceMonitor lives in Prometheus'
# namespace) only while the cluster serves them.
MONITORING: Final[tuple[Resource, ...]] = (SERVICE_MONITORS, PROMETHEUS_RULES)
# In the order an uninstall removes them: what serves first, the API types last.
MANAGED: Final[tuple[Resource, ...]] = (
    DAEMON_SETS,
    DEPLOYMENTS,
    POD_DISRUPTION_BUDGETS,
    API_SERVICES,
    VALIDATING_WEBHOOKS,
    MUTATING_WEBHOOKS,
    SERVICES,
    *MONITORING,
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    SECRETS,
    CONFIG_MAPS,
    NAMESPACES,
    CUSTOM_RESOURCE_DEFINITIONS,
)
# The kinds the DataVolume importer also has in its own namespace, watched there too.
IN_CDI_NAMESPACE: Final[tuple[Resource, ...]] = (
    DEPLOYMENTS,
    SERVICES,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    CONFIG_MAPS,
)
# Its Secrets are watched one by one, by name: the operator may read no other Secret there.
NAMED_IN_CDI_NAMESPACE: Final[dict[Resource, tuple[str, ...]]] = {SECRETS: tuple(cdi_secret_names())}
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
