"""The cluster configuration (KubeVirt's ``pkg/virt-config``): one home for every component's settings."""

from .config import (
    DEFAULT_EMULATED_MACHINES,
    DEFAULT_INSTALL_NAMESPACE,
    GRADUATED_FEATURE_GATES,
    KUBEVIRT_SERVICE_ACCOUNT_NAMES,
    ROLLOUT_LIVE_UPDATE,
    ROLLOUT_STAGE,
    ROLLOUT_STRATEGIES,
    ClusterConfig,
    InvalidConfigurationError,
)
from .follower import ConfigFollower, KubeVirtLister

__all__ = [
    "DEFAULT_EMULATED_MACHINES",
    "DEFAULT_INSTALL_NAMESPACE",
    "GRADUATED_FEATURE_GATES",
    "KUBEVIRT_SERVICE_ACCOUNT_NAMES",
    "ROLLOUT_LIVE_UPDATE",
    "ROLLOUT_STAGE",
    "ROLLOUT_STRATEGIES",
    "ClusterConfig",
    "ConfigFollower",
    "InvalidConfigurationError",
    "KubeVirtLister",
]
