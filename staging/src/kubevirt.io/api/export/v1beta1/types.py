"""VirtualMachineExport (``export.kubevirt.io``; v1beta1 stored, v1alpha1 served with the same schema)."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import ApiModel, Condition, Time, TypeMeta
from kubevirt_api.k8s import core_v1, meta_v1

__all__ = [
    "EXPORT_GROUP_NAME",
    "EXPORT_VERSIONS",
    "FORMAT_ARCHIVE_GZ",
    "FORMAT_DIR",
    "FORMAT_GZIP",
    "FORMAT_RAW",
    "MANIFEST_ALL",
    "MANIFEST_AUTH_HEADER",
    "PHASE_PENDING",
    "PHASE_READY",
    "PHASE_SKIPPED",
    "PHASE_TERMINATED",
    "ExportCondition",
    "VirtualMachineExport",
    "VirtualMachineExportLink",
    "VirtualMachineExportLinks",
    "VirtualMachineExportList",
    "VirtualMachineExportManifest",
    "VirtualMachineExportSpec",
    "VirtualMachineExportStatus",
    "VirtualMachineExportVolume",
    "VirtualMachineExportVolumeFormat",
]

EXPORT_GROUP_NAME: Final = "export.kubevirt.io"
EXPORT_VERSIONS: Final = ("v1beta1", "v1alpha1")

# status.phase (KubeVirt's VirtualMachineExportPhase).
PHASE_PENDING: Final = "Pending"
PHASE_READY: Final = "Ready"
PHASE_TERMINATED: Final = "Terminated"
PHASE_SKIPPED: Final = "Skipped"

# A link's volume formats (ExportVolumeFormat: KubeVirtRaw, KubeVirtGz, Dir, ArchiveGz) and its
# manifest types (ExportManifestType: AllManifests, AuthHeader).
FORMAT_RAW: Final = "raw"
FORMAT_GZIP: Final = "gzip"
FORMAT_DIR: Final = "dir"
FORMAT_ARCHIVE_GZ: Final = "tar.gz"
MANIFEST_ALL: Final = "all"
MANIFEST_AUTH_HEADER: Final = "auth-header-secret"


class ExportCondition(Condition):
    """``Ready``, ``PVCReady`` or ``VolumesCreated``."""


class VirtualMachineExportSpec(ApiModel):
    source: core_v1.TypedLocalObjectReference
    token_secret_ref: str | None = Field(default=None, alias="tokenSecretRef")
    ttl_duration: str | None = Field(default=None, alias="ttlDuration")


class VirtualMachineExportVolumeFormat(ApiModel):
    format: str
    url: str


class VirtualMachineExportVolume(ApiModel):
    name: str
    formats: list[VirtualMachineExportVolumeFormat] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["format"]},
    )


class VirtualMachineExportManifest(ApiModel):
    type: str
    url: str


class VirtualMachineExportLink(ApiModel):
    cert: str
    volumes: list[VirtualMachineExportVolume] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    manifests: list[VirtualMachineExportManifest] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


class VirtualMachineExportLinks(ApiModel):
    internal: VirtualMachineExportLink | None = None
    external: VirtualMachineExportLink | None = None


class VirtualMachineExportStatus(ApiModel):
    phase: str | None = None
    links: VirtualMachineExportLinks | None = None
    token_secret_ref: str | None = Field(default=None, alias="tokenSecretRef")
    ttl_expiration_time: Time | None = Field(default=None, alias="ttlExpirationTime")
    service_name: str | None = Field(default=None, alias="serviceName")
    virtual_machine_name: str | None = Field(default=None, alias="virtualMachineName")
    conditions: list[ExportCondition] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class VirtualMachineExport(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineExportSpec
    status: VirtualMachineExportStatus | None = None


class VirtualMachineExportList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineExport]
