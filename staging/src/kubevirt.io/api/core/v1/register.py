"""Group, versions and kinds of ``kubevirt.io`` (and the subresource API group), and a kind → model scheme.

``new_object(VirtualMachineInstance, ...)`` fills ``apiVersion``/``kind`` like Go's typed clients do;
``SCHEME`` maps an ``(apiVersion, kind)`` to its model so generic code (informers, webhooks) can decode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, TypeVar

from kubevirt_api.base import TypeMeta
from kubevirt_api.clone.v1beta1.types import (
    CLONE_GROUP_NAME,
    CLONE_VERSIONS,
    VirtualMachineClone,
    VirtualMachineCloneList,
)
from kubevirt_api.core.v1.constants import GROUP_NAME, POOL_GROUP_NAME, SUBRESOURCE_GROUP_NAME
from kubevirt_api.core.v1.kubevirt import KubeVirt, KubeVirtList
from kubevirt_api.core.v1.migration import (
    VirtualMachineInstanceMigration,
    VirtualMachineInstanceMigrationList,
)
from kubevirt_api.core.v1.preset import VirtualMachineInstancePreset, VirtualMachineInstancePresetList
from kubevirt_api.core.v1.replicaset import (
    VirtualMachineInstanceReplicaSet,
    VirtualMachineInstanceReplicaSetList,
)
from kubevirt_api.core.v1.vm import VirtualMachine, VirtualMachineList
from kubevirt_api.core.v1.vmi import VirtualMachineInstance, VirtualMachineInstanceList
from kubevirt_api.export.v1beta1.types import (
    EXPORT_GROUP_NAME,
    EXPORT_VERSIONS,
    VirtualMachineExport,
    VirtualMachineExportList,
)
from kubevirt_api.instancetype.constants import INSTANCETYPE_GROUP_NAME, INSTANCETYPE_LATEST_VERSION
from kubevirt_api.instancetype.v1beta1.types import (
    VirtualMachineClusterInstancetype,
    VirtualMachineClusterInstancetypeList,
    VirtualMachineClusterPreference,
    VirtualMachineClusterPreferenceList,
    VirtualMachineInstancetype,
    VirtualMachineInstancetypeList,
    VirtualMachinePreference,
    VirtualMachinePreferenceList,
)
from kubevirt_api.migrations.v1alpha1.types import (
    MIGRATIONS_GROUP_NAME,
    MIGRATIONS_VERSIONS,
    MigrationPolicy,
    MigrationPolicyList,
)
from kubevirt_api.pool.v1alpha1.types import VirtualMachinePool, VirtualMachinePoolList
from kubevirt_api.snapshot.v1beta1.types import (
    SNAPSHOT_GROUP_NAME,
    SNAPSHOT_VERSIONS,
    VirtualMachineRestore,
    VirtualMachineRestoreList,
    VirtualMachineSnapshot,
    VirtualMachineSnapshotContent,
    VirtualMachineSnapshotContentList,
    VirtualMachineSnapshotList,
)

__all__ = [
    "API_LATEST_VERSION",
    "API_STORAGE_VERSION",
    "GROUP_VERSIONS",
    "INSTANCETYPE_GROUP_VERSION",
    "POOL_GROUP_VERSION",
    "SCHEME",
    "SUBRESOURCE_GROUP_VERSIONS",
    "GroupVersionKind",
    "gvk_of",
    "model_for",
    "new_object",
]

API_LATEST_VERSION: Final = "v1"
API_STORAGE_VERSION: Final = "v1"
# The preferred version first.
GROUP_VERSIONS: Final = (f"{GROUP_NAME}/v1", f"{GROUP_NAME}/v1alpha3")
SUBRESOURCE_GROUP_VERSIONS: Final = (f"{SUBRESOURCE_GROUP_NAME}/v1", f"{SUBRESOURCE_GROUP_NAME}/v1alpha3")
POOL_GROUP_VERSION: Final = f"{POOL_GROUP_NAME}/v1alpha1"
INSTANCETYPE_GROUP_VERSION: Final = f"{INSTANCETYPE_GROUP_NAME}/{INSTANCETYPE_LATEST_VERSION}"
# The served versions of each group, the preferred one first.
_SERVED_VERSIONS: Final[dict[str, tuple[str, ...]]] = {
    GROUP_NAME: GROUP_VERSIONS,
    POOL_GROUP_NAME: (POOL_GROUP_VERSION,),
    INSTANCETYPE_GROUP_NAME: (INSTANCETYPE_GROUP_VERSION,),
    SNAPSHOT_GROUP_NAME: tuple(f"{SNAPSHOT_GROUP_NAME}/{v}" for v in SNAPSHOT_VERSIONS),
    EXPORT_GROUP_NAME: tuple(f"{EXPORT_GROUP_NAME}/{v}" for v in EXPORT_VERSIONS),
    CLONE_GROUP_NAME: tuple(f"{CLONE_GROUP_NAME}/{v}" for v in CLONE_VERSIONS),
    MIGRATIONS_GROUP_NAME: tuple(f"{MIGRATIONS_GROUP_NAME}/{v}" for v in MIGRATIONS_VERSIONS),
}


@dataclass(frozen=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


_KINDS: Final[tuple[tuple[str, type[TypeMeta]], ...]] = (
    (GROUP_NAME, VirtualMachineInstance),
    (GROUP_NAME, VirtualMachineInstanceList),
    (GROUP_NAME, VirtualMachineInstanceReplicaSet),
    (GROUP_NAME, VirtualMachineInstanceReplicaSetList),
    (GROUP_NAME, VirtualMachineInstancePreset),
    (GROUP_NAME, VirtualMachineInstancePresetList),
    (GROUP_NAME, VirtualMachineInstanceMigration),
    (GROUP_NAME, VirtualMachineInstanceMigrationList),
    (GROUP_NAME, VirtualMachine),
    (GROUP_NAME, VirtualMachineList),
    (GROUP_NAME, KubeVirt),
    (GROUP_NAME, KubeVirtList),
    (POOL_GROUP_NAME, VirtualMachinePool),
    (POOL_GROUP_NAME, VirtualMachinePoolList),
    (INSTANCETYPE_GROUP_NAME, VirtualMachineInstancetype),
    (INSTANCETYPE_GROUP_NAME, VirtualMachineInstancetypeList),
    (INSTANCETYPE_GROUP_NAME, VirtualMachineClusterInstancetype),
    (INSTANCETYPE_GROUP_NAME, VirtualMachineClusterInstancetypeList),
    (INSTANCETYPE_GROUP_NAME, VirtualMachinePreference),
    (INSTANCETYPE_GROUP_NAME, VirtualMachinePreferenceList),
    (INSTANCETYPE_GROUP_NAME, VirtualMachineClusterPreference),
    (INSTANCETYPE_GROUP_NAME, VirtualMachineClusterPreferenceList),
    (SNAPSHOT_GROUP_NAME, VirtualMachineSnapshot),
    (SNAPSHOT_GROUP_NAME, VirtualMachineSnapshotList),
    (SNAPSHOT_GROUP_NAME, VirtualMachineSnapshotContent),
    (SNAPSHOT_GROUP_NAME, VirtualMachineSnapshotContentList),
    (SNAPSHOT_GROUP_NAME, VirtualMachineRestore),
    (SNAPSHOT_GROUP_NAME, VirtualMachineRestoreList),
    (EXPORT_GROUP_NAME, VirtualMachineExport),
    (EXPORT_GROUP_NAME, VirtualMachineExportList),
    (CLONE_GROUP_NAME, VirtualMachineClone),
    (CLONE_GROUP_NAME, VirtualMachineCloneList),
    (MIGRATIONS_GROUP_NAME, MigrationPolicy),
    (MIGRATIONS_GROUP_NAME, MigrationPolicyList),
)

# The top-level object kinds (those with a CRD), without their lists.
OBJECT_MODELS: Final[tuple[type[TypeMeta], ...]] = tuple(
    model for _, model in _KINDS if not model.__name__.endswith("List")
)

# Every served (apiVersion, kind) → model; kubevirt.io's deprecated v1alpha3 decodes to the same types.
SCHEME: Final[dict[tuple[str, str], type[TypeMeta]]] = {
    (api_version, model.__name__): model for group, model in _KINDS for api_version in _SERVED_VERSIONS[group]
}

M = TypeVar("M", bound=TypeMeta)


def gvk_of(model: type[TypeMeta]) -> GroupVersionKind:
    """The preferred group/version/kind of a top-level model."""
    for group, known in _KINDS:
        if known is model:
            version = _SERVED_VERSIONS[group][0].rsplit("/", 1)[1]
            return GroupVersionKind(group, version, model.__name__)
    raise KeyError(f"{model.__name__} is not a top-level kind")


def model_for(api_version: str, kind: str) -> type[TypeMeta]:
    """The model that decodes objects of ``apiVersion``/``kind``; KeyError when not served."""
    return SCHEME[(api_version, kind)]


def new_object(model: type[M], **fields: Any) -> M:
    """A top-level object with ``apiVersion`` and ``kind`` set: ``new_object(VirtualMachine, spec=...)``."""
    gvk = gvk_of(model)
    return model(api_version=gvk.api_version, kind=gvk.kind, **fields)
