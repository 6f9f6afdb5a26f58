"""The API resources the components read and write, named once: group, version, plural, kind, scope."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from kubevirt_api.core.v1.constants import GROUP_NAME, POOL_GROUP_NAME
from kubevirt_api.core.v1.register import GroupVersionKind

__all__ = [
    "EVENTS",
    "KUBEVIRTS",
    "LEASES",
    "NODES",
    "PERSISTENT_VOLUME_CLAIMS",
    "PODS",
    "VIRTUAL_MACHINES",
    "VIRTUAL_MACHINE_INSTANCES",
    "VIRTUAL_MACHINE_INSTANCE_MIGRATIONS",
    "VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS",
    "VIRTUAL_MACHINE_POOLS",
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
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
PERSISTENT_VOLUME_CLAIMS = Resource(
    "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", namespaced=True
)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
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
