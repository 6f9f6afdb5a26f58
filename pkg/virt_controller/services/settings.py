"""Cluster-wide settings of the KubeVirt CR that shape the virt-launcher pod.

:class:`~kubevirt.admission.config.ClusterConfig` does not carry these (yet); until it does, they live here
with KubeVirt's defaults, so that a caller with a KubeVirt CR can set them and one without gets KubeVirt's
behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_CPU_ALLOCATION_RATIO = 10
DEFAULT_MEMORY_OVERCOMMIT_PERCENT = 100
DEFAULT_LAUNCHER_LOG_VERBOSITY = 2
DEFAULT_IMAGE_PULL_POLICY = "IfNotPresent"
DEFAULT_DISK_VERIFICATION_MEMORY_LIMIT_BYTES = 2097152000
DEFAULT_OVMF_PATHS: Mapping[str, str] = {"arm64": "/usr/share/AAVMF", "s390x": ""}
DEFAULT_OVMF_PATH = "/usr/share/OVMF"


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

    def ovmf_path_for(self, architecture: str) -> str:
        if self.ovmf_path:
            return self.ovmf_path
        return DEFAULT_OVMF_PATHS.get(architecture, DEFAULT_OVMF_PATH)
