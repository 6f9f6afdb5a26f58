"""The KubeVirt custom resource and the cluster configuration it carries."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import (
    ApiModel,
    Condition,
    Float,
    Int,
    Int64,
    TypeMeta,
    Uint,
    Uint8,
    Uint32,
    Uint64,
)
from kubevirt_api.core.v1.vmi import MigrationConfiguration
from kubevirt_api.k8s import core_v1, meta_v1
from kubevirt_api.resource import Quantity

__all__ = [
    "ArchConfiguration",
    "ArchSpecificConfiguration",
    "CertConfig",
    "CommonInstancetypesDeployment",
    "ComponentConfig",
    "CustomProfile",
    "CustomizeComponents",
    "CustomizeComponentsPatch",
    "DeveloperConfiguration",
    "DisableFreePageReporting",
    "DisableSerialConsoleLog",
    "DiskVerification",
    "DomainAttachmentType",
    "Flags",
    "GenerationStatus",
    "InstancetypeConfiguration",
    "InstancetypeReferencePolicy",
    "InterfaceBindingMigration",
    "InterfaceBindingPlugin",
    "KSMConfiguration",
    "KubeVirt",
    "KubeVirtCertificateRotateStrategy",
    "KubeVirtCondition",
    "KubeVirtConditionType",
    "KubeVirtConfiguration",
    "KubeVirtList",
    "KubeVirtPhase",
    "KubeVirtSelfSignConfiguration",
    "KubeVirtSpec",
    "KubeVirtStatus",
    "KubeVirtUninstallStrategy",
    "KubeVirtWorkloadUpdateStrategy",
    "LiveUpdateConfiguration",
    "LogVerbosity",
    "MediatedDevicesConfiguration",
    "MediatedHostDevice",
    "MigrationMethod",
    "NetworkBindingDownwardAPIType",
    "NetworkConfiguration",
    "NodeMediatedDeviceTypesConfig",
    "NodePlacement",
    "PatchType",
    "PciHostDevice",
    "PermittedHostDevices",
    "RESTClientConfiguration",
    "RateLimiter",
    "ReloadableComponentConfiguration",
    "ResourceRequirementsWithoutClaims",
    "SMBiosConfiguration",
    "SeccompConfiguration",
    "SupportContainerResources",
    "SupportContainerType",
    "TLSConfiguration",
    "TLSProtocolVersion",
    "TokenBucketRateLimiter",
    "USBHostDevice",
    "USBSelector",
    "VMRolloutStrategy",
    "VirtualMachineInstanceProfile",
    "VirtualMachineOptions",
    "WorkloadUpdateMethod",
]


class DomainAttachmentType:
    """Values of the string field typed ``DomainAttachmentType``."""

    TAP: Final = "tap"
    MANAGED_TAP: Final = "managedTap"


class InstancetypeReferencePolicy:
    """Values of the string field typed ``InstancetypeReferencePolicy``."""

    REFERENCE: Final = "reference"
    EXPAND: Final = "expand"
    EXPAND_ALL: Final = "expandAll"


class KubeVirtConditionType:
    """Values of the string field typed ``KubeVirtConditionType``."""

    SYNCHRONIZED: Final = "Synchronized"
    CREATED: Final = "Created"
    AVAILABLE: Final = "Available"
    PROGRESSING: Final = "Progressing"
    DEGRADED: Final = "Degraded"


class KubeVirtPhase:
    """Values of the string field typed ``KubeVirtPhase``."""

    DEPLOYING: Final = "Deploying"
    DEPLOYED: Final = "Deployed"
    DELETING: Final = "Deleting"
    DELETED: Final = "Deleted"


class KubeVirtUninstallStrategy:
    """Values of the string field typed ``KubeVirtUninstallStrategy``."""

    REMOVE_WORKLOADS: Final = "RemoveWorkloads"
    BLOCK_UNINSTALL_IF_WORKLOADS_EXIST: Final = "BlockUninstallIfWorkloadsExist"


class MigrationMethod:
    """Values of the string field typed ``MigrationMethod``."""

    LINK_REFRESH: Final = "link-refresh"


class NetworkBindingDownwardAPIType:
    """Values of the string field typed ``NetworkBindingDownwardAPIType``."""

    DEVICE_INFO: Final = "device-info"


class PatchType:
    """Values of the string field typed ``PatchType``."""

    JSON_PATCH_TYPE: Final = "json"
    MERGE_PATCH_TYPE: Final = "merge"
    STRATEGIC_MERGE_PATCH_TYPE: Final = "strategic"


class SupportContainerType:
    """Values of the string field typed ``SupportContainerType``."""

    HOTPLUG_ATTACHMENT: Final = "hotplug-disk"
    CONTAINER_DISK: Final = "container-disk"
    VIRTIO_FS: Final = "virtiofs"
    SIDE_CAR: Final = "sidecar"
    VM_EXPORT: Final = "vmexport"
    GUEST_CONSOLE_LOG: Final = "guest-console-log"


class TLSProtocolVersion:
    """Values of the string field typed ``TLSProtocolVersion``."""

    TLS10: Final = "VersionTLS10"
    TLS11: Final = "VersionTLS11"
    TLS12: Final = "VersionTLS12"
    TLS13: Final = "VersionTLS13"


class VMRolloutStrategy:
    """Values of the string field typed ``VMRolloutStrategy``."""

    STAGE: Final = "Stage"
    LIVE_UPDATE: Final = "LiveUpdate"


class WorkloadUpdateMethod:
    """Values of the string field typed ``WorkloadUpdateMethod``."""

    LIVE_MIGRATE: Final = "LiveMigrate"
    EVICT: Final = "Evict"


class KubeVirtWorkloadUpdateStrategy(ApiModel):
    workload_update_methods: list[str] | None = Field(
        default=None, alias="workloadUpdateMethods", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    batch_eviction_size: Int | None = Field(default=None, alias="batchEvictionSize")
    batch_eviction_interval: str | None = Field(default=None, alias="batchEvictionInterval")


class CertConfig(ApiModel):
    duration: str | None = None
    renew_before: str | None = Field(default=None, alias="renewBefore")


class KubeVirtSelfSignConfiguration(ApiModel):
    ca_rotate_interval: str | None = Field(default=None, alias="caRotateInterval")
    cert_rotate_interval: str | None = Field(default=None, alias="certRotateInterval")
    ca_overlap_interval: str | None = Field(default=None, alias="caOverlapInterval")
    ca: CertConfig | None = None
    server: CertConfig | None = None


class KubeVirtCertificateRotateStrategy(ApiModel):
    self_signed: KubeVirtSelfSignConfiguration | None = Field(default=None, alias="selfSigned")


class DiskVerification(ApiModel):
    memory_limit: Quantity = Field(alias="memoryLimit")


class LogVerbosity(ApiModel):
    virt_api: Uint | None = Field(default=None, alias="virtAPI")
    virt_controller: Uint | None = Field(default=None, alias="virtController")
    virt_handler: Uint | None = Field(default=None, alias="virtHandler")
    virt_launcher: Uint | None = Field(default=None, alias="virtLauncher")
    virt_operator: Uint | None = Field(default=None, alias="virtOperator")
    virt_synchronization_controller: Uint | None = Field(default=None, alias="virtSynchronizationController")
    node_verbosity: dict[str, Uint] | None = Field(default=None, alias="nodeVerbosity")


class DeveloperConfiguration(ApiModel):
    feature_gates: list[str] | None = Field(default=None, alias="featureGates")
    pvc_tolerate_less_space_up_to_percent: Int | None = Field(
        default=None, alias="pvcTolerateLessSpaceUpToPercent"
    )
    minimum_reserve_pvc_bytes: Uint64 | None = Field(default=None, alias="minimumReservePVCBytes")
    memory_overcommit: Int | None = Field(default=None, alias="memoryOvercommit")
    node_selectors: dict[str, str] | None = Field(default=None, alias="nodeSelectors")
    use_emulation: bool | None = Field(default=None, alias="useEmulation")
    cpu_allocation_ratio: Int | None = Field(default=None, alias="cpuAllocationRatio")
    minimum_cluster_tsc_frequency: Int64 | None = Field(default=None, alias="minimumClusterTSCFrequency")
    disk_verification: DiskVerification | None = Field(default=None, alias="diskVerification")
    log_verbosity: LogVerbosity | None = Field(default=None, alias="logVerbosity")
    cluster_profiler: bool | None = Field(default=None, alias="clusterProfiler")


class InterfaceBindingMigration(ApiModel):
    method: str | None = None


class ResourceRequirementsWithoutClaims(ApiModel):
    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None


class InterfaceBindingPlugin(ApiModel):
    sidecar_image: str | None = Field(default=None, alias="sidecarImage")
    network_attachment_definition: str | None = Field(default=None, alias="networkAttachmentDefinition")
    domain_attachment_type: str | None = Field(default=None, alias="domainAttachmentType")
    migration: InterfaceBindingMigration | None = None
    downward_api: str | None = Field(default=None, alias="downwardAPI")
    compute_resource_overhead: ResourceRequirementsWithoutClaims | None = Field(
        default=None, alias="computeResourceOverhead"
    )


class NetworkConfiguration(ApiModel):
    default_network_interface: str | None = Field(default=None, alias="defaultNetworkInterface")
    permit_slirp_interface: bool | None = Field(default=None, alias="permitSlirpInterface")
    permit_bridge_interface_on_pod_network: bool | None = Field(
        default=None, alias="permitBridgeInterfaceOnPodNetwork"
    )
    binding: dict[str, InterfaceBindingPlugin] | None = None


class SMBiosConfiguration(ApiModel):
    manufacturer: str | None = None
    product: str | None = None
    version: str | None = None
    sku: str | None = None
    family: str | None = None


class ArchSpecificConfiguration(ApiModel):
    ovmf_path: str | None = Field(default=None, alias="ovmfPath")
    emulated_machines: list[str] | None = Field(
        default=None, alias="emulatedMachines", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    machine_type: str | None = Field(default=None, alias="machineType")


class ArchConfiguration(ApiModel):
    amd64: ArchSpecificConfiguration | None = None
    arm64: ArchSpecificConfiguration | None = None
    ppc64le: ArchSpecificConfiguration | None = None
    default_architecture: str | None = Field(default=None, alias="defaultArchitecture")


class SupportContainerResources(ApiModel):
    type: str
    resources: ResourceRequirementsWithoutClaims


class PciHostDevice(ApiModel):
    pci_vendor_selector: str = Field(alias="pciVendorSelector")
    resource_name: str = Field(alias="resourceName")
    external_resource_provider: bool | None = Field(default=None, alias="externalResourceProvider")


class MediatedHostDevice(ApiModel):
    mdev_name_selector: str = Field(alias="mdevNameSelector")
    resource_name: str = Field(alias="resourceName")
    external_resource_provider: bool | None = Field(default=None, alias="externalResourceProvider")


class USBSelector(ApiModel):
    vendor: str
    product: str


class USBHostDevice(ApiModel):
    resource_name: str = Field(alias="resourceName")
    selectors: list[USBSelector] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    external_resource_provider: bool | None = Field(default=None, alias="externalResourceProvider")


class PermittedHostDevices(ApiModel):
    pci_host_devices: list[PciHostDevice] | None = Field(
        default=None, alias="pciHostDevices", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    mediated_devices: list[MediatedHostDevice] | None = Field(
        default=None, alias="mediatedDevices", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    usb: list[USBHostDevice] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class NodeMediatedDeviceTypesConfig(ApiModel):
    node_selector: dict[str, str] = Field(alias="nodeSelector")
    mediated_devices_types: list[str] | None = Field(
        default=None, alias="mediatedDevicesTypes", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    mediated_device_types: list[str] | None = Field(
        default=None, alias="mediatedDeviceTypes", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class MediatedDevicesConfiguration(ApiModel):
    mediated_devices_types: list[str] | None = Field(
        default=None, alias="mediatedDevicesTypes", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    mediated_device_types: list[str] | None = Field(
        default=None, alias="mediatedDeviceTypes", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    node_mediated_device_types: list[NodeMediatedDeviceTypesConfig] | None = Field(
        default=None, alias="nodeMediatedDeviceTypes", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class TokenBucketRateLimiter(ApiModel):
    qps: Float
    burst: Int


class RateLimiter(ApiModel):
    token_bucket_rate_limiter: TokenBucketRateLimiter | None = Field(
        default=None, alias="tokenBucketRateLimiter"
    )


class RESTClientConfiguration(ApiModel):
    rate_limiter: RateLimiter | None = Field(default=None, alias="rateLimiter")


class ReloadableComponentConfiguration(ApiModel):
    rest_client: RESTClientConfiguration | None = Field(default=None, alias="restClient")


class TLSConfiguration(ApiModel):
    min_tls_version: str | None = Field(
        default=None,
        alias="minTLSVersion",
        json_schema_extra={"enum": ["VersionTLS10", "VersionTLS11", "VersionTLS12", "VersionTLS13"]},
    )
    ciphers: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "set"})


class CustomProfile(ApiModel):
    localhost_profile: str | None = Field(default=None, alias="localhostProfile")
    runtime_default_profile: bool | None = Field(default=None, alias="runtimeDefaultProfile")


class VirtualMachineInstanceProfile(ApiModel):
    custom_profile: CustomProfile | None = Field(default=None, alias="customProfile")


class SeccompConfiguration(ApiModel):
    virtual_machine_instance_profile: VirtualMachineInstanceProfile | None = Field(
        default=None, alias="virtualMachineInstanceProfile"
    )


class DisableFreePageReporting(ApiModel):
    pass


class DisableSerialConsoleLog(ApiModel):
    pass


class VirtualMachineOptions(ApiModel):
    disable_free_page_reporting: DisableFreePageReporting | None = Field(
        default=None, alias="disableFreePageReporting"
    )
    disable_serial_console_log: DisableSerialConsoleLog | None = Field(
        default=None, alias="disableSerialConsoleLog"
    )


class KSMConfiguration(ApiModel):
    node_label_selector: meta_v1.LabelSelector | None = Field(default=None, alias="nodeLabelSelector")


class LiveUpdateConfiguration(ApiModel):
    max_hotplug_ratio: Uint32 | None = Field(default=None, alias="maxHotplugRatio")
    max_cpu_sockets: Uint32 | None = Field(default=None, alias="maxCpuSockets")
    max_guest: Quantity | None = Field(default=None, alias="maxGuest")


class CommonInstancetypesDeployment(ApiModel):
    enabled: bool | None = Field(default=None, json_schema_extra={"nullable": True})


class InstancetypeConfiguration(ApiModel):
    reference_policy: str | None = Field(
        default=None,
        alias="referencePolicy",
        json_schema_extra={"nullable": True, "enum": ["reference", "expand", "expandAll"]},
    )


class KubeVirtConfiguration(ApiModel):
    cpu_model: str | None = Field(default=None, alias="cpuModel")
    cpu_request: Quantity | None = Field(default=None, alias="cpuRequest")
    developer_configuration: DeveloperConfiguration | None = Field(
        default=None, alias="developerConfiguration"
    )
    emulated_machines: list[str] | None = Field(default=None, alias="emulatedMachines")
    image_pull_policy: str | None = Field(default=None, alias="imagePullPolicy")
    migrations: MigrationConfiguration | None = None
    machine_type: str | None = Field(default=None, alias="machineType")
    network: NetworkConfiguration | None = None
    ovmf_path: str | None = Field(default=None, alias="ovmfPath")
    selinux_launcher_type: str | None = Field(default=None, alias="selinuxLauncherType")
    default_runtime_class: str | None = Field(default=None, alias="defaultRuntimeClass")
    smbios: SMBiosConfiguration | None = None
    architecture_configuration: ArchConfiguration | None = Field(
        default=None, alias="architectureConfiguration"
    )
    eviction_strategy: str | None = Field(default=None, alias="evictionStrategy")
    additional_guest_memory_overhead_ratio: str | None = Field(
        default=None, alias="additionalGuestMemoryOverheadRatio"
    )
    support_container_resources: list[SupportContainerResources] | None = Field(
        default=None,
        alias="supportContainerResources",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    supported_guest_agent_versions: list[str] | None = Field(
        default=None, alias="supportedGuestAgentVersions"
    )
    mem_balloon_stats_period: Uint32 | None = Field(default=None, alias="memBalloonStatsPeriod")
    permitted_host_devices: PermittedHostDevices | None = Field(default=None, alias="permittedHostDevices")
    mediated_devices_configuration: MediatedDevicesConfiguration | None = Field(
        default=None, alias="mediatedDevicesConfiguration"
    )
    min_cpu_model: str | None = Field(default=None, alias="minCPUModel")
    obsolete_cpu_models: dict[str, bool] | None = Field(default=None, alias="obsoleteCPUModels")
    virtual_machine_instances_per_node: Int | None = Field(
        default=None, alias="virtualMachineInstancesPerNode"
    )
    api_configuration: ReloadableComponentConfiguration | None = Field(default=None, alias="apiConfiguration")
    webhook_configuration: ReloadableComponentConfiguration | None = Field(
        default=None, alias="webhookConfiguration"
    )
    controller_configuration: ReloadableComponentConfiguration | None = Field(
        default=None, alias="controllerConfiguration"
    )
    handler_configuration: ReloadableComponentConfiguration | None = Field(
        default=None, alias="handlerConfiguration"
    )
    tls_configuration: TLSConfiguration | None = Field(default=None, alias="tlsConfiguration")
    seccomp_configuration: SeccompConfiguration | None = Field(default=None, alias="seccompConfiguration")
    vm_state_storage_class: str | None = Field(default=None, alias="vmStateStorageClass")
    virtual_machine_options: VirtualMachineOptions | None = Field(default=None, alias="virtualMachineOptions")
    ksm_configuration: KSMConfiguration | None = Field(default=None, alias="ksmConfiguration")
    auto_cpu_limit_namespace_label_selector: meta_v1.LabelSelector | None = Field(
        default=None, alias="autoCPULimitNamespaceLabelSelector"
    )
    live_update_configuration: LiveUpdateConfiguration | None = Field(
        default=None, alias="liveUpdateConfiguration"
    )
    vm_rollout_strategy: str | None = Field(
        default=None,
        alias="vmRolloutStrategy",
        json_schema_extra={"nullable": True, "enum": ["Stage", "LiveUpdate"]},
    )
    common_instancetypes_deployment: CommonInstancetypesDeployment | None = Field(
        default=None, alias="commonInstancetypesDeployment", json_schema_extra={"nullable": True}
    )
    instancetype: InstancetypeConfiguration | None = Field(default=None, json_schema_extra={"nullable": True})


class NodePlacement(ApiModel):
    node_selector: dict[str, str] | None = Field(default=None, alias="nodeSelector")
    affinity: core_v1.Affinity | None = None
    tolerations: list[core_v1.Toleration] | None = None


class ComponentConfig(ApiModel):
    node_placement: NodePlacement | None = Field(default=None, alias="nodePlacement")
    replicas: Uint8 | None = None


class CustomizeComponentsPatch(ApiModel):
    resource_name: str = Field(alias="resourceName", json_schema_extra={"minLength": 1})
    resource_type: str = Field(alias="resourceType", json_schema_extra={"minLength": 1})
    patch: str
    type: str


class Flags(ApiModel):
    api: dict[str, str] | None = None
    controller: dict[str, str] | None = None
    handler: dict[str, str] | None = None


class CustomizeComponents(ApiModel):
    patches: list[CustomizeComponentsPatch] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    flags: Flags | None = None


class KubeVirtSpec(ApiModel):
    image_tag: str | None = Field(default=None, alias="imageTag")
    image_registry: str | None = Field(default=None, alias="imageRegistry")
    image_pull_policy: str | None = Field(default=None, alias="imagePullPolicy")
    image_pull_secrets: list[core_v1.LocalObjectReference] | None = Field(
        default=None, alias="imagePullSecrets", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    monitor_namespace: str | None = Field(default=None, alias="monitorNamespace")
    service_monitor_namespace: str | None = Field(default=None, alias="serviceMonitorNamespace")
    monitor_account: str | None = Field(default=None, alias="monitorAccount")
    workload_update_strategy: KubeVirtWorkloadUpdateStrategy | None = Field(
        default=None, alias="workloadUpdateStrategy"
    )
    uninstall_strategy: str | None = Field(default=None, alias="uninstallStrategy")
    certificate_rotate_strategy: KubeVirtCertificateRotateStrategy | None = Field(
        default=None, alias="certificateRotateStrategy"
    )
    product_version: str | None = Field(default=None, alias="productVersion")
    product_name: str | None = Field(default=None, alias="productName")
    product_component: str | None = Field(default=None, alias="productComponent")
    synchronization_port: str | None = Field(default=None, alias="synchronizationPort")
    configuration: KubeVirtConfiguration | None = None
    infra: ComponentConfig | None = None
    workloads: ComponentConfig | None = None
    customize_components: CustomizeComponents | None = Field(default=None, alias="customizeComponents")


class KubeVirtCondition(Condition):
    pass


class GenerationStatus(ApiModel):
    group: str
    resource: str
    namespace: str | None = None
    name: str
    last_generation: Int64 = Field(alias="lastGeneration")
    hash: str | None = None


class KubeVirtStatus(ApiModel):
    phase: str | None = None
    conditions: list[KubeVirtCondition] | None = None
    operator_version: str | None = Field(default=None, alias="operatorVersion")
    target_kube_virt_registry: str | None = Field(default=None, alias="targetKubeVirtRegistry")
    target_kube_virt_version: str | None = Field(default=None, alias="targetKubeVirtVersion")
    target_deployment_config: str | None = Field(default=None, alias="targetDeploymentConfig")
    target_deployment_id: str | None = Field(default=None, alias="targetDeploymentID")
    observed_kube_virt_registry: str | None = Field(default=None, alias="observedKubeVirtRegistry")
    observed_kube_virt_version: str | None = Field(default=None, alias="observedKubeVirtVersion")
    observed_deployment_config: str | None = Field(default=None, alias="observedDeploymentConfig")
    observed_deployment_id: str | None = Field(default=None, alias="observedDeploymentID")
    outdated_virtual_machine_instance_workloads: Int | None = Field(
        default=None, alias="outdatedVirtualMachineInstanceWorkloads"
    )
    observed_generation: Int64 | None = Field(default=None, alias="observedGeneration")
    default_architecture: str | None = Field(default=None, alias="defaultArchitecture")
    generations: list[GenerationStatus] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    synchronization_addresses: list[str] | None = Field(
        default=None, alias="synchronizationAddresses", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class KubeVirt(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: KubeVirtSpec
    status: KubeVirtStatus | None = None


class KubeVirtList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[KubeVirt]
