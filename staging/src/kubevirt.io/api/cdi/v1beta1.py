"""CDI ``cdi.kubevirt.io/v1beta1`` DataVolume spec types, used by VirtualMachine data volume templates."""

from __future__ import annotations

from pydantic import Field

from kubevirt_api.base import ApiModel
from kubevirt_api.k8s import core_v1, meta_v1

__all__ = [
    "DataVolumeBlankImage",
    "DataVolumeCheckpoint",
    "DataVolumeSource",
    "DataVolumeSourceGCS",
    "DataVolumeSourceHTTP",
    "DataVolumeSourceImageIO",
    "DataVolumeSourcePVC",
    "DataVolumeSourceRef",
    "DataVolumeSourceRegistry",
    "DataVolumeSourceS3",
    "DataVolumeSourceSnapshot",
    "DataVolumeSourceUpload",
    "DataVolumeSourceVDDK",
    "DataVolumeSpec",
    "StorageSpec",
]


class DataVolumeSourceHTTP(ApiModel):
    url: str
    secret_ref: str | None = Field(default=None, alias="secretRef")
    cert_config_map: str | None = Field(default=None, alias="certConfigMap")
    extra_headers: list[str] | None = Field(default=None, alias="extraHeaders")
    secret_extra_headers: list[str] | None = Field(default=None, alias="secretExtraHeaders")


class DataVolumeSourceS3(ApiModel):
    url: str
    secret_ref: str | None = Field(default=None, alias="secretRef")
    cert_config_map: str | None = Field(default=None, alias="certConfigMap")


class DataVolumeSourceGCS(ApiModel):
    url: str
    secret_ref: str | None = Field(default=None, alias="secretRef")


class DataVolumeSourceRegistry(ApiModel):
    url: str | None = None
    image_stream: str | None = Field(default=None, alias="imageStream")
    pull_method: str | None = Field(default=None, alias="pullMethod")
    secret_ref: str | None = Field(default=None, alias="secretRef")
    cert_config_map: str | None = Field(default=None, alias="certConfigMap")


class DataVolumeSourcePVC(ApiModel):
    namespace: str
    name: str


class DataVolumeSourceUpload(ApiModel):
    pass


class DataVolumeBlankImage(ApiModel):
    pass


class DataVolumeSourceImageIO(ApiModel):
    url: str
    disk_id: str = Field(alias="diskId")
    secret_ref: str | None = Field(default=None, alias="secretRef")
    cert_config_map: str | None = Field(default=None, alias="certConfigMap")


class DataVolumeSourceVDDK(ApiModel):
    url: str | None = None
    uuid: str | None = None
    backing_file: str | None = Field(default=None, alias="backingFile")
    thumbprint: str | None = None
    secret_ref: str | None = Field(default=None, alias="secretRef")
    init_image_url: str | None = Field(default=None, alias="initImageURL")


class DataVolumeSourceSnapshot(ApiModel):
    namespace: str
    name: str


class DataVolumeSource(ApiModel):
    http: DataVolumeSourceHTTP | None = None
    s3: DataVolumeSourceS3 | None = None
    gcs: DataVolumeSourceGCS | None = None
    registry: DataVolumeSourceRegistry | None = None
    pvc: DataVolumeSourcePVC | None = None
    upload: DataVolumeSourceUpload | None = None
    blank: DataVolumeBlankImage | None = None
    imageio: DataVolumeSourceImageIO | None = None
    vddk: DataVolumeSourceVDDK | None = None
    snapshot: DataVolumeSourceSnapshot | None = None


class DataVolumeSourceRef(ApiModel):
    kind: str
    namespace: str | None = None
    name: str


class StorageSpec(ApiModel):
    access_modes: list[str] | None = Field(default=None, alias="accessModes")
    selector: meta_v1.LabelSelector | None = None
    resources: core_v1.VolumeResourceRequirements | None = None
    volume_name: str | None = Field(default=None, alias="volumeName")
    storage_class_name: str | None = Field(default=None, alias="storageClassName")
    volume_mode: str | None = Field(default=None, alias="volumeMode")
    data_source: core_v1.TypedLocalObjectReference | None = Field(default=None, alias="dataSource")
    data_source_ref: core_v1.TypedObjectReference | None = Field(default=None, alias="dataSourceRef")


class DataVolumeCheckpoint(ApiModel):
    previous: str
    current: str


class DataVolumeSpec(ApiModel):
    source: DataVolumeSource | None = None
    source_ref: DataVolumeSourceRef | None = Field(default=None, alias="sourceRef")
    pvc: core_v1.PersistentVolumeClaimSpec | None = None
    storage: StorageSpec | None = None
    priority_class_name: str | None = Field(default=None, alias="priorityClassName")
    content_type: str | None = Field(
        default=None, alias="contentType", json_schema_extra={"enum": ["kubevirt", "archive"]}
    )
    checkpoints: list[DataVolumeCheckpoint] | None = None
    final_checkpoint: bool | None = Field(default=None, alias="finalCheckpoint")
    preallocation: bool | None = None
