"""VirtualMachine."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import ApiModel, Condition, Int, Int64, Time, TypeMeta
from kubevirt_api.cdi import v1beta1 as cdi_v1beta1
from kubevirt_api.core.v1.domain import Disk
from kubevirt_api.core.v1.vmi import StorageMigratedVolumeInfo, VirtualMachineInstanceTemplateSpec
from kubevirt_api.core.v1.volumes import HotplugVolumeSource
from kubevirt_api.k8s import meta_v1

__all__ = [
    "AddVolumeOptions",
    "ControllerRevisionRef",
    "DataVolumeTemplateDummyStatus",
    "DataVolumeTemplateSpec",
    "InferFromVolumeFailurePolicy",
    "InstancetypeMatcher",
    "InstancetypeStatusRef",
    "MemoryDumpPhase",
    "PreferenceMatcher",
    "RemoveVolumeOptions",
    "StateChangeRequestAction",
    "UpdateVolumesStrategy",
    "VirtualMachine",
    "VirtualMachineCondition",
    "VirtualMachineConditionType",
    "VirtualMachineList",
    "VirtualMachineMemoryDumpRequest",
    "VirtualMachinePrintableStatus",
    "VirtualMachineRunStrategy",
    "VirtualMachineSpec",
    "VirtualMachineStartFailure",
    "VirtualMachineStateChangeRequest",
    "VirtualMachineStatus",
    "VirtualMachineVolumeRequest",
    "VolumeMigrationState",
    "VolumeSnapshotStatus",
    "VolumeUpdateState",
]


class InferFromVolumeFailurePolicy:
    """Values of the string field typed ``InferFromVolumeFailurePolicy``."""

    REJECT_INFER_FROM_VOLUME_FAILURE: Final = "Reject"
    IGNORE_INFER_FROM_VOLUME_FAILURE: Final = "Ignore"


class MemoryDumpPhase:
    """Values of the string field typed ``MemoryDumpPhase``."""

    ASSOCIATING: Final = "Associating"
    IN_PROGRESS: Final = "InProgress"
    UNMOUNTING: Final = "Unmounting"
    COMPLETED: Final = "Completed"
    DISSOCIATING: Final = "Dissociating"
    FAILED: Final = "Failed"


class StateChangeRequestAction:
    """Values of the string field typed ``StateChangeRequestAction``."""

    START_REQUEST: Final = "Start"
    STOP_REQUEST: Final = "Stop"


class UpdateVolumesStrategy:
    """Values of the string field typed ``UpdateVolumesStrategy``."""

    MIGRATION: Final = "Migration"
    REPLACEMENT: Final = "Replacement"


class VirtualMachineConditionType:
    """Values of the string field typed ``VirtualMachineConditionType``."""

    FAILURE: Final = "Failure"
    READY: Final = "Ready"
    PAUSED: Final = "Paused"
    RESTART_REQUIRED: Final = "RestartRequired"
    MANUAL_RECOVERY_REQUIRED: Final = "ManualRecoveryRequired"


class VirtualMachinePrintableStatus:
    """Values of the string field typed ``VirtualMachinePrintableStatus``."""

    STOPPED: Final = "Stopped"
    PROVISIONING: Final = "Provisioning"
    STARTING: Final = "Starting"
    RUNNING: Final = "Running"
    PAUSED: Final = "Paused"
    STOPPING: Final = "Stopping"
    TERMINATING: Final = "Terminating"
    CRASH_LOOP_BACK_OFF: Final = "CrashLoopBackOff"
    MIGRATING: Final = "Migrating"
    UNKNOWN: Final = "Unknown"
    UNSCHEDULABLE: Final = "ErrorUnschedulable"
    ERR_IMAGE_PULL: Final = "ErrImagePull"
    IMAGE_PULL_BACK_OFF: Final = "ImagePullBackOff"
    PVC_NOT_FOUND: Final = "ErrorPvcNotFound"
    DATA_VOLUME_ERROR: Final = "DataVolumeError"
    WAITING_FOR_VOLUME_BINDING: Final = "WaitingForVolumeBinding"
    WAITING_FOR_RECEIVER: Final = "WaitingForReceiver"


class VirtualMachineRunStrategy:
    """Values of the string field typed ``VirtualMachineRunStrategy``."""

    UNKNOWN: Final = ""
    ALWAYS: Final = "Always"
    HALTED: Final = "Halted"
    MANUAL: Final = "Manual"
    RERUN_ON_FAILURE: Final = "RerunOnFailure"
    ONCE: Final = "Once"
    WAIT_AS_RECEIVER: Final = "WaitAsReceiver"


class InstancetypeMatcher(ApiModel):
    name: str | None = None
    kind: str | None = None
    revision_name: str | None = Field(default=None, alias="revisionName")
    infer_from_volume: str | None = Field(default=None, alias="inferFromVolume")
    infer_from_volume_failure_policy: str | None = Field(default=None, alias="inferFromVolumeFailurePolicy")


class PreferenceMatcher(ApiModel):
    name: str | None = None
    kind: str | None = None
    revision_name: str | None = Field(default=None, alias="revisionName")
    infer_from_volume: str | None = Field(default=None, alias="inferFromVolume")
    infer_from_volume_failure_policy: str | None = Field(default=None, alias="inferFromVolumeFailurePolicy")


class DataVolumeTemplateDummyStatus(ApiModel):
    pass


class DataVolumeTemplateSpec(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = Field(
        default=None, json_schema_extra={"x-kubernetes-preserve-unknown-fields": True, "nullable": True}
    )
    spec: cdi_v1beta1.DataVolumeSpec
    status: DataVolumeTemplateDummyStatus | None = Field(default=None, json_schema_extra={"nullable": True})


class VirtualMachineSpec(ApiModel):
    running: bool | None = None
    run_strategy: str | None = Field(default=None, alias="runStrategy")
    instancetype: InstancetypeMatcher | None = None
    preference: PreferenceMatcher | None = None
    template: VirtualMachineInstanceTemplateSpec
    data_volume_templates: list[DataVolumeTemplateSpec] | None = Field(
        default=None, alias="dataVolumeTemplates"
    )
    update_volumes_strategy: str | None = Field(default=None, alias="updateVolumesStrategy")


class VirtualMachineCondition(Condition):
    pass


class VirtualMachineStateChangeRequest(ApiModel):
    action: str
    data: dict[str, str] | None = None
    uid: str | None = None


class AddVolumeOptions(ApiModel):
    name: str
    disk: Disk
    volume_source: HotplugVolumeSource = Field(alias="volumeSource")
    dry_run: list[str] | None = Field(
        default=None, alias="dryRun", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class RemoveVolumeOptions(ApiModel):
    name: str
    dry_run: list[str] | None = Field(
        default=None, alias="dryRun", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class VirtualMachineVolumeRequest(ApiModel):
    add_volume_options: AddVolumeOptions | None = Field(default=None, alias="addVolumeOptions")
    remove_volume_options: RemoveVolumeOptions | None = Field(default=None, alias="removeVolumeOptions")


class VolumeSnapshotStatus(ApiModel):
    name: str
    enabled: bool
    reason: str | None = None


class VirtualMachineStartFailure(ApiModel):
    consecutive_fail_count: Int | None = Field(default=None, alias="consecutiveFailCount")
    last_failed_vmiuid: str | None = Field(default=None, alias="lastFailedVMIUID")
    retry_after_timestamp: Time | None = Field(default=None, alias="retryAfterTimestamp")


class VirtualMachineMemoryDumpRequest(ApiModel):
    claim_name: str = Field(alias="claimName")
    phase: str
    remove: bool | None = None
    start_timestamp: Time | None = Field(default=None, alias="startTimestamp")
    end_timestamp: Time | None = Field(default=None, alias="endTimestamp")
    file_name: str | None = Field(default=None, alias="fileName")
    message: str | None = None


class VolumeMigrationState(ApiModel):
    migrated_volumes: list[StorageMigratedVolumeInfo] | None = Field(
        default=None, alias="migratedVolumes", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class VolumeUpdateState(ApiModel):
    volume_migration_state: VolumeMigrationState | None = Field(default=None, alias="volumeMigrationState")


class ControllerRevisionRef(ApiModel):
    name: str | None = None


class InstancetypeStatusRef(ApiModel):
    name: str | None = None
    kind: str | None = None
    controller_revision_ref: ControllerRevisionRef | None = Field(default=None, alias="controllerRevisionRef")
    infer_from_volume: str | None = Field(default=None, alias="inferFromVolume")
    infer_from_volume_failure_policy: str | None = Field(default=None, alias="inferFromVolumeFailurePolicy")


class VirtualMachineStatus(ApiModel):
    snapshot_in_progress: str | None = Field(default=None, alias="snapshotInProgress")
    restore_in_progress: str | None = Field(default=None, alias="restoreInProgress")
    created: bool | None = None
    ready: bool | None = None
    printable_status: str | None = Field(
        default=None, alias="printableStatus", json_schema_extra={"default": "Stopped"}
    )
    conditions: list[VirtualMachineCondition] | None = None
    state_change_requests: list[VirtualMachineStateChangeRequest] | None = Field(
        default=None, alias="stateChangeRequests"
    )
    volume_requests: list[VirtualMachineVolumeRequest] | None = Field(
        default=None, alias="volumeRequests", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    volume_snapshot_statuses: list[VolumeSnapshotStatus] | None = Field(
        default=None, alias="volumeSnapshotStatuses"
    )
    start_failure: VirtualMachineStartFailure | None = Field(
        default=None, alias="startFailure", json_schema_extra={"nullable": True}
    )
    memory_dump_request: VirtualMachineMemoryDumpRequest | None = Field(
        default=None, alias="memoryDumpRequest", json_schema_extra={"nullable": True}
    )
    observed_generation: Int64 | None = Field(default=None, alias="observedGeneration")
    desired_generation: Int64 | None = Field(default=None, alias="desiredGeneration")
    run_strategy: str | None = Field(default=None, alias="runStrategy")
    volume_update_state: VolumeUpdateState | None = Field(default=None, alias="volumeUpdateState")
    instancetype_ref: InstancetypeStatusRef | None = Field(
        default=None, alias="instancetypeRef", json_schema_extra={"nullable": True}
    )
    preference_ref: InstancetypeStatusRef | None = Field(
        default=None, alias="preferenceRef", json_schema_extra={"nullable": True}
    )


class VirtualMachine(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineSpec
    status: VirtualMachineStatus | None = None

    def run_strategy(self) -> str:
        """The effective run strategy: ``running`` true/false map to Always/Halted, nothing set is Halted.

        Raises :class:`ValueError` when both ``running`` and ``runStrategy`` are set.
        """
        if self.spec.running is not None and self.spec.run_strategy is not None:
            raise ValueError("running and runstrategy are mutually exclusive")
        if self.spec.running is not None:
            return VirtualMachineRunStrategy.ALWAYS if self.spec.running else VirtualMachineRunStrategy.HALTED
        if self.spec.run_strategy is not None:
            return self.spec.run_strategy
        return VirtualMachineRunStrategy.HALTED


class VirtualMachineList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachine]
