"""The KubeVirt CR's settings that shape the virt-launcher pod (``spec.configuration``), with KubeVirt's
defaults: part of :class:`~kubevirt.virt_config.ClusterConfig`, read with the rest of the CR.

Unlike the settings :mod:`kubevirt.virt_config.config` checks, an unusable value here falls back to
KubeVirt's default instead of rejecting the configuration, as KubeVirt's own accessors do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubevirt_api.resource import Quantity

DEFAULT_CPU_ALLOCATION_RATIO = 10
DEFAULT_MEMORY_OVERCOMMIT_PERCENT = 100
DEFAULT_LAUNCHER_LOG_VERBOSITY = 2
DEFAULT_IMAGE_PULL_POLICY = "IfNotPresent"
DEFAULT_DISK_VERIFICATION_MEMORY_LIMIT_BYTES = 2097152000
DEFAULT_OVMF_PATHS: Mapping[str, str] = {"arm64": "/usr/share/AAVMF", "s390x": ""}
DEFAULT_OVMF_PATH = "/usr/share/OVMF"
SECCOMP_LOCALHOST = "Localhost"
SECCOMP_RUNTIME_DEFAULT = "RuntimeDefault"


@dataclass(frozen=True)
class SeccompProfile:
    """A pod's ``securityContext.seccompProfile``."""

    type: str
    localhost_profile: str | None = None

    def to_dict(self) -> dict[str, str]:
        if self.localhost_profile is None:
            return {"type": self.type}
        return {"type": self.type, "localhostProfile": self.localhost_profile}


@dataclass(frozen=True, kw_only=True)
class LauncherSettings:
    """``spec.configuration`` values the template service reads (KubeVirt's defaults)."""

    # developerConfiguration.useEmulation: no /dev/kvm request, no vhost-net request.
    use_emulation: bool = False
    cpu_allocation_ratio: int = DEFAULT_CPU_ALLOCATION_RATIO
    memory_overcommit_percent: int = DEFAULT_MEMORY_OVERCOMMIT_PERCENT
    # additionalGuestMemoryOverheadRatio, a decimal string such as "1.5"; None leaves the overhead as is.
    additional_guest_memory_overhead_ratio: str | None = None
    launcher_log_verbosity: int = DEFAULT_LAUNCHER_LOG_VERBOSITY
    image_pull_policy: str = DEFAULT_IMAGE_PULL_POLICY
    disk_verification_memory_limit_bytes: int = DEFAULT_DISK_VERIFICATION_MEMORY_LIMIT_BYTES
    # developerConfiguration.nodeSelectors, merged under the VMI's own.
    node_selectors: Mapping[str, str] = field(default_factory=dict)
    default_runtime_class: str = ""
    serial_console_log_disabled: bool = False
    ovmf_path: str = ""
    # seccompConfiguration.virtualMachineInstanceProfile.customProfile; None leaves the runtime's choice.
    seccomp_profile: SeccompProfile | None = None

    def ovmf_path_for(self, architecture: str) -> str:
        if self.ovmf_path:
            return self.ovmf_path
        return DEFAULT_OVMF_PATHS.get(architecture, DEFAULT_OVMF_PATH)

    @classmethod
    def from_configuration(cls, configuration: Mapping[str, Any]) -> LauncherSettings:
        """The settings ``spec.configuration`` gives; KubeVirt's defaults for what it leaves out or sets
        to something unusable."""
        developer = _mapping(configuration.get("developerConfiguration"))
        verbosity = _mapping(developer.get("logVerbosity")).get("virtLauncher")
        memory_limit = _mapping(developer.get("diskVerification")).get("memoryLimit")
        try:
            disk_limit = Quantity.coerce(memory_limit).value() if memory_limit is not None else None
        except ValueError:
            disk_limit = None
        selectors = _mapping(developer.get("nodeSelectors"))
        ratio = configuration.get("additionalGuestMemoryOverheadRatio")
        options = _mapping(configuration.get("virtualMachineOptions"))
        return cls(
            use_emulation=developer.get("useEmulation") is True,
            cpu_allocation_ratio=_positive(developer.get("cpuAllocationRatio"), DEFAULT_CPU_ALLOCATION_RATIO),
            memory_overcommit_percent=_positive(
                developer.get("memoryOvercommit"), DEFAULT_MEMORY_OVERCOMMIT_PERCENT
            ),
            additional_guest_memory_overhead_ratio=ratio if isinstance(ratio, str) else None,
            launcher_log_verbosity=_positive(verbosity, DEFAULT_LAUNCHER_LOG_VERBOSITY),
            image_pull_policy=_text(configuration.get("imagePullPolicy"), DEFAULT_IMAGE_PULL_POLICY),
            disk_verification_memory_limit_bytes=disk_limit or DEFAULT_DISK_VERIFICATION_MEMORY_LIMIT_BYTES,
            node_selectors={str(k): str(v) for k, v in selectors.items() if isinstance(v, str)},
            default_runtime_class=_text(configuration.get("defaultRuntimeClass"), ""),
            serial_console_log_disabled=options.get("disableSerialConsoleLog") is not None,
            ovmf_path=_text(configuration.get("ovmfPath"), ""),
            seccomp_profile=_seccomp_profile(configuration),
        )


def _seccomp_profile(configuration: Mapping[str, Any]) -> SeccompProfile | None:
    """The launcher pod's profile: a localhost profile (even an empty path, as KubeVirt passes any path it
    is given) wins over the runtime's default; with neither the pod names none."""
    seccomp = _mapping(configuration.get("seccompConfiguration"))
    custom = _mapping(_mapping(seccomp.get("virtualMachineInstanceProfile")).get("customProfile"))
    localhost = custom.get("localhostProfile")
    if isinstance(localhost, str):
        return SeccompProfile(SECCOMP_LOCALHOST, localhost)
    if custom.get("runtimeDefaultProfile") is True:
        return SeccompProfile(SECCOMP_RUNTIME_DEFAULT)
    return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _positive(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def _text(value: object, default: str) -> str:
    return value if isinstance(value, str) and value else default
