"""The CustomResourceDefinitions KubeVirt installs for its kinds: names, versions, columns, subresources.

``custom_resource_definition(kind)`` returns the ``apiextensions.k8s.io/v1`` object as plain JSON, with the
structural schema from :mod:`kubevirt_api.openapi` on every version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from kubevirt_api.clone.v1beta1.types import CLONE_GROUP_NAME, CLONE_VERSIONS
from kubevirt_api.core.v1.constants import APP_LABEL, GROUP_NAME, POOL_GROUP_NAME
from kubevirt_api.export.v1beta1.types import EXPORT_GROUP_NAME, EXPORT_VERSIONS
from kubevirt_api.instancetype.constants import INSTANCETYPE_GROUP_NAME
from kubevirt_api.migrations.v1alpha1.types import MIGRATIONS_GROUP_NAME, MIGRATIONS_VERSIONS
from kubevirt_api.openapi import crd_schema
from kubevirt_api.snapshot.v1beta1.types import SNAPSHOT_GROUP_NAME, SNAPSHOT_VERSIONS
from kubevirt_api.view import JSON

__all__ = ["CRDS", "CrdFacts", "build_custom_resource_definition", "custom_resource_definition"]


_AGE: Final = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
_PHASE: Final = {"name": "Phase", "type": "string", "jsonPath": ".status.phase"}


def _condition_column(name: str, condition: str, priority: int = 0) -> JSON:
    column: JSON = {
        "name": name,
        "type": "string",
        "jsonPath": f".status.conditions[?(@.type=='{condition}')].status",
    }
    if priority:
        column["priority"] = priority
    return column


def _replica_columns(what: str) -> list[JSON]:
    return [
        {
            "name": "Desired",
            "type": "integer",
            "jsonPath": ".spec.replicas",
            "description": f"Number of desired {what}",
        },
        {
            "name": "Current",
            "type": "integer",
            "jsonPath": ".status.replicas",
            "description": f"Number of managed and not final or deleted {what}",
        },
        {
            "name": "Ready",
            "type": "integer",
            "jsonPath": ".status.readyReplicas",
            "description": f"Number of managed {what} which are ready to receive traffic",
        },
        _AGE,
    ]


_SCALE: Final = {
    "specReplicasPath": ".spec.replicas",
    "statusReplicasPath": ".status.replicas",
    "labelSelectorPath": ".status.labelSelector",
}

# kubevirt.io serves v1 (stored) and the deprecated v1alpha3 with the same schema.
_CORE_VERSIONS: Final = (
    {"name": "v1", "served": True, "storage": True},
    {
        "name": "v1alpha3",
        "served": True,
        "storage": False,
        "deprecated": True,
        "deprecationWarning": (
            "kubevirt.io/v1alpha3 is now deprecated and will be removed in a future release."
        ),
    },
)
_POOL_VERSIONS: Final = ({"name": "v1alpha1", "served": True, "storage": True},)
# The deprecated presets are stored as v1alpha3 and also served as v1.
_PRESET_VERSIONS: Final = tuple(
    {
        "name": version,
        "served": True,
        "storage": version == "v1alpha3",
        "deprecated": True,
        "deprecationWarning": (
            f"kubevirt.io/{version} VirtualMachineInstancePresets is now deprecated "
            "and will be removed in v2."
        ),
    }
    for version in ("v1", "v1alpha3")
)


def _instancetype_versions(what: str) -> tuple[JSON, ...]:
    """v1beta1 is served and stored; the alpha versions stay listed, unserved, for old stored objects."""
    retired = tuple(
        {
            "name": version,
            "served": False,
            "storage": False,
            "deprecated": True,
            "deprecationWarning": (
                f"{INSTANCETYPE_GROUP_NAME}/{version} {what} is now deprecated and will be removed in v1."
            ),
        }
        for version in ("v1alpha1", "v1alpha2")
    )
    return (*retired, {"name": "v1beta1", "served": True, "storage": True})


def _stored_first_served_all(versions: tuple[str, ...]) -> tuple[JSON, ...]:
    """Every version served with one schema; the first (preferred) one stored. KubeVirt lists the
    older versions first."""
    return tuple(
        {"name": version, "served": True, "storage": version == versions[0]} for version in reversed(versions)
    )


def _column(name: str, column_type: str, json_path: str) -> JSON:
    return {"name": name, "type": column_type, "jsonPath": json_path}


_ERROR: Final = _column("Error", "string", ".status.error.message")
_READY_TO_USE: Final = _column("ReadyToUse", "boolean", ".status.readyToUse")
_CREATION_TIME: Final = _column("CreationTime", "date", ".status.creationTime")


@dataclass(frozen=True)
class CrdFacts:
    kind: str
    group: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    columns: list[JSON]
    versions: tuple[JSON, ...] = _CORE_VERSIONS
    status_subresource: bool = True
    scale_subresource: bool = False
    labels: dict[str, str] = field(default_factory=lambda: {APP_LABEL: ""})
    categories: tuple[str, ...] = ("all",)
    namespaced: bool = True

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"


def _instancetype_crd(kind: str, short_names: tuple[str, ...], warned_as: str) -> CrdFacts:
    """The instance type and preference CRDs differ only in names and scope; the cluster-wide ones
    are in no category. ``warned_as`` is how the deprecation warning spells the kind (KubeVirt
    capitalises one of them differently)."""
    cluster = kind.startswith("VirtualMachineCluster")
    return CrdFacts(
        kind=kind,
        group=INSTANCETYPE_GROUP_NAME,
        plural=kind.lower() + "s",
        singular=kind.lower(),
        short_names=short_names,
        columns=[],
        versions=_instancetype_versions(warned_as),
        status_subresource=False,
        categories=() if cluster else ("all",),
        namespaced=not cluster,
    )


CRDS: Final[dict[str, CrdFacts]] = {
    facts.kind: facts
    for facts in (
        CrdFacts(
            kind="VirtualMachineInstance",
            group=GROUP_NAME,
            plural="virtualmachineinstances",
            singular="virtualmachineinstance",
            short_names=("vmi", "vmis"),
            columns=[
                _AGE,
                _PHASE,
                {"name": "IP", "type": "string", "jsonPath": ".status.interfaces[0].ipAddress"},
                {"name": "NodeName", "type": "string", "jsonPath": ".status.nodeName"},
                _condition_column("Ready", "Ready"),
                _condition_column("Live-Migratable", "LiveMigratable", priority=1),
                _condition_column("Paused", "Paused", priority=1),
            ],
            # The VMI has no status subresource: its status is written with the object.
            status_subresource=False,
        ),
        CrdFacts(
            kind="VirtualMachine",
            group=GROUP_NAME,
            plural="virtualmachines",
            singular="virtualmachine",
            short_names=("vm", "vms"),
            columns=[
                _AGE,
                {
                    "name": "Status",
                    "type": "string",
                    "jsonPath": ".status.printableStatus",
                    "description": "Human Readable Status",
                },
                _condition_column("Ready", "Ready"),
            ],
        ),
        CrdFacts(
            kind="VirtualMachineInstanceMigration",
            group=GROUP_NAME,
            plural="virtualmachineinstancemigrations",
            singular="virtualmachineinstancemigration",
            short_names=("vmim", "vmims"),
            columns=[
                {**_PHASE, "description": "The current phase of VM instance migration"},
                {
                    "name": "VMI",
                    "type": "string",
                    "jsonPath": ".spec.vmiName",
                    "description": "The name of the VMI to perform the migration on",
                },
            ],
        ),
        CrdFacts(
            kind="VirtualMachineInstanceReplicaSet",
            group=GROUP_NAME,
            plural="virtualmachineinstancereplicasets",
            singular="virtualmachineinstancereplicaset",
            short_names=("vmirs", "vmirss"),
            columns=_replica_columns("VirtualMachineInstances"),
            scale_subresource=True,
        ),
        CrdFacts(
            kind="VirtualMachinePool",
            group=POOL_GROUP_NAME,
            plural="virtualmachinepools",
            singular="virtualmachinepool",
            short_names=("vmpool", "vmpools"),
            columns=_replica_columns("VirtualMachines"),
            versions=_POOL_VERSIONS,
            scale_subresource=True,
        ),
        CrdFacts(
            kind="KubeVirt",
            group=GROUP_NAME,
            plural="kubevirts",
            singular="kubevirt",
            short_names=("kv", "kvs"),
            columns=[_AGE, _PHASE],
            labels={"operator.kubevirt.io": ""},
        ),
        CrdFacts(
            kind="VirtualMachineInstancePreset",
            group=GROUP_NAME,
            plural="virtualmachineinstancepresets",
            singular="virtualmachineinstancepreset",
            short_names=("vmipreset", "vmipresets"),
            columns=[],
            versions=_PRESET_VERSIONS,
            status_subresource=False,
        ),
        _instancetype_crd(
            "VirtualMachineInstancetype",
            ("vminstancetype", "vminstancetypes", "vmf", "vmfs"),
            "VirtualMachineInstancetypes",
        ),
        _instancetype_crd(
            "VirtualMachineClusterInstancetype",
            ("vmclusterinstancetype", "vmclusterinstancetypes", "vmcf", "vmcfs"),
            "VirtualMachineClusterInstanceTypes",
        ),
        _instancetype_crd(
            "VirtualMachinePreference", ("vmpref", "vmprefs", "vmp", "vmps"), "VirtualMachinePreferences"
        ),
        _instancetype_crd(
            "VirtualMachineClusterPreference", ("vmcp", "vmcps"), "VirtualMachineClusterPreferences"
        ),
        CrdFacts(
            kind="VirtualMachineSnapshot",
            group=SNAPSHOT_GROUP_NAME,
            plural="virtualmachinesnapshots",
            singular="virtualmachinesnapshot",
            short_names=("vmsnapshot", "vmsnapshots"),
            columns=[
                _column("SourceKind", "string", ".spec.source.kind"),
                _column("SourceName", "string", ".spec.source.name"),
                _PHASE,
                _READY_TO_USE,
                _CREATION_TIME,
                _ERROR,
            ],
            versions=_stored_first_served_all(SNAPSHOT_VERSIONS),
        ),
        CrdFacts(
            kind="VirtualMachineSnapshotContent",
            group=SNAPSHOT_GROUP_NAME,
            plural="virtualmachinesnapshotcontents",
            singular="virtualmachinesnapshotcontent",
            short_names=("vmsnapshotcontent", "vmsnapshotcontents"),
            columns=[_READY_TO_USE, _CREATION_TIME, _ERROR],
            versions=_stored_first_served_all(SNAPSHOT_VERSIONS),
        ),
        CrdFacts(
            kind="VirtualMachineRestore",
            group=SNAPSHOT_GROUP_NAME,
            plural="virtualmachinerestores",
            singular="virtualmachinerestore",
            short_names=("vmrestore", "vmrestores"),
            columns=[
                _column("TargetKind", "string", ".spec.target.kind"),
                _column("TargetName", "string", ".spec.target.name"),
                _column("Complete", "boolean", ".status.complete"),
                _column("RestoreTime", "date", ".status.restoreTime"),
            ],
            versions=_stored_first_served_all(SNAPSHOT_VERSIONS),
        ),
        CrdFacts(
            kind="VirtualMachineExport",
            group=EXPORT_GROUP_NAME,
            plural="virtualmachineexports",
            singular="virtualmachineexport",
            short_names=("vmexport", "vmexports"),
            columns=[
                _column("SourceKind", "string", ".spec.source.kind"),
                _column("SourceName", "string", ".spec.source.name"),
                _PHASE,
            ],
            versions=_stored_first_served_all(EXPORT_VERSIONS),
        ),
        CrdFacts(
            kind="VirtualMachineClone",
            group=CLONE_GROUP_NAME,
            plural="virtualmachineclones",
            singular="virtualmachineclone",
            short_names=("vmclone", "vmclones"),
            columns=[
                _PHASE,
                _column("SourceVirtualMachine", "string", ".spec.source.name"),
                _column("TargetVirtualMachine", "string", ".spec.target.name"),
            ],
            versions=_stored_first_served_all(CLONE_VERSIONS),
        ),
        # Cluster-wide, in no category and without short names.
        CrdFacts(
            kind="MigrationPolicy",
            group=MIGRATIONS_GROUP_NAME,
            plural="migrationpolicies",
            singular="migrationpolicy",
            short_names=(),
            columns=[],
            versions=_stored_first_served_all(MIGRATIONS_VERSIONS),
            categories=(),
            namespaced=False,
        ),
    )
}


# The API server reads a schema's minimum and maximum as float64: a bound beyond 2**53 is not kept exactly
# (int64's maximum 2**63 - 1 becomes 2**63, which overflows to -2**63 and refuses every value). The CRDs
# keep only the bounds it can hold; its own int64 decoding refuses what lies beyond the others, and the
# admission schema check (crd_schema) keeps them all.
_EXACT_IN_FLOAT64 = 2**53


def _bounds_the_api_server_holds(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_bounds_the_api_server_holds(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: _bounds_the_api_server_holds(value)
        for key, value in schema.items()
        if not (key in ("minimum", "maximum") and isinstance(value, int) and abs(value) > _EXACT_IN_FLOAT64)
    }


def custom_resource_definition(kind: str) -> JSON:
    """The CRD object for ``kind``, as the operator installs it."""
    return build_custom_resource_definition(CRDS[kind], crd_schema(kind))


def build_custom_resource_definition(facts: CrdFacts, openapi_schema: JSON) -> JSON:
    """The CRD object described by ``facts``, with ``openapi_schema`` on every version."""
    schema = _bounds_the_api_server_holds(openapi_schema)
    subresources: JSON = {}
    if facts.status_subresource:
        subresources["status"] = {}
    if facts.scale_subresource:
        subresources["scale"] = dict(_SCALE)
    versions = []
    for version in facts.versions:
        entry: JSON = {
            **version,
            "schema": {"openAPIV3Schema": schema},
        }
        if facts.columns:
            entry["additionalPrinterColumns"] = [dict(column) for column in facts.columns]
        if subresources:
            entry["subresources"] = subresources
        versions.append(entry)
    names: JSON = {"kind": facts.kind, "plural": facts.plural, "singular": facts.singular}
    if facts.short_names:
        names["shortNames"] = list(facts.short_names)
    if facts.categories:
        names["categories"] = list(facts.categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": facts.name, "labels": dict(facts.labels)},
        "spec": {
            "group": facts.group,
            "names": names,
            "scope": "Namespaced" if facts.namespaced else "Cluster",
            "versions": versions,
        },
    }
