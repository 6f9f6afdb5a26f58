"""The cluster configuration every component reads (KubeVirt's ``virtconfig.ClusterConfig``).

KubeVirt's built-in values overlaid by the KubeVirt CR's ``spec.configuration``: feature gates (gates
that graduated count as enabled whatever the CR says), the VM rollout strategy, eviction strategy,
architectures and their emulated machines, whether a bridge may sit on the pod network, and what
virt-handler's node labeller and KSM handler read (obsolete CPU models, KSM's node selector), the
TLS settings of every listener (``tlsConfiguration``), what shapes the virt-launcher pod and what
virt-handler passes each launcher for its domain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubevirt.virt_config.domain import DomainSettings
from kubevirt.virt_config.launcher import LauncherSettings
from kubevirt.virt_config.migrations import InvalidMigrationConfigurationError, MigrationConfig
from kubevirt.virt_config.tls import InvalidTLSConfigurationError, TLSConfiguration
from kubevirt_api.view import View

ROLLOUT_LIVE_UPDATE = "LiveUpdate"
ROLLOUT_STAGE = "Stage"
ROLLOUT_STRATEGIES = (ROLLOUT_LIVE_UPDATE, ROLLOUT_STAGE)

# KubeVirt's default emulated machine globs per architecture.
DEFAULT_EMULATED_MACHINES: dict[str, tuple[str, ...]] = {
    "amd64": ("q35*", "pc-q35*"),
    "arm64": ("virt*",),
    "s390x": ("s390-ccw-virtio*",),
    "ppc64le": ("pseries*",),
}

# Gates that became GA: KubeVirt treats them as enabled whatever the configuration says.
GRADUATED_FEATURE_GATES = frozenset(
    {
        "LiveMigration",
        "SRIOVLiveMigration",
        "NonRoot",
        "PSA",
        "CPUNodeDiscovery",
        "NUMA",
        "CommonInstancetypesDeploymentGate",
        "GPU",
        "HotplugNICs",
        "BochsDisplayForEFIGuests",
        "VMLiveUpdateFeatures",
        "NetworkBindingPlugins",
        "DynamicPodInterfaceNaming",
        "VolumesUpdateStrategy",
        "VolumeMigration",
        "DisableCustomSELinuxPolicy",
        "AutoResourceLimitsGate",
    }
)

# Alpha: virt-handler installs KubeVirt's seccomp profile for launcher pods on its node.
KUBEVIRT_SECCOMP_PROFILE_GATE: Final = "KubevirtSeccompProfile"

DEFAULT_INSTALL_NAMESPACE = "kubevirt"
KUBEVIRT_SERVICE_ACCOUNT_NAMES = (
    "kubevirt-apiserver",
    "kubevirt-controller",
    "kubevirt-handler",
    "kubevirt-synchronization-controller",
)


INSTANCETYPE_REFERENCE_POLICIES: Final = ("reference", "expand", "expandAll")

# developerConfiguration's space rules for the disk images virt-handler makes (KubeVirt's defaults).
DEFAULT_LESS_PVC_SPACE_TOLERATION: Final = 10
DEFAULT_MINIMUM_RESERVE_PVC_BYTES: Final = 131072
_MAX_UINT64: Final = 2**64 - 1


class InvalidConfigurationError(ValueError):
    """A KubeVirt CR whose configuration cannot be used (the last valid one stays in force)."""


# KubeVirt's default ``supportedGuestAgentVersions`` (regular expressions).
DEFAULT_SUPPORTED_GUEST_AGENT_VERSIONS = ("2.*", "3.*", "4.*", "5.*")


@dataclass(frozen=True)
class ClusterConfig:
    """What the KubeVirt CR's ``spec.configuration`` decides, merged over KubeVirt's defaults."""

    feature_gates: frozenset[str] = frozenset()
    rollout_strategy: str = ROLLOUT_LIVE_UPDATE
    eviction_strategy: str | None = None
    default_architecture: str = "amd64"
    emulated_machines: dict[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(DEFAULT_EMULATED_MACHINES)
    )
    permit_bridge_interface_on_pod_network: bool = True
    install_namespace: str = DEFAULT_INSTALL_NAMESPACE
    # None: KubeVirt's built-in list of obsolete CPU models.
    obsolete_cpu_models: frozenset[str] | None = None
    # ``ksmConfiguration.nodeLabelSelector``; None: KSM is handled on no node.
    ksm_node_label_selector: Mapping[str, Any] | None = None
    # How VMs keep their instance type and preference: "reference" (a ControllerRevision), "expand"
    # (written into the VM unless it already references revisions) or "expandAll" (always written in).
    instancetype_reference_policy: str = "reference"
    migrations: MigrationConfig = field(default_factory=MigrationConfig)
    # ``tlsConfiguration``: the minimum TLS version and cipher suites of every KubeVirt listener.
    tls: TLSConfiguration = field(default_factory=TLSConfiguration)
    # What virt-controller's template service reads (resource ratios, pull policy, seccomp, ...).
    launcher: LauncherSettings = field(default_factory=LauncherSettings)
    # What virt-handler passes every launcher with SyncVirtualMachine (SMBIOS, balloon statistics, ...).
    domain: DomainSettings = field(default_factory=DomainSettings)
    # pvcTolerateLessSpaceUpToPercent and minimumReservePVCBytes: how much less room than asked a disk
    # image virt-handler makes may get, and the room it leaves free.
    less_pvc_space_toleration: int = DEFAULT_LESS_PVC_SPACE_TOLERATION
    minimum_reserve_pvc_bytes: int = DEFAULT_MINIMUM_RESERVE_PVC_BYTES
    # Patterns of the guest agent versions accepted from an agent that lists no supported commands.
    supported_guest_agent_versions: tuple[str, ...] = DEFAULT_SUPPORTED_GUEST_AGENT_VERSIONS

    @classmethod
    def build(
        cls, *, feature_gates: Iterable[str] = (), rollout_strategy: str = ROLLOUT_LIVE_UPDATE
    ) -> ClusterConfig:
        if rollout_strategy not in ROLLOUT_STRATEGIES:
            raise ValueError(
                f"unknown rollout strategy {rollout_strategy!r}, expected one of {list(ROLLOUT_STRATEGIES)}"
            )
        gates = frozenset(g.strip() for g in feature_gates if g.strip())
        return cls(feature_gates=gates, rollout_strategy=rollout_strategy)

    @classmethod
    def from_kubevirt(
        cls, kubevirt: Mapping[str, Any], *, install_namespace: str | None = None
    ) -> ClusterConfig:
        """The settings a KubeVirt CR's ``spec.configuration`` gives (KubeVirt's defaults elsewhere).

        Raises :class:`InvalidConfigurationError` naming the field when a value has the wrong type or
        is not one KubeVirt accepts (what KubeVirt's CRD schema and config validation refuse).
        """
        root = View.of(kubevirt, error=InvalidConfigurationError)
        configuration = root.object("spec").object("configuration")
        strategy = configuration.optional_string("vmRolloutStrategy")
        if strategy is not None and strategy not in ROLLOUT_STRATEGIES:
            raise configuration.fail(
                "vmRolloutStrategy",
                f"unknown strategy {strategy!r}, expected one of {list(ROLLOUT_STRATEGIES)}",
            )
        policy = configuration.object("instancetype").optional_string("referencePolicy")
        if policy is not None and policy not in INSTANCETYPE_REFERENCE_POLICIES:
            raise configuration.object("instancetype").fail(
                "referencePolicy",
                f"unknown policy {policy!r}, expected one of {list(INSTANCETYPE_REFERENCE_POLICIES)}",
            )
        architectures = configuration.object("architectureConfiguration")
        machines = dict(DEFAULT_EMULATED_MACHINES)
        for arch in machines:
            if globs := architectures.object(arch).strings("emulatedMachines"):
                machines[arch] = tuple(globs)
        # KubeVirt's labeller looks the models up by key; the values play no part.
        obsolete = configuration.optional_object("obsoleteCPUModels")
        # No selector selects no node (KubeVirt's nil selector); an empty one selects them all.
        selector = configuration.object("ksmConfiguration").optional_object("nodeLabelSelector")
        developer = configuration.object("developerConfiguration")
        toleration, reserve = _pvc_space(developer)
        try:
            migrations = MigrationConfig.from_configuration(configuration.object("migrations"))
            tls = TLSConfiguration.from_configuration(configuration.object("tlsConfiguration"))
        except (InvalidMigrationConfigurationError, InvalidTLSConfigurationError) as err:
            raise InvalidConfigurationError(str(err)) from err
        return cls(
            migrations=migrations,
            tls=tls,
            launcher=LauncherSettings.from_configuration(configuration),
            domain=DomainSettings.from_kubevirt(root, configuration),
            feature_gates=frozenset(developer.strings("featureGates")),
            less_pvc_space_toleration=toleration,
            minimum_reserve_pvc_bytes=reserve,
            rollout_strategy=strategy or ROLLOUT_LIVE_UPDATE,
            eviction_strategy=configuration.optional_string("evictionStrategy"),
            default_architecture=architectures.string("defaultArchitecture", default="amd64"),
            emulated_machines=machines,
            permit_bridge_interface_on_pod_network=configuration.object("network").boolean(
                "permitBridgeInterfaceOnPodNetwork", default=True
            ),
            install_namespace=install_namespace
            or root.object("metadata").string("namespace", default=DEFAULT_INSTALL_NAMESPACE),
            obsolete_cpu_models=frozenset(obsolete.data) if obsolete is not None else None,
            ksm_node_label_selector=dict(selector.data) if selector is not None else None,
            instancetype_reference_policy=policy or "reference",
            supported_guest_agent_versions=tuple(configuration.strings("supportedGuestAgentVersions"))
            or DEFAULT_SUPPORTED_GUEST_AGENT_VERSIONS,
        )

    def enabled(self, gate: str) -> bool:
        return gate in self.feature_gates or gate in GRADUATED_FEATURE_GATES

    @property
    def live_update(self) -> bool:
        return self.rollout_strategy == ROLLOUT_LIVE_UPDATE

    def machines_for(self, architecture: str) -> tuple[str, ...]:
        # KubeVirt falls back to the amd64 list for any architecture it has no list for.
        machines = self.emulated_machines.get(architecture or self.default_architecture)
        return machines if machines is not None else self.emulated_machines.get("amd64", ())

    @property
    def kubevirt_service_accounts(self) -> frozenset[str]:
        return frozenset(
            f"system:serviceaccount:{self.install_namespace}:{name}"
            for name in KUBEVIRT_SERVICE_ACCOUNT_NAMES
        )


def _pvc_space(developer: View) -> tuple[int, int]:
    """The toleration (0 to 100, else the configuration is invalid, as in KubeVirt) and the reserve;
    an unset or zero value is KubeVirt's default (its CR leaves zero values out)."""
    toleration = developer.integer("pvcTolerateLessSpaceUpToPercent")
    if not 0 <= toleration <= 100:
        raise developer.fail(
            "pvcTolerateLessSpaceUpToPercent", f"invalid lessPVCSpaceToleration in ConfigMap: {toleration}"
        )
    reserve = developer.integer("minimumReservePVCBytes", minimum=0, maximum=_MAX_UINT64)
    return toleration or DEFAULT_LESS_PVC_SPACE_TOLERATION, reserve or DEFAULT_MINIMUM_RESERVE_PVC_BYTES
