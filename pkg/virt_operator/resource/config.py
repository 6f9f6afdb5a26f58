"""What an install is generated from: the KubeVirt CR's image and placement settings, resolved against the
operator's own image (KubeVirt's ``util.KubeVirtDeploymentConfig``).

The identity of a config (:attr:`InstallConfig.deployment_id`) is a hash of everything that shapes the
objects, so a changed CR that changes nothing installed keeps the same identity.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from kubevirt.virt_operator.resource.monitoring import DEFAULT_MONITOR_ACCOUNT, DEFAULT_MONITOR_NAMESPACES
from kubevirt.virt_operator.resource.placement import placement_json
from kubevirt_api.core.v1.kubevirt import KubeVirt

DEFAULT_VERBOSITY = 2
DEFAULT_REPLICAS = 2
DEFAULT_PULL_POLICY = "IfNotPresent"
# The feature gate under which the operator runs virt-exportproxy (KubeVirt's exportProxyEnabled).
VM_EXPORT_GATE = "VMExport"
# The feature gate under which the operator installs the project's DataVolume importer (CDI's API and
# controller) on clusters without CDI.
DATA_IMPORTER_GATE = "DataImporter"


class InvalidInstallConfigError(ValueError):
    """A CR setting the install cannot be generated from; the message names the field."""


def split_image(image: str) -> tuple[str, str]:
    """``registry/prefix/name:tag`` → (``registry/prefix``, ``tag``); a digest or no tag gives ``latest``."""
    repository, _, name_and_tag = image.rpartition("/")
    _name, sep, tag = name_and_tag.partition(":")
    if not sep or "@" in name_and_tag:
        tag = "latest"
    return repository, tag


@dataclass(frozen=True)
class Patch:
    """One ``spec.customizeComponents.patches[]`` entry."""

    resource_name: str
    resource_type: str
    patch: str
    type: str


@dataclass(frozen=True)
class Monitoring:
    """What the operator found of the cluster's Prometheus: the monitor namespace holding its service
    account, whether the ServiceMonitor and PrometheusRule APIs are served, and the runbook URL
    template of the alerts (from the operator's environment)."""

    namespace: str
    service_monitors: bool
    prometheus_rules: bool
    runbook_template: str


# The CR's monitoring settings: in the identity when set, as KubeVirt's deployment ID has them; left out
# when unset, so installs that never set them keep the identity they had.
_MONITORING_SETTINGS = ("monitor_namespace", "service_monitor_namespace", "monitor_account")


@dataclass(frozen=True)
class InstallConfig:
    namespace: str
    registry: str
    tag: str
    image_prefix: str = ""
    pull_policy: str = DEFAULT_PULL_POLICY
    pull_secrets: tuple[str, ...] = ()
    infra_replicas: int = DEFAULT_REPLICAS
    product_name: str = ""
    product_version: str = ""
    product_component: str = ""
    verbosity: dict[str, int] = field(default_factory=dict)
    use_emulation: bool = False
    patches: tuple[Patch, ...] = ()
    # customizeComponents.flags: component (virt-api, virt-controller, virt-handler) → flag → value.
    flags: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    # spec.workloads.nodePlacement as JSON: where virt-handler's pods may run.
    handler_placement: dict[str, Any] = field(default_factory=dict)
    kubevirt_generation: int = 0
    # Whether virt-exportproxy runs: the VMExport gate. Like the generation, not part of the identity:
    # KubeVirt's deployment ID ignores spec.configuration, so turning the gate on or off is no update.
    export_proxy: bool = False
    # Whether the DataVolume importer is installed: the DataImporter gate, unless CDI itself serves the
    # cdi.kubevirt.io API (the reconciler decides that from the cluster). Not part of the identity either.
    data_importer: bool = False
    # spec.monitorNamespace, spec.serviceMonitorNamespace and spec.monitorAccount ("" when unset).
    monitor_namespace: str = ""
    service_monitor_namespace: str = ""
    monitor_account: str = ""
    # Where Prometheus is on this cluster (None: nowhere the CR allows), which the reconciler finds out;
    # not part of the identity either, as KubeVirt's ID does not depend on the cluster.
    monitoring: Monitoring | None = None

    @property
    def version(self) -> str:
        return self.tag

    def image(self, component: str) -> str:
        return f"{self.registry}/{self.image_prefix}{component}:{self.tag}"

    def verbosity_of(self, component: str) -> int:
        return self.verbosity.get(component, DEFAULT_VERBOSITY)

    def monitor_namespaces(self) -> tuple[str, ...]:
        """Where to look for Prometheus' service account, in order: the CR's namespace, else the defaults."""
        return (self.monitor_namespace,) if self.monitor_namespace else DEFAULT_MONITOR_NAMESPACES

    def monitor_service_account(self) -> str:
        return self.monitor_account or DEFAULT_MONITOR_ACCOUNT

    @property
    def deployment_id(self) -> str:
        """A short hash of everything that shapes the installed objects (not the CR's generation, the
        feature gates, nor what the operator found on the cluster)."""
        shape = asdict(self)
        shape.pop("kubevirt_generation")
        shape.pop("export_proxy")
        shape.pop("data_importer")
        shape.pop("monitoring")
        for name in _MONITORING_SETTINGS:
            if not shape[name]:
                shape.pop(name)
        digest = hashlib.sha1(json.dumps(shape, sort_keys=True).encode()).hexdigest()
        return digest[:16]

    def deployment_config(self) -> str:
        """The JSON recorded in ``status.targetDeploymentConfig``."""
        return json.dumps(
            {
                "id": self.deployment_id,
                "namespace": self.namespace,
                "registry": self.registry,
                "version": self.tag,
            },
            sort_keys=True,
        )


# KubeVirt's logVerbosity keys for the components this project deploys.
_VERBOSITY_KEYS = {
    "virt-api": "virtAPI",
    "virt-controller": "virtController",
    "virt-handler": "virtHandler",
    "virt-launcher": "virtLauncher",
    "virt-operator": "virtOperator",
}


def install_config(kv: KubeVirt, *, namespace: str, operator_image: str) -> InstallConfig:
    """The install the CR asks for; unset registry and tag come from the operator's own image."""
    spec = kv.spec
    default_registry, default_tag = split_image(operator_image)
    registry = spec.image_registry or default_registry
    tag = spec.image_tag or default_tag
    if not registry:
        raise InvalidInstallConfigError("spec.imageRegistry: cannot be derived from the operator's image")
    replicas = DEFAULT_REPLICAS
    if spec.infra is not None and spec.infra.replicas is not None:
        replicas = int(spec.infra.replicas)
        if replicas < 1:
            raise InvalidInstallConfigError("spec.infra.replicas: must be at least 1")
    verbosity: dict[str, int] = {}
    developer = spec.configuration.developer_configuration if spec.configuration else None
    log_verbosity = developer.log_verbosity if developer else None
    if log_verbosity is not None:
        dumped = log_verbosity.model_dump(by_alias=True, exclude_none=True)
        for component, key in _VERBOSITY_KEYS.items():
            if key in dumped:
                verbosity[component] = int(dumped[key])
    patches: tuple[Patch, ...] = ()
    if spec.customize_components is not None and spec.customize_components.patches:
        patches = tuple(
            Patch(p.resource_name, p.resource_type, p.patch, p.type)
            for p in spec.customize_components.patches
        )
    flags: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    customized_flags = spec.customize_components.flags if spec.customize_components else None
    if customized_flags is not None:
        flags = tuple(
            (component, tuple(sorted(values.items(), key=lambda item: item[0].lower())))
            for component, values in (
                ("virt-api", customized_flags.api),
                ("virt-controller", customized_flags.controller),
                ("virt-handler", customized_flags.handler),
            )
            if values
        )
    metadata = kv.metadata
    gates = (developer.feature_gates or []) if developer else []
    workloads = spec.workloads.node_placement if spec.workloads is not None else None
    return InstallConfig(
        namespace=namespace,
        registry=registry,
        tag=tag,
        pull_policy=spec.image_pull_policy or DEFAULT_PULL_POLICY,
        pull_secrets=tuple(s.name for s in spec.image_pull_secrets or () if s.name),
        infra_replicas=replicas,
        product_name=spec.product_name or "",
        product_version=spec.product_version or "",
        product_component=spec.product_component or "",
        verbosity=verbosity,
        use_emulation=bool(developer.use_emulation) if developer else False,
        patches=patches,
        flags=flags,
        handler_placement=placement_json(workloads),
        kubevirt_generation=int(metadata.generation or 0) if metadata else 0,
        # Only the CR's own list counts, as in KubeVirt's isFeatureGateEnabled.
        export_proxy=VM_EXPORT_GATE in gates,
        data_importer=DATA_IMPORTER_GATE in gates,
        monitor_namespace=spec.monitor_namespace or "",
        service_monitor_namespace=spec.service_monitor_namespace or "",
        monitor_account=spec.monitor_account or "",
    )
