"""VirtualMachineInstanceMigration."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import ApiModel, Condition, Time, TypeMeta
from kubevirt_api.core.v1.phases import (
    FINAL_MIGRATION_PHASES,
    NOT_RUNNING_MIGRATION_PHASES,
    VirtualMachineInstanceMigrationPhase,
)
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceMigrationState
from kubevirt_api.k8s import meta_v1

__all__ = [
    "VirtualMachineInstanceMigration",
    "VirtualMachineInstanceMigrationCondition",
    "VirtualMachineInstanceMigrationConditionType",
    "VirtualMachineInstanceMigrationList",
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

    # -- the predicates KubeVirt's Go type offers ------------------------------------------------------
    @property
    def phase(self) -> str:
        """``status.phase``, ``""`` while unset."""
        return (self.status.phase if self.status is not None else None) or ""

    def is_final(self) -> bool:
        return self.phase in FINAL_MIGRATION_PHASES

    def is_running(self) -> bool:
        return self.phase not in NOT_RUNNING_MIGRATION_PHASES

    def target_is_created(self) -> bool:
        return self.phase not in _BEFORE_TARGET_CREATED

    def target_is_handed_off(self) -> bool:
        return self.phase not in _BEFORE_TARGET_HANDED_OFF

    def is_decentralized(self) -> bool:
        """Exactly one side of a cross-cluster migration (``sendTo`` or ``receive``)."""
        return (self.spec.send_to is None) != (self.spec.receive is None)

    def is_decentralized_source(self) -> bool:
        return self.is_decentralized() and self.spec.send_to is not None

    def is_decentralized_target(self) -> bool:
        return self.is_decentralized() and self.spec.receive is not None

    def is_local_or_decentralized_source(self) -> bool:
        return not self.is_decentralized() or self.spec.send_to is not None

    def is_local_or_decentralized_target(self) -> bool:
        return not self.is_decentralized() or self.spec.receive is not None


_Phase = VirtualMachineInstanceMigrationPhase
_BEFORE_TARGET_CREATED: Final = frozenset(
    {_Phase.PHASE_UNSET, _Phase.PENDING, _Phase.WAITING_FOR_SYNC, _Phase.SYNCHRONIZING}
)
_BEFORE_TARGET_HANDED_OFF: Final = _BEFORE_TARGET_CREATED | {_Phase.SCHEDULING, _Phase.SCHEDULED}


class VirtualMachineInstanceMigrationList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineInstanceMigration]
