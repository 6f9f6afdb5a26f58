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


class InvalidConfigurationError(ValueError):
    """A KubeVirt CR whose configuration cannot be used (the last valid one stays in force)."""


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
        is not one KubeVirt accepts.
        """
        configuration = _mapping(_mapping(kubevirt.get("spec")).get("configuration"))
        _check(configuration)
        developer = _mapping(configuration.get("developerConfiguration"))
        raw_gates = developer.get("featureGates")
        gates = (
            frozenset(g for g in raw_gates if isinstance(g, str))
            if isinstance(raw_gates, list)
            else frozenset()
        )
        strategy = configuration.get("vmRolloutStrategy")
        eviction = configuration.get("evictionStrategy")
        architectures = _mapping(configuration.get("architectureConfiguration"))
        machines = dict(DEFAULT_EMULATED_MACHINES)
        for arch in machines:
            globs = _mapping(architectures.get(arch)).get("emulatedMachines")
            if isinstance(globs, list) and globs:
                machines[arch] = tuple(str(g) for g in globs)
        default_arch = architectures.get("defaultArchitecture")
        bridge = _mapping(configuration.get("network")).get("permitBridgeInterfaceOnPodNetwork")
        namespace = install_namespace or _mapping(kubevirt.get("metadata")).get("namespace")
        obsolete = configuration.get("obsoleteCPUModels")
        selector = _mapping(configuration.get("ksmConfiguration")).get("nodeLabelSelector")
        policy = _mapping(configuration.get("instancetype")).get("referencePolicy")
        try:
            migrations = MigrationConfig.from_configuration(
                _mapping(configuration.get("migrations")), f"{_PREFIX}.migrations"
            )
            tls = TLSConfiguration.from_configuration(configuration.get("tlsConfiguration"))
        except (InvalidMigrationConfigurationError, InvalidTLSConfigurationError) as err:
            raise InvalidConfigurationError(str(err)) from err
        return cls(
            migrations=migrations,
            tls=tls,
            launcher=LauncherSettings.from_configuration(configuration),
            domain=DomainSettings.from_kubevirt(kubevirt, configuration),
            feature_gates=gates,
            rollout_strategy=strategy if strategy in ROLLOUT_STRATEGIES else ROLLOUT_LIVE_UPDATE,
            eviction_strategy=eviction if isinstance(eviction, str) else None,
            default_architecture=default_arch if isinstance(default_arch, str) and default_arch else "amd64",
            emulated_machines=machines,
            permit_bridge_interface_on_pod_network=bridge if isinstance(bridge, bool) else True,
            install_namespace=namespace
            if isinstance(namespace, str) and namespace
            else DEFAULT_INSTALL_NAMESPACE,
            # KubeVirt's labeller looks the models up by key; the values play no part.
            obsolete_cpu_models=frozenset(str(model) for model in obsolete)
            if isinstance(obsolete, Mapping)
            else None,
            # No selector selects no node (KubeVirt's nil selector); an empty one selects them all.
            ksm_node_label_selector=dict(selector) if isinstance(selector, Mapping) else None,
            instancetype_reference_policy=policy if isinstance(policy, str) and policy else "reference",
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


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


_PREFIX = "spec.configuration"


def _check(configuration: Mapping[str, Any]) -> None:
    """The checks KubeVirt's CRD schema and config validation make on the fields read here."""
    for key in (
        "developerConfiguration",
        "architectureConfiguration",
        "network",
        "obsoleteCPUModels",
        "ksmConfiguration",
        "instancetype",
    ):
        value = configuration.get(key)
        if value is not None and not isinstance(value, Mapping):
            raise InvalidConfigurationError(f"{_PREFIX}.{key}: must be an object")
    gates = _mapping(configuration.get("developerConfiguration")).get("featureGates")
    if gates is not None and (
        not isinstance(gates, list) or not all(isinstance(gate, str) for gate in gates)
    ):
        raise InvalidConfigurationError(
            f"{_PREFIX}.developerConfiguration.featureGates: must be a list of strings"
        )
    strategy = configuration.get("vmRolloutStrategy")
    if strategy is not None and strategy not in ROLLOUT_STRATEGIES:
        raise InvalidConfigurationError(
            f"{_PREFIX}.vmRolloutStrategy: unknown strategy {strategy!r}, "
            f"expected one of {list(ROLLOUT_STRATEGIES)}"
        )
    policy = _mapping(configuration.get("instancetype")).get("referencePolicy")
    if policy is not None and policy not in INSTANCETYPE_REFERENCE_POLICIES:
        raise InvalidConfigurationError(
            f"{_PREFIX}.instancetype.referencePolicy: unknown policy {policy!r}, "
            f"expected one of {list(INSTANCETYPE_REFERENCE_POLICIES)}"
        )
    bridge = _mapping(configuration.get("network")).get("permitBridgeInterfaceOnPodNetwork")
    if bridge is not None and not isinstance(bridge, bool):
        raise InvalidConfigurationError(
            f"{_PREFIX}.network.permitBridgeInterfaceOnPodNetwork: must be a boolean"
        )
