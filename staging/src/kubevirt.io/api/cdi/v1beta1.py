"""CDI's ``cdi.kubevirt.io/v1beta1`` types (containerized-data-importer v1.63, the API KubeVirt v1.6 builds
against): DataVolume, whose spec VirtualMachine data volume templates embed, and the CDI, CDIConfig,
StorageProfile and DataSource objects around it.

Field names, JSON types and schema markers follow CDI's Go types; the wire values (phases, condition types,
annotations) live in :mod:`kubevirt_api.cdi.constants`.
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import Field, WithJsonSchema

from kubevirt_api.base import ApiModel, Int32, Time, TypeMeta
from kubevirt_api.core.v1.kubevirt import CertConfig, CustomizeComponentsPatch, NodePlacement
from kubevirt_api.k8s import core_v1, meta_v1

__all__ = [
    "ACCESS_MODES",
    "CDI",
    "PERCENT_PATTERN",
    "CDICertConfig",
    "CDIComponentConfig",
    "CDICondition",
    "CDIConfig",
    "CDIConfigList",
    "CDIConfigSpec",
    "CDIConfigStatus",
    "CDICustomizeComponents",
    "CDIFlags",
    "CDIList",
    "CDISpec",
    "CDIStatus",
    "ClaimPropertySet",
    "CustomTLSProfile",
    "DataSource",
    "DataSourceCondition",
    "DataSourceList",
    "DataSourceRefSourceDataSource",
    "DataSourceSource",
    "DataSourceSpec",
    "DataSourceStatus",
    "DataVolume",
    "DataVolumeBlankImage",
    "DataVolumeCheckpoint",
    "DataVolumeCondition",
    "DataVolumeList",
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
    "DataVolumeStatus",
    "FilesystemOverhead",
    "ImportProxy",
    "IntermediateTLSProfile",
    "ModernTLSProfile",
    "OldTLSProfile",
    "PlatformOptions",
    "StorageProfile",
    "StorageProfileList",
    "StorageProfileSpec",
    "StorageProfileStatus",
    "StorageSpec",
    "TLSSecurityProfile",
]

# A filesystem overhead: a share of the volume between 0 and 1, at most three decimals.
PERCENT_PATTERN: Final = r"^(0(?:\.\d{1,3})?|1)$"
# The access modes a storage profile may recommend.
ACCESS_MODES: Final = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")

# Kept a string on decode, as Go does (the controllers reject a bad value); the CRD schema checks it.
Percent = Annotated[str, WithJsonSchema({"type": "string", "pattern": PERCENT_PATTERN})]


# -- DataVolume ---------------------------------------------------------------------------------------


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


class PlatformOptions(ApiModel):
    """The image platform a registry import asks for."""

    architecture: str | None = None


class DataVolumeSourceRegistry(ApiModel):
    url: str | None = None
    image_stream: str | None = Field(default=None, alias="imageStream")
    pull_method: str | None = Field(default=None, alias="pullMethod")
    secret_ref: str | None = Field(default=None, alias="secretRef")
    cert_config_map: str | None = Field(default=None, alias="certConfigMap")
    platform: PlatformOptions | None = None


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
    extra_args: str | None = Field(default=None, alias="extraArgs")


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


class _ConditionState(ApiModel):
    """The fields every CDI condition has; Go writes a zero time as ``null``."""

    type: str
    status: str
    last_transition_time: Time | None = Field(
        default=None, alias="lastTransitionTime", json_schema_extra={"nullable": True}
    )
    last_heartbeat_time: Time | None = Field(
        default=None, alias="lastHeartbeatTime", json_schema_extra={"nullable": True}
    )
    reason: str | None = None
    message: str | None = None


class DataVolumeCondition(_ConditionState):
    """``Bound``, ``Ready`` or ``Running``."""


class DataVolumeStatus(ApiModel):
    claim_name: str | None = Field(default=None, alias="claimName")
    phase: str | None = None
    progress: str | None = None
    restart_count: Int32 | None = Field(default=None, alias="restartCount")
    conditions: list[DataVolumeCondition] | None = None


class DataVolume(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: DataVolumeSpec
    status: DataVolumeStatus | None = None


class DataVolumeList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[DataVolume]


# -- StorageProfile -----------------------------------------------------------------------------------


class ClaimPropertySet(ApiModel):
    """One access-modes/volume-mode pair a storage class supports."""

    access_modes: list[str] = Field(
        alias="accessModes",
        json_schema_extra={
            "maxItems": 4,
            "x-kubernetes-validations": [
                {
                    "rule": "self.all(am, am in [" + ", ".join(f"'{mode}'" for mode in ACCESS_MODES) + "])",
                    "message": "Illegal AccessMode",
                }
            ],
        },
    )
    volume_mode: str = Field(alias="volumeMode", json_schema_extra={"enum": ["Block", "Filesystem"]})


class StorageProfileSpec(ApiModel):
    clone_strategy: str | None = Field(default=None, alias="cloneStrategy")
    claim_property_sets: list[ClaimPropertySet] | None = Field(
        default=None, alias="claimPropertySets", json_schema_extra={"maxItems": 8}
    )
    data_import_cron_source_format: str | None = Field(default=None, alias="dataImportCronSourceFormat")
    snapshot_class: str | None = Field(default=None, alias="snapshotClass")


class StorageProfileStatus(ApiModel):
    storage_class: str | None = Field(default=None, alias="storageClass")
    provisioner: str | None = None
    clone_strategy: str | None = Field(default=None, alias="cloneStrategy")
    claim_property_sets: list[ClaimPropertySet] | None = Field(
        default=None, alias="claimPropertySets", json_schema_extra={"maxItems": 8}
    )
    data_import_cron_source_format: str | None = Field(default=None, alias="dataImportCronSourceFormat")
    snapshot_class: str | None = Field(default=None, alias="snapshotClass")


class StorageProfile(TypeMeta):
    """CDI's recommendation for claims of the storage class of the same name (cluster-wide)."""

    metadata: meta_v1.ObjectMeta | None = None
    spec: StorageProfileSpec
    status: StorageProfileStatus | None = None


class StorageProfileList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[StorageProfile]


# -- DataSource ---------------------------------------------------------------------------------------


class DataSourceRefSourceDataSource(ApiModel):
    """Another DataSource this one points at (one level of indirection at most)."""

    namespace: str
    name: str


class DataSourceSource(ApiModel):
    pvc: DataVolumeSourcePVC | None = None
    snapshot: DataVolumeSourceSnapshot | None = None
    data_source: DataSourceRefSourceDataSource | None = Field(default=None, alias="dataSource")


class DataSourceSpec(ApiModel):
    source: DataSourceSource


class DataSourceCondition(_ConditionState):
    """``Ready``."""


class DataSourceStatus(ApiModel):
    source: DataSourceSource | None = None
    conditions: list[DataSourceCondition] | None = None


class DataSource(TypeMeta):
    """A named import or clone source that DataVolumes reference through ``spec.sourceRef``."""

    metadata: meta_v1.ObjectMeta | None = None
    spec: DataSourceSpec
    status: DataSourceStatus | None = None


class DataSourceList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[DataSource]


# -- CDIConfig ----------------------------------------------------------------------------------------


class FilesystemOverhead(ApiModel):
    """The share of a Filesystem volume kept back from the image: a global value, overridden per class."""

    global_: Percent | None = Field(default=None, alias="global")
    storage_class: dict[str, Percent] | None = Field(default=None, alias="storageClass")


class ImportProxy(ApiModel):
    http_proxy: str | None = Field(default=None, alias="HTTPProxy")
    https_proxy: str | None = Field(default=None, alias="HTTPSProxy")
    no_proxy: str | None = Field(default=None, alias="noProxy")
    trusted_ca_proxy: str | None = Field(default=None, alias="trustedCAProxy")


class OldTLSProfile(ApiModel):
    pass


class IntermediateTLSProfile(ApiModel):
    pass


class ModernTLSProfile(ApiModel):
    pass


class CustomTLSProfile(ApiModel):
    ciphers: list[str]
    min_tls_version: str = Field(
        alias="minTLSVersion",
        json_schema_extra={"enum": ["VersionTLS10", "VersionTLS11", "VersionTLS12", "VersionTLS13"]},
    )


class TLSSecurityProfile(ApiModel):
    """One of the named profiles, or custom ciphers and minimum version (``type`` says which)."""

    type: str | None = Field(
        default=None, json_schema_extra={"enum": ["Old", "Intermediate", "Modern", "Custom"]}
    )
    old: OldTLSProfile | None = Field(default=None, json_schema_extra={"nullable": True})
    intermediate: IntermediateTLSProfile | None = Field(default=None, json_schema_extra={"nullable": True})
    modern: ModernTLSProfile | None = Field(default=None, json_schema_extra={"nullable": True})
    custom: CustomTLSProfile | None = Field(default=None, json_schema_extra={"nullable": True})


class CDIConfigSpec(ApiModel):
    upload_proxy_url_override: str | None = Field(default=None, alias="uploadProxyURLOverride")
    import_proxy: ImportProxy | None = Field(default=None, alias="importProxy")
    scratch_space_storage_class: str | None = Field(default=None, alias="scratchSpaceStorageClass")
    pod_resource_requirements: core_v1.ResourceRequirements | None = Field(
        default=None, alias="podResourceRequirements"
    )
    feature_gates: list[str] | None = Field(default=None, alias="featureGates")
    filesystem_overhead: FilesystemOverhead | None = Field(default=None, alias="filesystemOverhead")
    preallocation: bool | None = None
    insecure_registries: list[str] | None = Field(default=None, alias="insecureRegistries")
    # Deprecated upstream (DataVolume garbage collection is gone); still part of the schema.
    data_volume_ttl_seconds: Int32 | None = Field(default=None, alias="dataVolumeTTLSeconds")
    tls_security_profile: TLSSecurityProfile | None = Field(default=None, alias="tlsSecurityProfile")
    image_pull_secrets: list[core_v1.LocalObjectReference] | None = Field(
        default=None, alias="imagePullSecrets"
    )
    log_verbosity: Int32 | None = Field(default=None, alias="logVerbosity")


class CDIConfigStatus(ApiModel):
    upload_proxy_url: str | None = Field(default=None, alias="uploadProxyURL")
    upload_proxy_ca: str | None = Field(default=None, alias="uploadProxyCA")
    import_proxy: ImportProxy | None = Field(default=None, alias="importProxy")
    scratch_space_storage_class: str | None = Field(default=None, alias="scratchSpaceStorageClass")
    default_pod_resource_requirements: core_v1.ResourceRequirements | None = Field(
        default=None, alias="defaultPodResourceRequirements"
    )
    filesystem_overhead: FilesystemOverhead | None = Field(default=None, alias="filesystemOverhead")
    preallocation: bool | None = None
    image_pull_secrets: list[core_v1.LocalObjectReference] | None = Field(
        default=None, alias="imagePullSecrets"
    )


class CDIConfig(TypeMeta):
    """The effective CDI configuration (cluster-wide, one object named ``config``)."""

    metadata: meta_v1.ObjectMeta | None = None
    spec: CDIConfigSpec
    status: CDIConfigStatus | None = None


class CDIConfigList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[CDIConfig]


# -- CDI (the installation) ---------------------------------------------------------------------------


class CDIComponentConfig(ApiModel):
    """Placement of CDI's own deployments (the placement fields inline, as in Go) and their replicas."""

    node_selector: dict[str, str] | None = Field(default=None, alias="nodeSelector")
    affinity: core_v1.Affinity | None = None
    tolerations: list[core_v1.Toleration] | None = None
    deployment_replicas: Int32 | None = Field(default=None, alias="deploymentReplicas")
    api_server_replicas: Int32 | None = Field(default=None, alias="apiServerReplicas")
    upload_proxy_replicas: Int32 | None = Field(default=None, alias="uploadProxyReplicas")


class CDIFlags(ApiModel):
    api: dict[str, str] | None = None
    controller: dict[str, str] | None = None
    upload_proxy: dict[str, str] | None = Field(default=None, alias="uploadProxy")


class CDICustomizeComponents(ApiModel):
    patches: list[CustomizeComponentsPatch] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    flags: CDIFlags | None = None


class CDICertConfig(ApiModel):
    ca: CertConfig | None = None
    server: CertConfig | None = None
    client: CertConfig | None = None


class CDISpec(ApiModel):
    image_pull_policy: str | None = Field(
        default=None, alias="imagePullPolicy", json_schema_extra={"enum": ["Always", "IfNotPresent", "Never"]}
    )
    uninstall_strategy: str | None = Field(
        default=None,
        alias="uninstallStrategy",
        json_schema_extra={"enum": ["RemoveWorkloads", "BlockUninstallIfWorkloadsExist"]},
    )
    infra: CDIComponentConfig | None = None
    workload: NodePlacement | None = None
    customize_components: CDICustomizeComponents | None = Field(default=None, alias="customizeComponents")
    clone_strategy_override: str | None = Field(
        default=None,
        alias="cloneStrategyOverride",
        json_schema_extra={"enum": ["copy", "snapshot", "csi-clone"]},
    )
    config: CDIConfigSpec | None = None
    cert_config: CDICertConfig | None = Field(default=None, alias="certConfig")
    priority_class: str | None = Field(default=None, alias="priorityClass")


class CDICondition(_ConditionState):
    """``Available``, ``Progressing`` or ``Degraded`` (the operator conditions)."""


class CDIStatus(ApiModel):
    phase: str | None = None
    conditions: list[CDICondition] | None = None
    operator_version: str | None = Field(default=None, alias="operatorVersion")
    target_version: str | None = Field(default=None, alias="targetVersion")
    observed_version: str | None = Field(default=None, alias="observedVersion")


class CDI(TypeMeta):
    """A CDI installation (cluster-wide; KubeVirt expects exactly one)."""

    metadata: meta_v1.ObjectMeta | None = None
    spec: CDISpec
    status: CDIStatus | None = None


class CDIList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[CDI]
