"""The KubeVirt CR's settings that shape the virt-launcher pod (``spec.configuration``), with KubeVirt's
defaults: part of :class:`~kubevirt.virt_config.ClusterConfig`, read with the rest of the CR.

A value of the wrong type rejects the configuration, as KubeVirt's CRD schema does; a well-typed but
unusable one (a ratio that is not positive, a limit that is no quantity) falls back to KubeVirt's default
instead, as KubeVirt's own accessors do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubevirt_api.resource import Quantity
from kubevirt_api.view import View

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
    def from_configuration(cls, configuration: View) -> LauncherSettings:
        """The settings ``spec.configuration`` gives; KubeVirt's defaults for what it leaves out or sets
        to something unusable. A value of the wrong type raises ``configuration``'s error."""
        developer = configuration.object("developerConfiguration")
        memory_limit = developer.object("diskVerification").get("memoryLimit")
        try:
            disk_limit = Quantity.coerce(memory_limit).value() if memory_limit is not None else None
        except ValueError:
            disk_limit = None
        return cls(
            use_emulation=developer.boolean("useEmulation"),
            cpu_allocation_ratio=_positive(developer, "cpuAllocationRatio", DEFAULT_CPU_ALLOCATION_RATIO),
            memory_overcommit_percent=_positive(
                developer, "memoryOvercommit", DEFAULT_MEMORY_OVERCOMMIT_PERCENT
            ),
            additional_guest_memory_overhead_ratio=configuration.optional_string(
                "additionalGuestMemoryOverheadRatio"
            ),
            launcher_log_verbosity=_positive(
                developer.object("logVerbosity"), "virtLauncher", DEFAULT_LAUNCHER_LOG_VERBOSITY
            ),
            image_pull_policy=configuration.string("imagePullPolicy", default=DEFAULT_IMAGE_PULL_POLICY),
            disk_verification_memory_limit_bytes=disk_limit or DEFAULT_DISK_VERIFICATION_MEMORY_LIMIT_BYTES,
            node_selectors=developer.string_map("nodeSelectors"),
            default_runtime_class=configuration.string("defaultRuntimeClass"),
            serial_console_log_disabled=configuration.object("virtualMachineOptions").optional_object(
                "disableSerialConsoleLog"
            )
            is not None,
            ovmf_path=configuration.string("ovmfPath"),
            seccomp_profile=_seccomp_profile(configuration),
        )


def _seccomp_profile(configuration: View) -> SeccompProfile | None:
    """The launcher pod's profile: a localhost profile (even an empty path, as KubeVirt passes any path it
    is given) wins over the runtime's default; with neither the pod names none."""
    seccomp = configuration.object("seccompConfiguration")
    custom = seccomp.object("virtualMachineInstanceProfile").object("customProfile")
    localhost = custom.optional_string("localhostProfile")
    if localhost is not None:
        return SeccompProfile(SECCOMP_LOCALHOST, localhost)
    if custom.boolean("runtimeDefaultProfile"):
        return SeccompProfile(SECCOMP_RUNTIME_DEFAULT)
    return None


def _positive(view: View, key: str, default: int) -> int:
    """The integer at ``key``, KubeVirt's ``default`` when unset or not positive."""
    value = view.integer(key)
    return value if value > 0 else default
