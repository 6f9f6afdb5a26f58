"""The cluster settings VMI defaulting depends on, and KubeVirt's built-in values for the rest."""

from __future__ import annotations

from typing import Protocol

DEFAULT_MACHINE_TYPES = {"amd64": "q35", "arm64": "virt", "ppc64le": "pseries", "s390x": "s390-ccw-virtio"}
DEFAULT_CPU_MODEL = "host-model"
DEFAULT_NETWORK_INTERFACE = "bridge"
MAX_HOTPLUG_RATIO = 4
MAX_HOTPLUG_VCPUS = 512
NON_ROOT_UID = 107
ROOT_FEATURE_GATE = "Root"
EVICTION_STRATEGY_NONE = "None"


class ClusterSettings(Protocol):
    """What a cluster configuration must answer for defaulting (``kubevirt.admission.config.ClusterConfig``
    does). Settings not listed here (machine types, CPU model and request, default interface, hotplug
    ratio) take KubeVirt's built-in defaults."""

    @property
    def feature_gates(self) -> frozenset[str]: ...

    @property
    def rollout_strategy(self) -> str: ...

    @property
    def eviction_strategy(self) -> str | None: ...

    @property
    def default_architecture(self) -> str: ...

    @property
    def permit_bridge_interface_on_pod_network(self) -> bool: ...
