"""MigrationPolicy (``migrations.kubevirt.io/v1alpha1``, cluster-scoped): migration options by selector."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import ApiModel, Int64, TypeMeta
from kubevirt_api.k8s import meta_v1
from kubevirt_api.resource import Quantity

__all__ = [
    "MIGRATIONS_GROUP_NAME",
    "MIGRATIONS_VERSIONS",
    "MigrationPolicy",
    "MigrationPolicyList",
    "MigrationPolicySpec",
    "MigrationPolicyStatus",
    "Selectors",
]

MIGRATIONS_GROUP_NAME: Final = "migrations.kubevirt.io"
MIGRATIONS_VERSIONS: Final = ("v1alpha1",)


class Selectors(ApiModel):
    # Plain label maps (every label must match), not metav1 label selectors.
    namespace_selector: dict[str, str] | None = Field(default=None, alias="namespaceSelector")
    virtual_machine_instance_selector: dict[str, str] | None = Field(
        default=None, alias="virtualMachineInstanceSelector"
    )


class MigrationPolicySpec(ApiModel):
    selectors: Selectors
    allow_auto_converge: bool | None = Field(default=None, alias="allowAutoConverge")
    bandwidth_per_migration: Quantity | None = Field(default=None, alias="bandwidthPerMigration")
    completion_timeout_per_gi_b: Int64 | None = Field(default=None, alias="completionTimeoutPerGiB")
    allow_post_copy: bool | None = Field(default=None, alias="allowPostCopy")
    allow_workload_disruption: bool | None = Field(default=None, alias="allowWorkloadDisruption")


class MigrationPolicyStatus(ApiModel):
    """Empty in KubeVirt v1.6."""


class MigrationPolicy(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: MigrationPolicySpec
    status: MigrationPolicyStatus | None = Field(default=None, json_schema_extra={"nullable": True})


class MigrationPolicyList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[MigrationPolicy]
