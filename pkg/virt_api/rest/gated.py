"""Subresources of features this project does not have yet (memory dump, SEV, the object graph).
With their feature gates off they answer exactly as KubeVirt does; with a gate on they say that the
feature is not implemented here (501) rather than pretending to work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubevirt.virt_api.rest.status import StatusError, bad_request
from kubevirt.virt_config import ClusterConfig

HOTPLUG_DISABLED = "Enable DeclarativeHotplugVolumes or HotplugVolumes feature gate to use this API."
OBJECT_GRAPH_DISABLED = "ObjectGraph feature gate not enabled: Unable to return object graph."
FEATURE_GATE_DISABLED = "'{}' feature gate is not enabled"
HOTPLUG_GATES = ("DeclarativeHotplugVolumes", "HotplugVolumes")


@dataclass(frozen=True)
class GatedRoute:
    method: str
    resource: str  # "virtualmachines" or "virtualmachineinstances"
    subresource: str
    gates: tuple[str, ...]
    disabled_message: str


def _hotplug(method: str, resource: str, subresource: str) -> GatedRoute:
    """A route behind the volume hotplug gates (the memory dump; addvolume/removevolume are in volumes)."""
    return GatedRoute(method, resource, subresource, HOTPLUG_GATES, HOTPLUG_DISABLED)


def _sev(method: str, subresource: str) -> GatedRoute:
    gate = "WorkloadEncryptionSEV"
    return GatedRoute(
        method, "virtualmachineinstances", subresource, (gate,), FEATURE_GATE_DISABLED.format(gate)
    )


GATED_ROUTES = (
    _hotplug("PUT", "virtualmachines", "memorydump"),
    GatedRoute("GET", "virtualmachines", "objectgraph", ("ObjectGraph",), OBJECT_GRAPH_DISABLED),
    GatedRoute("GET", "virtualmachineinstances", "objectgraph", ("ObjectGraph",), OBJECT_GRAPH_DISABLED),
    _sev("GET", "sev/fetchcertchain"),
    _sev("GET", "sev/querylaunchmeasurement"),
    _sev("PUT", "sev/setupsession"),
    _sev("PUT", "sev/injectlaunchsecret"),
)


def refusal(route: GatedRoute, config: Callable[[], ClusterConfig]) -> StatusError:
    """KubeVirt's answer with the gates off; otherwise 501, naming the missing feature."""
    current = config()
    if not any(current.enabled(gate) for gate in route.gates):
        return bad_request(route.disabled_message)
    return StatusError(501, "NotImplemented", f"{route.resource}/{route.subresource} is not implemented")
