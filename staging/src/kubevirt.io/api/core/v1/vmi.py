"""VirtualMachineInstance: spec, status and the types only they use."""

from __future__ import annotations

from typing import Final, Protocol

from pydantic import Field, field_validator

from kubevirt_api.base import ApiModel, Condition, Int, Int32, Int64, Time, TypeMeta, Uint32, Uint64
from kubevirt_api.core.v1.domain import DomainSpec, Machine
from kubevirt_api.core.v1.networks import Network
from kubevirt_api.core.v1.phases import FINAL_VMI_PHASES, VirtualMachineInstancePhase
from kubevirt_api.core.v1.probes import Probe
from kubevirt_api.core.v1.sanitizers import sanitize_ip
from kubevirt_api.core.v1.volumes import PersistentVolumeClaimInfo, Volume, VolumeStatus
from kubevirt_api.k8s import core_v1, meta_v1
from kubevirt_api.resource import Quantity

__all__ = [
    "AccessCredential",
    "AccessCredentialSecretSource",
    "CPUTopology",
    "ConfigDriveSSHPublicKeyAccessCredentialPropagation",
    "DeviceAttribute",
    "DeviceResourceClaimStatus",
    "DeviceStatus",
    "DeviceStatusInfo",
    "EvictionStrategy",
    "InitrdInfo",
    "KernelBootStatus",
    "KernelInfo",
    "MemoryStatus",
    "MigrationAbortStatus",
    "MigrationConfiguration",
    "MigrationMode",
    "MigrationNetworkType",
    "NoCloudSSHPublicKeyAccessCredentialPropagation",
    "QemuGuestAgentSSHPublicKeyAccessCredentialPropagation",
    "QemuGuestAgentUserPasswordAccessCredentialPropagation",
    "SSHPublicKeyAccessCredential",
    "SSHPublicKeyAccessCredentialPropagationMethod",
    "SSHPublicKeyAccessCredentialSource",
    "StartStrategy",
    "StorageMigratedVolumeInfo",
    "TopologyHints",
    "UserPasswordAccessCredential",
    "UserPasswordAccessCredentialPropagationMethod",
    "UserPasswordAccessCredentialSource",
    "VirtualMachineInstance",
    "VirtualMachineInstanceCommonMigrationState",
    "VirtualMachineInstanceCondition",
    "VirtualMachineInstanceConditionType",
    "VirtualMachineInstanceGuestOSInfo",
    "VirtualMachineInstanceList",
    "VirtualMachineInstanceMigrationMethod",
    "VirtualMachineInstanceMigrationSourceState",
    "VirtualMachineInstanceMigrationState",
    "VirtualMachineInstanceMigrationTargetState",
    "VirtualMachineInstanceMigrationTransport",
    "VirtualMachineInstanceNetworkInterface",
    "VirtualMachineInstancePhaseTransitionTimestamp",
    "VirtualMachineInstanceSpec",
    "VirtualMachineInstanceStatus",
    "VirtualMachineInstanceTemplateSpec",
]


class EvictionStrategy:
    """Values of the string field typed ``EvictionStrategy``."""

    NONE: Final = "None"
    LIVE_MIGRATE: Final = "LiveMigrate"
    LIVE_MIGRATE_IF_POSSIBLE: Final = "LiveMigrateIfPossible"
    EXTERNAL: Final = "External"


class MigrationAbortStatus:
    """Values of the string field typed ``MigrationAbortStatus``."""

    SUCCEEDED: Final = "Succeeded"
    FAILED: Final = "Failed"
    IN_PROGRESS: Final = "Aborting"


class MigrationMode:
    """Values of the string field typed ``MigrationMode``."""

    PRE_COPY: Final = "PreCopy"
    POST_COPY: Final = "PostCopy"
    PAUSED: Final = "Paused"


class MigrationNetworkType:
    """Values of the string field typed ``MigrationNetworkType``."""

    POD: Final = "Pod"
    MIGRATION: Final = "Migration"


class StartStrategy:
    """Values of the string field typed ``StartStrategy``."""

    PAUSED: Final = "Paused"


class VirtualMachineInstanceConditionType:
    """Values of the string field typed ``VirtualMachineInstanceConditionType``."""

    PROVISIONING: Final = "Provisioning"
    READY: Final = "Ready"
    SYNCHRONIZED: Final = "Synchronized"
    PAUSED: Final = "Paused"
    AGENT_CONNECTED: Final = "AgentConnected"
    ACCESS_CREDENTIALS_SYNCHRONIZED: Final = "AccessCredentialsSynchronized"
    UNSUPPORTED_AGENT: Final = "AgentVersionNotSupported"
    IS_MIGRATABLE: Final = "LiveMigratable"
    VCPU_CHANGE: Final = "HotVCPUChange"
    MEMORY_CHANGE: Final = "HotMemoryChange"
    VOLUMES_CHANGE: Final = "VolumesChange"
    DATA_VOLUMES_READY: Final = "DataVolumesReady"
    IS_STORAGE_LIVE_MIGRATABLE: Final = "StorageLiveMigratable"
    MIGRATION_REQUIRED: Final = "MigrationRequired"


class VirtualMachineInstanceMigrationMethod:
    """Values of the string field typed ``VirtualMachineInstanceMigrationMethod``."""

    BLOCK_MIGRATION: Final = "BlockMigration"
    LIVE_MIGRATION: Final = "LiveMigration"


class VirtualMachineInstanceMigrationTransport:
    """Values of the string field typed ``VirtualMachineInstanceMigrationTransport``."""

    MIGRATION_TRANSPORT_UNIX: Final = "Unix"


class AccessCredentialSecretSource(ApiModel):
    secret_name: str = Field(alias="secretName")


class SSHPublicKeyAccessCredentialSource(ApiModel):
    secret: AccessCredentialSecretSource | None = None


class ConfigDriveSSHPublicKeyAccessCredentialPropagation(ApiModel):
    pass


class NoCloudSSHPublicKeyAccessCredentialPropagation(ApiModel):
    pass


class QemuGuestAgentSSHPublicKeyAccessCredentialPropagation(ApiModel):
    users: list[str] = Field(json_schema_extra={"x-kubernetes-list-type": "set"})


class SSHPublicKeyAccessCredentialPropagationMethod(ApiModel):
    config_drive: ConfigDriveSSHPublicKeyAccessCredentialPropagation | None = Field(
        default=None, alias="configDrive"
    )
    no_cloud: NoCloudSSHPublicKeyAccessCredentialPropagation | None = Field(default=None, alias="noCloud")
    qemu_guest_agent: QemuGuestAgentSSHPublicKeyAccessCredentialPropagation | None = Field(
        default=None, alias="qemuGuestAgent"
    )


class SSHPublicKeyAccessCredential(ApiModel):
    source: SSHPublicKeyAccessCredentialSource
    propagation_method: SSHPublicKeyAccessCredentialPropagationMethod = Field(alias="propagationMethod")


class UserPasswordAccessCredentialSource(ApiModel):
    secret: AccessCredentialSecretSource | None = None


class QemuGuestAgentUserPasswordAccessCredentialPropagation(ApiModel):
    pass


class UserPasswordAccessCredentialPropagationMethod(ApiModel):
    qemu_guest_agent: QemuGuestAgentUserPasswordAccessCredentialPropagation | None = Field(
        default=None, alias="qemuGuestAgent"
    )


class UserPasswordAccessCredential(ApiModel):
    source: UserPasswordAccessCredentialSource
    propagation_method: UserPasswordAccessCredentialPropagationMethod = Field(alias="propagationMethod")


class AccessCredential(ApiModel):
    ssh_public_key: SSHPublicKeyAccessCredential | None = Field(default=None, alias="sshPublicKey")
    user_password: UserPasswordAccessCredential | None = Field(default=None, alias="userPassword")


class VirtualMachineInstanceSpec(ApiModel):
    priority_class_name: str | None = Field(default=None, alias="priorityClassName")
    domain: DomainSpec
    node_selector: dict[str, str] | None = Field(default=None, alias="nodeSelector")
    affinity: core_v1.Affinity | None = None
    scheduler_name: str | None = Field(default=None, alias="schedulerName")
    tolerations: list[core_v1.Toleration] | None = None
    topology_spread_constraints: list[core_v1.TopologySpreadConstraint] | None = Field(
        default=None,
        alias="topologySpreadConstraints",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["topologyKey", "whenUnsatisfiable"],
        },
    )
    eviction_strategy: str | None = Field(default=None, alias="evictionStrategy")
    start_strategy: str | None = Field(default=None, alias="startStrategy")
    termination_grace_period_seconds: Int64 | None = Field(
        default=None, alias="terminationGracePeriodSeconds"
    )
    volumes: list[Volume] | None = Field(default=None, json_schema_extra={"maxItems": 256})
    liveness_probe: Probe | None = Field(default=None, alias="livenessProbe")
    readiness_probe: Probe | None = Field(default=None, alias="readinessProbe")
    hostname: str | None = None
    subdomain: str | None = None
    networks: list[Network] | None = Field(default=None, json_schema_extra={"maxItems": 256})
    dns_policy: str | None = Field(default=None, alias="dnsPolicy")
    dns_config: core_v1.PodDNSConfig | None = Field(default=None, alias="dnsConfig")
    access_credentials: list[AccessCredential] | None = Field(
        default=None,
        alias="accessCredentials",
        json_schema_extra={"x-kubernetes-list-type": "atomic", "maxItems": 256},
    )
    architecture: str | None = None
    resource_claims: list[core_v1.PodResourceClaim] | None = Field(
        default=None,
        alias="resourceClaims",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )

    @field_validator("dns_config")
    @classmethod
    def _sanitize_nameservers(cls, dns: core_v1.PodDNSConfig | None) -> core_v1.PodDNSConfig | None:
        if dns is not None and dns.nameservers:
            dns.nameservers = [sanitize_ip(server) or server for server in dns.nameservers]
        return dns


class VirtualMachineInstanceCondition(Condition):
    pass


class VirtualMachineInstancePhaseTransitionTimestamp(ApiModel):
    phase: str | None = None
    phase_transition_timestamp: Time | None = Field(default=None, alias="phaseTransitionTimestamp")


class VirtualMachineInstanceNetworkInterface(ApiModel):
    ip_address: str | None = Field(default=None, alias="ipAddress")
    mac: str | None = None
    name: str | None = None
    ip_addresses: list[str] | None = Field(default=None, alias="ipAddresses")
    pod_interface_name: str | None = Field(default=None, alias="podInterfaceName")
    interface_name: str | None = Field(default=None, alias="interfaceName")
    info_source: str | None = Field(default=None, alias="infoSource")
    queue_count: Int32 | None = Field(default=None, alias="queueCount")
    link_state: str | None = Field(default=None, alias="linkState")


class VirtualMachineInstanceGuestOSInfo(ApiModel):
    name: str | None = None
    kernel_release: str | None = Field(default=None, alias="kernelRelease")
    version: str | None = None
    pretty_name: str | None = Field(default=None, alias="prettyName")
    version_id: str | None = Field(default=None, alias="versionId")
    kernel_version: str | None = Field(default=None, alias="kernelVersion")
    machine: str | None = None
    id: str | None = None


class MigrationConfiguration(ApiModel):
    node_drain_taint_key: str | None = Field(default=None, alias="nodeDrainTaintKey")
    parallel_outbound_migrations_per_node: Uint32 | None = Field(
        default=None, alias="parallelOutboundMigrationsPerNode"
    )
    parallel_migrations_per_cluster: Uint32 | None = Field(default=None, alias="parallelMigrationsPerCluster")
    allow_auto_converge: bool | None = Field(default=None, alias="allowAutoConverge")
    bandwidth_per_migration: Quantity | None = Field(default=None, alias="bandwidthPerMigration")
    completion_timeout_per_gib: Int64 | None = Field(default=None, alias="completionTimeoutPerGiB")
    progress_timeout: Int64 | None = Field(default=None, alias="progressTimeout")
    unsafe_migration_override: bool | None = Field(default=None, alias="unsafeMigrationOverride")
    allow_post_copy: bool | None = Field(default=None, alias="allowPostCopy")
    allow_workload_disruption: bool | None = Field(default=None, alias="allowWorkloadDisruption")
    disable_tls: bool | None = Field(default=None, alias="disableTLS")
    network: str | None = None
    match_selinux_level_on_migration: bool | None = Field(default=None, alias="matchSELinuxLevelOnMigration")


class VirtualMachineInstanceCommonMigrationState(ApiModel):
    node: str | None = None
    pod: str | None = None
    migration_uid: str | None = Field(default=None, alias="migrationUID")
    domain_name: str | None = Field(default=None, alias="domainName")
    domain_namespace: str | None = Field(default=None, alias="domainNamespace")
    sync_address: str | None = Field(default=None, alias="syncAddress")
    persistent_state_pvc_name: str | None = Field(default=None, alias="persistentStatePVCName")
    selinux_context: str | None = Field(default=None, alias="selinuxContext")
    virtual_machine_instance_uid: str | None = Field(default=None, alias="virtualMachineInstanceUID")


class VirtualMachineInstanceMigrationSourceState(VirtualMachineInstanceCommonMigrationState):
    node_selectors: dict[str, str] | None = Field(default=None, alias="nodeSelectors")


class VirtualMachineInstanceMigrationTargetState(VirtualMachineInstanceCommonMigrationState):
    domain_ready_timestamp: Time | None = Field(default=None, alias="domainReadyTimestamp")
    domain_detected: bool | None = Field(default=None, alias="domainDetected")
    node_address: str | None = Field(default=None, alias="nodeAddress")
    direct_migration_node_ports: dict[str, Int] | None = Field(default=None, alias="directMigrationNodePorts")
    attachment_pod_uid: str | None = Field(default=None, alias="attachmentPodUID")
    cpu_set: list[Int] | None = Field(
        default=None, alias="cpuSet", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    node_topology: str | None = Field(default=None, alias="nodeTopology")


class VirtualMachineInstanceMigrationState(ApiModel):
    start_timestamp: Time | None = Field(
        default=None, alias="startTimestamp", json_schema_extra={"nullable": True}
    )
    end_timestamp: Time | None = Field(
        default=None, alias="endTimestamp", json_schema_extra={"nullable": True}
    )
    target_node_domain_ready_timestamp: Time | None = Field(
        default=None, alias="targetNodeDomainReadyTimestamp"
    )
    target_node_domain_detected: bool | None = Field(default=None, alias="targetNodeDomainDetected")
    target_node_address: str | None = Field(default=None, alias="targetNodeAddress")
    target_direct_migration_node_ports: dict[str, Int] | None = Field(
        default=None, alias="targetDirectMigrationNodePorts"
    )
    target_node: str | None = Field(default=None, alias="targetNode")
    target_pod: str | None = Field(default=None, alias="targetPod")
    target_attachment_pod_uid: str | None = Field(default=None, alias="targetAttachmentPodUID")
    source_node: str | None = Field(default=None, alias="sourceNode")
    source_pod: str | None = Field(default=None, alias="sourcePod")
    completed: bool | None = None
    failed: bool | None = None
    abort_requested: bool | None = Field(default=None, alias="abortRequested")
    abort_status: str | None = Field(default=None, alias="abortStatus")
    failure_reason: str | None = Field(default=None, alias="failureReason")
    migration_uid: str | None = Field(default=None, alias="migrationUid")
    mode: str | None = None
    migration_policy_name: str | None = Field(default=None, alias="migrationPolicyName")
    migration_configuration: MigrationConfiguration | None = Field(
        default=None, alias="migrationConfiguration"
    )
    target_cpu_set: list[Int] | None = Field(
        default=None, alias="targetCPUSet", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    target_node_topology: str | None = Field(default=None, alias="targetNodeTopology")
    source_persistent_state_pvc_name: str | None = Field(default=None, alias="sourcePersistentStatePVCName")
    target_persistent_state_pvc_name: str | None = Field(default=None, alias="targetPersistentStatePVCName")
    source_state: VirtualMachineInstanceMigrationSourceState | None = Field(default=None, alias="sourceState")
    target_state: VirtualMachineInstanceMigrationTargetState | None = Field(default=None, alias="targetState")
    migration_network_type: str | None = Field(default=None, alias="migrationNetworkType")


class KernelInfo(ApiModel):
    checksum: Uint32 | None = None


class InitrdInfo(ApiModel):
    checksum: Uint32 | None = None


class KernelBootStatus(ApiModel):
    kernel_info: KernelInfo | None = Field(default=None, alias="kernelInfo")
    initrd_info: InitrdInfo | None = Field(default=None, alias="initrdInfo")


class TopologyHints(ApiModel):
    tsc_frequency: Int64 | None = Field(default=None, alias="tscFrequency")


class CPUTopology(ApiModel):
    cores: Uint32 | None = None
    sockets: Uint32 | None = None
    threads: Uint32 | None = None


class MemoryStatus(ApiModel):
    guest_at_boot: Quantity | None = Field(default=None, alias="guestAtBoot")
    guest_current: Quantity | None = Field(default=None, alias="guestCurrent")
    guest_requested: Quantity | None = Field(default=None, alias="guestRequested")


class StorageMigratedVolumeInfo(ApiModel):
    volume_name: str = Field(alias="volumeName")
    source_pvc_info: PersistentVolumeClaimInfo | None = Field(default=None, alias="sourcePVCInfo")
    destination_pvc_info: PersistentVolumeClaimInfo | None = Field(default=None, alias="destinationPVCInfo")


class DeviceAttribute(ApiModel):
    pci_address: str | None = Field(default=None, alias="pciAddress")
    mdev_uuid: str | None = Field(default=None, alias="mDevUUID")


class DeviceResourceClaimStatus(ApiModel):
    name: str | None = None
    resource_claim_name: str | None = Field(default=None, alias="resourceClaimName")
    attributes: DeviceAttribute | None = None


class DeviceStatusInfo(ApiModel):
    name: str
    device_resource_claim_status: DeviceResourceClaimStatus | None = Field(
        default=None, alias="deviceResourceClaimStatus"
    )


class DeviceStatus(ApiModel):
    gpu_statuses: list[DeviceStatusInfo] | None = Field(
        default=None, alias="gpuStatuses", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    host_device_statuses: list[DeviceStatusInfo] | None = Field(
        default=None, alias="hostDeviceStatuses", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class VirtualMachineInstanceStatus(ApiModel):
    node_name: str | None = Field(default=None, alias="nodeName")
    reason: str | None = None
    conditions: list[VirtualMachineInstanceCondition] | None = None
    phase: str | None = None
    phase_transition_timestamps: list[VirtualMachineInstancePhaseTransitionTimestamp] | None = Field(
        default=None,
        alias="phaseTransitionTimestamps",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    interfaces: list[VirtualMachineInstanceNetworkInterface] | None = None
    guest_os_info: VirtualMachineInstanceGuestOSInfo | None = Field(default=None, alias="guestOSInfo")
    migration_state: VirtualMachineInstanceMigrationState | None = Field(default=None, alias="migrationState")
    migration_method: str | None = Field(default=None, alias="migrationMethod")
    migration_transport: str | None = Field(default=None, alias="migrationTransport")
    qos_class: str | None = Field(default=None, alias="qosClass")
    launcher_container_image_version: str | None = Field(default=None, alias="launcherContainerImageVersion")
    evacuation_node_name: str | None = Field(default=None, alias="evacuationNodeName")
    active_pods: dict[str, str] | None = Field(default=None, alias="activePods")
    volume_status: list[VolumeStatus] | None = Field(
        default=None, alias="volumeStatus", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    kernel_boot_status: KernelBootStatus | None = Field(default=None, alias="kernelBootStatus")
    fs_freeze_status: str | None = Field(default=None, alias="fsFreezeStatus")
    topology_hints: TopologyHints | None = Field(default=None, alias="topologyHints")
    virtual_machine_revision_name: str | None = Field(default=None, alias="virtualMachineRevisionName")
    runtime_user: Uint64 | None = Field(default=None, alias="runtimeUser")
    vsockcid: Uint32 | None = Field(default=None, alias="VSOCKCID")
    selinux_context: str | None = Field(default=None, alias="selinuxContext")
    machine: Machine | None = None
    current_cpu_topology: CPUTopology | None = Field(default=None, alias="currentCPUTopology")
    memory: MemoryStatus | None = None
    migrated_volumes: list[StorageMigratedVolumeInfo] | None = Field(
        default=None, alias="migratedVolumes", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    device_status: DeviceStatus | None = Field(default=None, alias="deviceStatus")


class _Migration(Protocol):
    """What the VMI's migration predicates read of a VirtualMachineInstanceMigration; described rather
    than imported, since the migration's status holds this module's migration state."""

    @property
    def metadata(self) -> meta_v1.ObjectMeta | None: ...

    def is_decentralized(self) -> bool: ...


class VirtualMachineInstance(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineInstanceSpec
    status: VirtualMachineInstanceStatus | None = None

    # -- the predicates KubeVirt's Go type offers (``IsFinal()``…) ------------------------------------
    @property
    def phase(self) -> str:
        """``status.phase``, ``""`` while unset."""
        return (self.status.phase if self.status is not None else None) or ""

    def _migration_state(self) -> VirtualMachineInstanceMigrationState | None:
        return self.status.migration_state if self.status is not None else None

    def is_scheduling(self) -> bool:
        return self.phase == VirtualMachineInstancePhase.SCHEDULING

    def is_scheduled(self) -> bool:
        return self.phase == VirtualMachineInstancePhase.SCHEDULED

    def is_running(self) -> bool:
        return self.phase == VirtualMachineInstancePhase.RUNNING

    def is_final(self) -> bool:
        return self.phase in FINAL_VMI_PHASES

    def is_unknown(self) -> bool:
        return self.phase == VirtualMachineInstancePhase.UNKNOWN

    def is_unprocessed(self) -> bool:
        return self.phase in (VirtualMachineInstancePhase.PENDING, VirtualMachineInstancePhase.VM_PHASE_UNSET)

    def is_waiting_for_sync(self) -> bool:
        return self.phase == VirtualMachineInstancePhase.WAITING_FOR_SYNC

    def is_marked_for_deletion(self) -> bool:
        return self.metadata is not None and self.metadata.deletion_timestamp is not None

    def is_marked_for_eviction(self) -> bool:
        return bool(self.status is not None and self.status.evacuation_node_name)

    def is_migratable(self) -> bool:
        conditions = (self.status.conditions if self.status is not None else None) or []
        return any(
            c.type == VirtualMachineInstanceConditionType.IS_MIGRATABLE and c.status == "True"
            for c in conditions
        )

    def is_block_migration(self) -> bool:
        status = self.status
        return status is not None and (
            status.migration_method == VirtualMachineInstanceMigrationMethod.BLOCK_MIGRATION
            or bool(status.migrated_volumes)
        )

    def is_cpu_dedicated(self) -> bool:
        cpu = self.spec.domain.cpu
        return cpu is not None and bool(cpu.dedicated_cpu_placement)

    def is_realtime_enabled(self) -> bool:
        cpu = self.spec.domain.cpu
        return cpu is not None and cpu.realtime is not None

    def is_high_performance_vmi(self) -> bool:
        memory = self.spec.domain.memory
        return (
            self.is_cpu_dedicated()
            or self.is_realtime_enabled()
            or (memory is not None and memory.hugepages is not None)
        )

    def is_bootloader_efi(self) -> bool:
        firmware = self.spec.domain.firmware
        return (
            firmware is not None and firmware.bootloader is not None and firmware.bootloader.efi is not None
        )

    def wants_to_have_qos_guaranteed(self) -> bool:
        """CPU and memory requests equal to their limits; a memory limit alone counts, since the
        memory request then defaults to it."""
        resources = self.spec.domain.resources
        requests = (resources.requests if resources is not None else None) or {}
        limits = (resources.limits if resources is not None else None) or {}
        zero = Quantity("0")

        def matches(name: str) -> bool:
            request = requests.get(name, zero)
            return not request.is_zero() and request == limits.get(name, zero)

        memory_request, memory_limit = requests.get("memory", zero), limits.get("memory", zero)
        memory = (memory_request.is_zero() and not memory_limit.is_zero()) or matches("memory")
        return memory and matches("cpu")

    def should_start_paused(self) -> bool:
        return self.spec.start_strategy == StartStrategy.PAUSED

    def is_migration_target(self) -> bool:
        """A receiver VMI of a decentralized migration."""
        annotations = (self.metadata.annotations if self.metadata is not None else None) or {}
        return annotations.get("kubevirt.io/create-migration-target") == "true"

    def is_migration_target_node_label_set(self) -> bool:
        labels = (self.metadata.labels if self.metadata is not None else None) or {}
        return "kubevirt.io/migrationTargetNodeName" in labels

    def is_migration_source(self) -> bool:
        state = self._migration_state()
        target = state.target_state if state is not None else None
        return target is not None and target.sync_address is not None and target.node_address is not None

    def is_migration_source_synchronized(self) -> bool:
        state = self._migration_state()
        if state is None or state.source_state is None or state.target_state is None:
            return False
        source = state.source_state
        return bool(source.migration_uid and source.pod and source.node) and source.node_selectors is not None

    def is_migration_completed(self) -> bool:
        state = self._migration_state()
        return state is not None and bool(state.completed)

    def is_decentralized_migration(self) -> bool:
        state = self._migration_state()
        if state is None or state.source_state is None or state.target_state is None:
            return False
        return (state.source_state.sync_address is None) != (state.target_state.sync_address is None)

    def is_migration_synchronized(self, migration: _Migration) -> bool:
        state = self._migration_state()
        if not migration.is_decentralized():
            return state is not None
        return (
            state is not None
            and state.source_state is not None
            and state.target_state is not None
            and bool(state.source_state.migration_uid)
            and bool(state.target_state.migration_uid)
        )

    def is_target_preparing(self, migration: _Migration) -> bool:
        state = self._migration_state()
        if migration.is_decentralized():
            target = state.target_state if state is not None else None
            return (
                self.is_migration_synchronized(migration)
                and target is not None
                and bool(target.pod)
                and bool(target.node)
            )
        migration_uid = migration.metadata.uid if migration.metadata is not None else None
        return (
            state is not None
            and (state.migration_uid or "") == (migration_uid or "")
            and bool(state.target_node)
        )


class VirtualMachineInstanceList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineInstance]


class VirtualMachineInstanceTemplateSpec(ApiModel):
    metadata: meta_v1.ObjectMeta | None = Field(
        default=None, json_schema_extra={"x-kubernetes-preserve-unknown-fields": True, "nullable": True}
    )
    spec: VirtualMachineInstanceSpec | None = None
