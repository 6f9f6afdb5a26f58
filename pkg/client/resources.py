"""The API resources the components read and write, named once: group, version, plural, kind, scope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import quote

from kubevirt_api.clone.v1beta1.types import CLONE_GROUP_NAME, CLONE_VERSIONS
from kubevirt_api.core.v1.constants import GROUP_NAME, POOL_GROUP_NAME
from kubevirt_api.core.v1.register import GroupVersionKind
from kubevirt_api.export.v1beta1.types import EXPORT_GROUP_NAME, EXPORT_VERSIONS
from kubevirt_api.instancetype import constants as instancetype
from kubevirt_api.migrations.v1alpha1.types import MIGRATIONS_GROUP_NAME, MIGRATIONS_VERSIONS
from kubevirt_api.snapshot.v1beta1.types import SNAPSHOT_GROUP_NAME, SNAPSHOT_VERSIONS

__all__ = [
    "API_SERVICES",
    "CDIS",
    "CDI_CONFIGS",
    "CLUSTER_ROLES",
    "CLUSTER_ROLE_BINDINGS",
    "CONFIG_MAPS",
    "CONTROLLER_REVISIONS",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "DAEMON_SETS",
    "DATA_SOURCES",
    "DATA_VOLUMES",
    "DEPLOYMENTS",
    "EVENTS",
    "INGRESSES",
    "INSTANCETYPE_RESOURCES",
    "KUBEVIRTS",
    "LEASES",
    "MIGRATION_POLICIES",
    "MUTATING_WEBHOOKS",
    "NAMESPACES",
    "NODES",
    "PERSISTENT_VOLUME_CLAIMS",
    "PODS",
    "POD_DISRUPTION_BUDGETS",
    "PROMETHEUS_RULES",
    "ROLES",
    "ROLE_BINDINGS",
    "SECRETS",
    "SERVICES",
    "SERVICE_ACCOUNTS",
    "SERVICE_MONITORS",
    "STORAGE_CLASSES",
    "SUBJECT_ACCESS_REVIEWS",
    "VALIDATING_WEBHOOKS",
    "VIRTUAL_MACHINES",
    "VIRTUAL_MACHINE_CLONES",
    "VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES",
    "VIRTUAL_MACHINE_CLUSTER_PREFERENCES",
    "VIRTUAL_MACHINE_EXPORTS",
    "VIRTUAL_MACHINE_INSTANCES",
    "VIRTUAL_MACHINE_INSTANCETYPES",
    "VIRTUAL_MACHINE_INSTANCE_MIGRATIONS",
    "VIRTUAL_MACHINE_INSTANCE_PRESETS",
    "VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS",
    "VIRTUAL_MACHINE_POOLS",
    "VIRTUAL_MACHINE_PREFERENCES",
    "VIRTUAL_MACHINE_RESTORES",
    "VIRTUAL_MACHINE_SNAPSHOTS",
    "VIRTUAL_MACHINE_SNAPSHOT_CONTENTS",
    "VOLUME_SNAPSHOTS",
    "VOLUME_SNAPSHOT_CLASSES",
    "Resource",
]


@dataclass(frozen=True)
class Resource:
    """One REST resource; ``group`` is ``""`` for the core API."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def group_version_kind(self) -> GroupVersionKind:
        return GroupVersionKind(self.group, self.version, self.kind)

    @property
    def api_version(self) -> str:
        """``v1`` for core, ``group/version`` otherwise (the objects' ``apiVersion``)."""
        return self.group_version_kind.api_version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path: ``/api/v1/namespaces/ns/pods/name/status`` and the like.

        Without a namespace a namespaced resource is addressed across all namespaces (lists and watches).
        """
        if name is None and subresource is not None:
            raise ValueError(f"{self.plural}: a subresource needs an object name")
        if namespace is not None and not self.namespaced:
            raise ValueError(f"{self.plural} is cluster-scoped: no namespace may be given")
        parts = ["/api", self.version] if not self.group else ["/apis", self.group, self.version]
        if namespace is not None:
            parts += ["namespaces", quote(namespace, safe="")]
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
        if subresource is not None:
            parts.append(subresource)
        return "/".join(parts)


PODS = Resource("", "v1", "pods", "Pod", namespaced=True)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
PERSISTENT_VOLUME_CLAIMS = Resource(
    "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", namespaced=True
)
CONTROLLER_REVISIONS = Resource("apps", "v1", "controllerrevisions", "ControllerRevision", namespaced=True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount", namespaced=True)
SERVICES = Resource("", "v1", "services", "Service", namespaced=True)
SECRETS = Resource("", "v1", "secrets", "Secret", namespaced=True)
_RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = Resource(_RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource(_RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False)
ROLES = Resource(_RBAC, "v1", "roles", "Role", namespaced=True)
ROLE_BINDINGS = Resource(_RBAC, "v1", "rolebindings", "RoleBinding", namespaced=True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", namespaced=True)
DAEMON_SETS = Resource("apps", "v1", "daemonsets", "DaemonSet", namespaced=True)
STORAGE_CLASSES = Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False)
INGRESSES = Resource("networking.k8s.io", "v1", "ingresses", "Ingress", namespaced=True)
SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)
VOLUME_SNAPSHOTS = Resource(
    "snapshot.storage.k8s.io", "v1", "volumesnapshots", "VolumeSnapshot", namespaced=True
)
VOLUME_SNAPSHOT_CLASSES = Resource(
    "snapshot.storage.k8s.io", "v1", "volumesnapshotclasses", "VolumeSnapshotClass", namespaced=False
)
POD_DISRUPTION_BUDGETS = Resource(
    "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", namespaced=True
)
_ADMISSION = "admissionregistration.k8s.io"
VALIDATING_WEBHOOKS = Resource(
    _ADMISSION, "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", namespaced=False
)
MUTATING_WEBHOOKS = Resource(
    _ADMISSION, "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", namespaced=False
)
API_SERVICES = Resource("apiregistration.k8s.io", "v1", "apiservices", "APIService", namespaced=False)
# The Prometheus operator's, as which virt-operator installs KubeVirt's scrape target and rules.
_MONITORING = "monitoring.coreos.com"
SERVICE_MONITORS = Resource(_MONITORING, "v1", "servicemonitors", "ServiceMonitor", namespaced=True)
PROMETHEUS_RULES = Resource(_MONITORING, "v1", "prometheusrules", "PrometheusRule", namespaced=True)

VIRTUAL_MACHINES = Resource(GROUP_NAME, "v1", "virtualmachines", "VirtualMachine", namespaced=True)
VIRTUAL_MACHINE_INSTANCES = Resource(
    GROUP_NAME, "v1", "virtualmachineinstances", "VirtualMachineInstance", namespaced=True
)
VIRTUAL_MACHINE_INSTANCE_MIGRATIONS = Resource(
    GROUP_NAME,
    "v1",
    "virtualmachineinstancemigrations",
    "VirtualMachineInstanceMigration",
    namespaced=True,
)
VIRTUAL_MACHINE_INSTANCE_PRESETS = Resource(
    GROUP_NAME,
    "v1",
    "virtualmachineinstancepresets",
    "VirtualMachineInstancePreset",
    namespaced=True,
)
VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS = Resource(
    GROUP_NAME,
    "v1",
    "virtualmachineinstancereplicasets",
    "VirtualMachineInstanceReplicaSet",
    namespaced=True,
)
VIRTUAL_MACHINE_POOLS = Resource(
    POOL_GROUP_NAME, "v1alpha1", "virtualmachinepools", "VirtualMachinePool", namespaced=True
)
KUBEVIRTS = Resource(GROUP_NAME, "v1", "kubevirts", "KubeVirt", namespaced=True)
VIRTUAL_MACHINE_SNAPSHOTS = Resource(
    SNAPSHOT_GROUP_NAME,
    SNAPSHOT_VERSIONS[0],
    "virtualmachinesnapshots",
    "VirtualMachineSnapshot",
    namespaced=True,
)
VIRTUAL_MACHINE_SNAPSHOT_CONTENTS = Resource(
    SNAPSHOT_GROUP_NAME,
    SNAPSHOT_VERSIONS[0],
    "virtualmachinesnapshotcontents",
    "VirtualMachineSnapshotContent",
    namespaced=True,
)
VIRTUAL_MACHINE_RESTORES = Resource(
    SNAPSHOT_GROUP_NAME,
    SNAPSHOT_VERSIONS[0],
    "virtualmachinerestores",
    "VirtualMachineRestore",
    namespaced=True,
)
VIRTUAL_MACHINE_EXPORTS = Resource(
    EXPORT_GROUP_NAME, EXPORT_VERSIONS[0], "virtualmachineexports", "VirtualMachineExport", namespaced=True
)
VIRTUAL_MACHINE_CLONES = Resource(
    CLONE_GROUP_NAME, CLONE_VERSIONS[0], "virtualmachineclones", "VirtualMachineClone", namespaced=True
)
MIGRATION_POLICIES = Resource(
    MIGRATIONS_GROUP_NAME, MIGRATIONS_VERSIONS[0], "migrationpolicies", "MigrationPolicy", namespaced=False
)
# CDI's: DataVolumes (made from VMs' templates), DataSources (a VM's ``inferFromVolume``), and the
# cluster-wide CDI and CDIConfig (the filesystem overhead of claims).
_CDI = "cdi.kubevirt.io"
DATA_VOLUMES = Resource(_CDI, "v1beta1", "datavolumes", "DataVolume", namespaced=True)
DATA_SOURCES = Resource(_CDI, "v1beta1", "datasources", "DataSource", namespaced=True)
CDIS = Resource(_CDI, "v1beta1", "cdis", "CDI", namespaced=False)
CDI_CONFIGS = Resource(_CDI, "v1beta1", "cdiconfigs", "CDIConfig", namespaced=False)


def _instancetype_resource(plural: str, kind: str, *, namespaced: bool) -> Resource:
    return Resource(
        instancetype.INSTANCETYPE_GROUP_NAME,
        instancetype.INSTANCETYPE_LATEST_VERSION,
        plural,
        kind,
        namespaced=namespaced,
    )


VIRTUAL_MACHINE_INSTANCETYPES = _instancetype_resource(
    instancetype.INSTANCETYPE_PLURAL, instancetype.INSTANCETYPE_KIND, namespaced=True
)
VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES = _instancetype_resource(
    instancetype.CLUSTER_INSTANCETYPE_PLURAL, instancetype.CLUSTER_INSTANCETYPE_KIND, namespaced=False
)
VIRTUAL_MACHINE_PREFERENCES = _instancetype_resource(
    instancetype.PREFERENCE_PLURAL, instancetype.PREFERENCE_KIND, namespaced=True
)
VIRTUAL_MACHINE_CLUSTER_PREFERENCES = _instancetype_resource(
    instancetype.CLUSTER_PREFERENCE_PLURAL, instancetype.CLUSTER_PREFERENCE_KIND, namespaced=False
)
# By kind, as a VM's ``spec.instancetype.kind`` / ``spec.preference.kind`` names them.
INSTANCETYPE_RESOURCES: Final[dict[str, Resource]] = {
    resource.kind: resource
    for resource in (
        VIRTUAL_MACHINE_INSTANCETYPES,
        VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
        VIRTUAL_MACHINE_PREFERENCES,
        VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
    )
}
