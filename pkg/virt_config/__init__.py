"""The cluster configuration (KubeVirt's ``pkg/virt-config``): one home for every component's settings.

The follower that keeps it equal to the KubeVirt CR is :mod:`kubevirt.virt_config.follower`, imported on
its own: the converter reads the configuration in a short-lived process that needs no logging set-up.
"""

from .config import (
    DEFAULT_EMULATED_MACHINES,
    DEFAULT_INSTALL_NAMESPACE,
    GRADUATED_FEATURE_GATES,
    KUBEVIRT_SECCOMP_PROFILE_GATE,
    KUBEVIRT_SERVICE_ACCOUNT_NAMES,
    ROLLOUT_LIVE_UPDATE,
    ROLLOUT_STAGE,
    ROLLOUT_STRATEGIES,
    ClusterConfig,
    InvalidConfigurationError,
)
from .domain import DomainSettings
from .launcher import LauncherSettings

__all__ = [
    "DEFAULT_EMULATED_MACHINES",
    "DEFAULT_INSTALL_NAMESPACE",
    "GRADUATED_FEATURE_GATES",
    "KUBEVIRT_SECCOMP_PROFILE_GATE",
    "KUBEVIRT_SERVICE_ACCOUNT_NAMES",
    "ROLLOUT_LIVE_UPDATE",
    "ROLLOUT_STAGE",
    "ROLLOUT_STRATEGIES",
    "ClusterConfig",
    "DomainSettings",
    "InvalidConfigurationError",
    "LauncherSettings",
]
