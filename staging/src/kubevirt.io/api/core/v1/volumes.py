"""Volumes (``spec.volumes``), their sources and their status."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import ApiModel, Int64, Time, Uint32
from kubevirt_api.k8s import core_v1
from kubevirt_api.resource import Quantity

__all__ = [
    "CloudInitConfigDriveSource",
    "CloudInitNoCloudSource",
    "ConfigMapVolumeSource",
    "ContainerDiskInfo",
    "ContainerDiskSource",
    "DataVolumeSource",
    "DomainMemoryDumpInfo",
    "DownwardAPIVolumeSource",
    "DownwardMetricsVolumeSource",
    "EmptyDiskSource",
    "EphemeralVolumeSource",
    "HostDisk",
    "HostDiskType",
    "HotplugVolumeSource",
    "HotplugVolumeStatus",
    "MemoryDumpVolumeSource",
    "PersistentVolumeClaimInfo",
    "PersistentVolumeClaimVolumeSource",
    "SecretVolumeSource",
    "ServiceAccountVolumeSource",
    "SysprepSource",
    "Volume",
    "VolumePhase",
    "VolumeSource",
    "VolumeStatus",
]


class HostDiskType:
    """Values of the string field typed ``HostDiskType``."""

    EXISTS_OR_CREATE: Final = "DiskOrCreate"
    EXISTS: Final = "Disk"


class VolumePhase:
    """Values of the string field typed ``VolumePhase``."""

    VOLUME_PENDING: Final = "Pending"
    VOLUME_BOUND: Final = "Bound"
    HOTPLUG_VOLUME_ATTACHED_TO_NODE: Final = "AttachedToNode"
    HOTPLUG_VOLUME_MOUNTED: Final = "MountedToPod"
    VOLUME_READY: Final = "Ready"
    HOTPLUG_VOLUME_DETACHING: Final = "Detaching"
    HOTPLUG_VOLUME_UN_MOUNTED: Final = "UnMountedFromPod"
    MEMORY_DUMP_VOLUME_COMPLETED: Final = "MemoryDumpCompleted"
    MEMORY_DUMP_VOLUME_IN_PROGRESS: Final = "MemoryDumpInProgress"
    MEMORY_DUMP_VOLUME_FAILED: Final = "MemoryDumpFailed"


class HostDisk(ApiModel):
    path: str
    type: str
    capacity: Quantity | None = None
    shared: bool | None = None


class PersistentVolumeClaimVolumeSource(core_v1.PersistentVolumeClaimVolumeSource):
    hotpluggable: bool | None = None


class _CloudInitSource(ApiModel):
    """User and network data, shared by the NoCloud and ConfigDrive sources (same fields)."""

    secret_ref: core_v1.LocalObjectReference | None = Field(default=None, alias="secretRef")
    user_data_base64: str | None = Field(default=None, alias="userDataBase64")
    user_data: str | None = Field(default=None, alias="userData")
    network_data_secret_ref: core_v1.LocalObjectReference | None = Field(
        default=None, alias="networkDataSecretRef"
    )
    network_data_base64: str | None = Field(default=None, alias="networkDataBase64")
    network_data: str | None = Field(default=None, alias="networkData")


class CloudInitNoCloudSource(_CloudInitSource):
    pass


class CloudInitConfigDriveSource(_CloudInitSource):
    pass


class SysprepSource(ApiModel):
    secret: core_v1.LocalObjectReference | None = None
    config_map: core_v1.LocalObjectReference | None = Field(default=None, alias="configMap")


class ContainerDiskSource(ApiModel):
    image: str
    image_pull_secret: str | None = Field(default=None, alias="imagePullSecret")
    path: str | None = None
    image_pull_policy: str | None = Field(default=None, alias="imagePullPolicy")


class EphemeralVolumeSource(ApiModel):
    persistent_volume_claim: core_v1.PersistentVolumeClaimVolumeSource | None = Field(
        default=None, alias="persistentVolumeClaim"
    )


class EmptyDiskSource(ApiModel):
    capacity: Quantity


class DataVolumeSource(ApiModel):
    name: str
    hotpluggable: bool | None = None


class ConfigMapVolumeSource(core_v1.LocalObjectReference):
    optional: bool | None = None
    volume_label: str | None = Field(default=None, alias="volumeLabel")


class SecretVolumeSource(ApiModel):
    secret_name: str | None = Field(default=None, alias="secretName")
    optional: bool | None = None
    volume_label: str | None = Field(default=None, alias="volumeLabel")


class DownwardAPIVolumeSource(ApiModel):
    fields_: list[core_v1.DownwardAPIVolumeFile] | None = Field(default=None, alias="fields")
    volume_label: str | None = Field(default=None, alias="volumeLabel")


class ServiceAccountVolumeSource(ApiModel):
    service_account_name: str | None = Field(default=None, alias="serviceAccountName")


class DownwardMetricsVolumeSource(ApiModel):
    pass


class MemoryDumpVolumeSource(PersistentVolumeClaimVolumeSource):
    pass


class VolumeSource(ApiModel):
    host_disk: HostDisk | None = Field(default=None, alias="hostDisk")
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = Field(
        default=None, alias="persistentVolumeClaim"
    )
    cloud_init_no_cloud: CloudInitNoCloudSource | None = Field(default=None, alias="cloudInitNoCloud")
    cloud_init_config_drive: CloudInitConfigDriveSource | None = Field(
        default=None, alias="cloudInitConfigDrive"
    )
    sysprep: SysprepSource | None = None
    container_disk: ContainerDiskSource | None = Field(default=None, alias="containerDisk")
    ephemeral: EphemeralVolumeSource | None = None
    empty_disk: EmptyDiskSource | None = Field(default=None, alias="emptyDisk")
    data_volume: DataVolumeSource | None = Field(default=None, alias="dataVolume")
    config_map: ConfigMapVolumeSource | None = Field(default=None, alias="configMap")
    secret: SecretVolumeSource | None = None
    downward_api: DownwardAPIVolumeSource | None = Field(default=None, alias="downwardAPI")
    service_account: ServiceAccountVolumeSource | None = Field(default=None, alias="serviceAccount")
    downward_metrics: DownwardMetricsVolumeSource | None = Field(default=None, alias="downwardMetrics")
    memory_dump: MemoryDumpVolumeSource | None = Field(default=None, alias="memoryDump")


class Volume(VolumeSource):
    name: str


class PersistentVolumeClaimInfo(ApiModel):
    claim_name: str | None = Field(default=None, alias="claimName")
    access_modes: list[str] | None = Field(
        default=None, alias="accessModes", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    volume_mode: str | None = Field(default=None, alias="volumeMode")
    capacity: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None
    preallocated: bool | None = None
    filesystem_overhead: str | None = Field(
        default=None, alias="filesystemOverhead", json_schema_extra={"pattern": "^(0(?:\\.\\d{1,3})?|1)$"}
    )


class HotplugVolumeStatus(ApiModel):
    attach_pod_name: str | None = Field(default=None, alias="attachPodName")
    attach_pod_uid: str | None = Field(default=None, alias="attachPodUID")


class DomainMemoryDumpInfo(ApiModel):
    start_timestamp: Time | None = Field(default=None, alias="startTimestamp")
    end_timestamp: Time | None = Field(default=None, alias="endTimestamp")
    claim_name: str | None = Field(default=None, alias="claimName")
    target_file_name: str | None = Field(default=None, alias="targetFileName")


class ContainerDiskInfo(ApiModel):
    checksum: Uint32 | None = None


class VolumeStatus(ApiModel):
    name: str
    target: str
    phase: str | None = None
    reason: str | None = None
    message: str | None = None
    persistent_volume_claim_info: PersistentVolumeClaimInfo | None = Field(
        default=None, alias="persistentVolumeClaimInfo"
    )
    hotplug_volume: HotplugVolumeStatus | None = Field(default=None, alias="hotplugVolume")
    size: Int64 | None = None
    memory_dump_volume: DomainMemoryDumpInfo | None = Field(default=None, alias="memoryDumpVolume")
    container_disk_volume: ContainerDiskInfo | None = Field(default=None, alias="containerDiskVolume")


class HotplugVolumeSource(ApiModel):
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = Field(
        default=None, alias="persistentVolumeClaim"
    )
    data_volume: DataVolumeSource | None = Field(default=None, alias="dataVolume")
