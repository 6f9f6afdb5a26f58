"""KubeVirt's built-in values VMI defaulting uses where the cluster configuration decides nothing.

The cluster's own settings come from :class:`kubevirt.virt_config.ClusterConfig`.
"""

from __future__ import annotations

DEFAULT_MACHINE_TYPES = {"amd64": "q35", "arm64": "virt", "ppc64le": "pseries", "s390x": "s390-ccw-virtio"}
DEFAULT_CPU_MODEL = "host-model"
DEFAULT_NETWORK_INTERFACE = "bridge"
MAX_HOTPLUG_RATIO = 4
MAX_HOTPLUG_VCPUS = 512
NON_ROOT_UID = 107
ROOT_FEATURE_GATE = "Root"
EVICTION_STRATEGY_NONE = "None"
