"""VirtualMachineSnapshot, VirtualMachineSnapshotContent and VirtualMachineRestore (``snapshot.kubevirt.io``).

v1beta1 is stored; v1alpha1 is served with the same schema.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import ApiModel, Condition, Time, TypeMeta
from kubevirt_api.core.v1.vm import VirtualMachineSpec, VirtualMachineStatus
from kubevirt_api.k8s import core_v1, meta_v1

__all__ = [
    "SNAPSHOT_GROUP_NAME",
    "SNAPSHOT_VERSIONS",
    "Error",
    "PersistentVolumeClaim",
    "SnapshotCondition",
    "SnapshotVolumesLists",
    "SourceSpec",
    "VirtualMachine",
    "VirtualMachineRestore",
    "VirtualMachineRestoreList",
    "VirtualMachineRestoreSpec",
    "VirtualMachineRestoreStatus",
    "VirtualMachineSnapshot",
    "VirtualMachineSnapshotContent",
    "VirtualMachineSnapshotContentList",
    "VirtualMachineSnapshotContentSpec",
    "VirtualMachineSnapshotContentStatus",
    "VirtualMachineSnapshotList",
    "VirtualMachineSnapshotSpec",
    "VirtualMachineSnapshotStatus",
    "VolumeBackup",
    "VolumeRestore",
    "VolumeRestoreOverride",
    "VolumeSnapshotStatus",
]

SNAPSHOT_GROUP_NAME: Final = "snapshot.kubevirt.io"
# The preferred (stored) version first.
SNAPSHOT_VERSIONS: Final = ("v1beta1", "v1alpha1")


class Error(ApiModel):
    time: Time | None = None
    message: str | None = None


class SnapshotCondition(Condition):
    """``Ready``, ``Progressing`` or ``Failure``."""


class SnapshotVolumesLists(ApiModel):
    included_volumes: list[str] | None = Field(
        default=None, alias="includedVolumes", json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    excluded_volumes: list[str] | None = Field(
        default=None, alias="excludedVolumes", json_schema_extra={"x-kubernetes-list-type": "set"}
    )


class VirtualMachineSnapshotSpec(ApiModel):
    source: core_v1.TypedLocalObjectReference
    deletion_policy: str | None = Field(default=None, alias="deletionPolicy")
    failure_deadline: str | None = Field(default=None, alias="failureDeadline")


class VirtualMachineSnapshotStatus(ApiModel):
    source_uid: str | None = Field(default=None, alias="sourceUID")
    virtual_machine_snapshot_content_name: str | None = Field(
        default=None, alias="virtualMachineSnapshotContentName"
    )
    creation_time: Time | None = Field(
        default=None, alias="creationTime", json_schema_extra={"nullable": True}
    )
    phase: str | None = None
    ready_to_use: bool | None = Field(default=None, alias="readyToUse")
    error: Error | None = None
    conditions: list[SnapshotCondition] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    indications: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "set"})
    snapshot_volumes: SnapshotVolumesLists | None = Field(default=None, alias="snapshotVolumes")


class VirtualMachineSnapshot(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineSnapshotSpec
    status: VirtualMachineSnapshotStatus | None = None


class VirtualMachineSnapshotList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineSnapshot]


class VirtualMachine(ApiModel):
    """The VM as it was when the snapshot was taken."""

    metadata: meta_v1.ObjectMeta | None = Field(
        default=None, json_schema_extra={"x-kubernetes-preserve-unknown-fields": True, "nullable": True}
    )
    spec: VirtualMachineSpec | None = None
    status: VirtualMachineStatus | None = None


class SourceSpec(ApiModel):
    virtual_machine: VirtualMachine | None = Field(default=None, alias="virtualMachine")


class PersistentVolumeClaim(ApiModel):
    metadata: meta_v1.ObjectMeta | None = Field(
        default=None, json_schema_extra={"x-kubernetes-preserve-unknown-fields": True}
    )
    spec: core_v1.PersistentVolumeClaimSpec | None = None


class VolumeBackup(ApiModel):
    volume_name: str = Field(alias="volumeName")
    persistent_volume_claim: PersistentVolumeClaim = Field(alias="persistentVolumeClaim")
    volume_snapshot_name: str | None = Field(default=None, alias="volumeSnapshotName")


class VirtualMachineSnapshotContentSpec(ApiModel):
    virtual_machine_snapshot_name: str | None = Field(default=None, alias="virtualMachineSnapshotName")
    source: SourceSpec
    volume_backups: list[VolumeBackup] | None = Field(
        default=None, alias="volumeBackups", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class VolumeSnapshotStatus(ApiModel):
    volume_snapshot_name: str = Field(alias="volumeSnapshotName")
    creation_time: Time | None = Field(
        default=None, alias="creationTime", json_schema_extra={"nullable": True}
    )
    ready_to_use: bool | None = Field(default=None, alias="readyToUse")
    error: Error | None = None


class VirtualMachineSnapshotContentStatus(ApiModel):
    creation_time: Time | None = Field(
        default=None, alias="creationTime", json_schema_extra={"nullable": True}
    )
    ready_to_use: bool | None = Field(default=None, alias="readyToUse")
    error: Error | None = None
    volume_snapshot_status: list[VolumeSnapshotStatus] | None = Field(
        default=None, alias="volumeSnapshotStatus", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class VirtualMachineSnapshotContent(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineSnapshotContentSpec
    status: VirtualMachineSnapshotContentStatus | None = None


class VirtualMachineSnapshotContentList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineSnapshotContent]


class VolumeRestoreOverride(ApiModel):
    volume_name: str | None = Field(default=None, alias="volumeName")
    restore_name: str | None = Field(default=None, alias="restoreName")
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class VirtualMachineRestoreSpec(ApiModel):
    target: core_v1.TypedLocalObjectReference
    virtual_machine_snapshot_name: str = Field(alias="virtualMachineSnapshotName")
    target_readiness_policy: str | None = Field(default=None, alias="targetReadinessPolicy")
    volume_restore_policy: str | None = Field(default=None, alias="volumeRestorePolicy")
    volume_restore_overrides: list[VolumeRestoreOverride] | None = Field(
        default=None, alias="volumeRestoreOverrides", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    patches: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})


class VolumeRestore(ApiModel):
    volume_name: str = Field(alias="volumeName")
    persistent_volume_claim: str = Field(alias="persistentVolumeClaim")
    volume_snapshot_name: str = Field(alias="volumeSnapshotName")
    data_volume_name: str | None = Field(default=None, alias="dataVolumeName")


class VirtualMachineRestoreStatus(ApiModel):
    restores: list[VolumeRestore] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    restore_time: Time | None = Field(default=None, alias="restoreTime")
    deleted_data_volumes: list[str] | None = Field(
        default=None, alias="deletedDataVolumes", json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    complete: bool | None = None
    conditions: list[SnapshotCondition] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class VirtualMachineRestore(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineRestoreSpec
    status: VirtualMachineRestoreStatus | None = None


class VirtualMachineRestoreList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineRestore]
