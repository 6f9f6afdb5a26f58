"""VirtualMachineInstanceMigration."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import ApiModel, Condition, Time, TypeMeta
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceMigrationState
from kubevirt_api.k8s import meta_v1

__all__ = [
    "VirtualMachineInstanceMigration",
    "VirtualMachineInstanceMigrationCondition",
    "VirtualMachineInstanceMigrationConditionType",
    "VirtualMachineInstanceMigrationList",
    "VirtualMachineInstanceMigrationPhase",
    "VirtualMachineInstanceMigrationPhaseTransitionTimestamp",
    "VirtualMachineInstanceMigrationSource",
    "VirtualMachineInstanceMigrationSpec",
    "VirtualMachineInstanceMigrationStatus",
    "VirtualMachineInstanceMigrationTarget",
]


class VirtualMachineInstanceMigrationConditionType:
    """Values of the string field typed ``VirtualMachineInstanceMigrationConditionType``."""

    ABORT_REQUESTED: Final = "migrationAbortRequested"
    REJECTED_BY_RESOURCE_QUOTA: Final = "migrationRejectedByResourceQuota"


class VirtualMachineInstanceMigrationPhase:
    """Values of the string field typed ``VirtualMachineInstanceMigrationPhase``."""

    PHASE_UNSET: Final = ""
    PENDING: Final = "Pending"
    SCHEDULING: Final = "Scheduling"
    SCHEDULED: Final = "Scheduled"
    PREPARING_TARGET: Final = "PreparingTarget"
    TARGET_READY: Final = "TargetReady"
    RUNNING: Final = "Running"
    SUCCEEDED: Final = "Succeeded"
    FAILED: Final = "Failed"
    WAITING_FOR_SYNC: Final = "WaitingForSync"
    SYNCHRONIZING: Final = "Synchronizing"


class VirtualMachineInstanceMigrationSource(ApiModel):
    migration_id: str = Field(alias="migrationID")
    connect_url: str = Field(alias="connectURL")


class VirtualMachineInstanceMigrationTarget(ApiModel):
    migration_id: str = Field(alias="migrationID")


class VirtualMachineInstanceMigrationSpec(ApiModel):
    vmi_name: str | None = Field(default=None, alias="vmiName")
    added_node_selector: dict[str, str] | None = Field(default=None, alias="addedNodeSelector")
    send_to: VirtualMachineInstanceMigrationSource | None = Field(default=None, alias="sendTo")
    receive: VirtualMachineInstanceMigrationTarget | None = None


class VirtualMachineInstanceMigrationCondition(Condition):
    pass


class VirtualMachineInstanceMigrationPhaseTransitionTimestamp(ApiModel):
    phase: str | None = None
    phase_transition_timestamp: Time | None = Field(default=None, alias="phaseTransitionTimestamp")


class VirtualMachineInstanceMigrationStatus(ApiModel):
    phase: str | None = None
    conditions: list[VirtualMachineInstanceMigrationCondition] | None = None
    phase_transition_timestamps: list[VirtualMachineInstanceMigrationPhaseTransitionTimestamp] | None = Field(
        default=None,
        alias="phaseTransitionTimestamps",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    migration_state: VirtualMachineInstanceMigrationState | None = Field(default=None, alias="migrationState")
    synchronization_addresses: list[str] | None = Field(
        default=None, alias="synchronizationAddresses", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class VirtualMachineInstanceMigration(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineInstanceMigrationSpec
    status: VirtualMachineInstanceMigrationStatus | None = None


class VirtualMachineInstanceMigrationList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineInstanceMigration]
