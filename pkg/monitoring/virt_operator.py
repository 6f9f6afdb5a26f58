"""virt-operator's own metrics: whether this replica leads and is ready to, and (on the leader only) whether
the cluster's configuration turns software emulation on.

As in KubeVirt, the leading and ready gauges are registered when the operator starts (:func:`register`)
and the emulation gauge only once the replica leads (:func:`register_leader_metrics`); its value is kept
up to date on every replica all along. ``kubevirt_info`` is virt-handler's, not the operator's.
"""

from __future__ import annotations

import threading
import weakref

from prometheus_client import REGISTRY, CollectorRegistry, Gauge
from prometheus_client.registry import Collector

__all__ = [
    "metric_descriptions",
    "register",
    "register_leader_metrics",
    "set_emulation",
    "set_leading",
    "set_ready",
]

# (name, type, help) as KubeVirt's metrics documentation lists them.
MetricDescription = tuple[str, str, str]

_LEADING_SPEC = ("kubevirt_virt_operator_leading_status", "Indication for an operating virt-operator.")
_READY_SPEC = (
    "kubevirt_virt_operator_ready_status",
    "Indication for a virt-operator that is ready to take the lead.",
)
_EMULATION_SPEC = (
    "kubevirt_configuration_emulation_enabled",
    "Indicates whether the Software Emulation is enabled in the configuration.",
)

_LEADING = Gauge(*_LEADING_SPEC, registry=None)
_READY = Gauge(*_READY_SPEC, registry=None)
_EMULATION = Gauge(*_EMULATION_SPEC, registry=None)

_OPERATOR: tuple[Collector, ...] = (_LEADING, _READY)
_LEADER: tuple[Collector, ...] = (_EMULATION,)
_registered: dict[str, weakref.WeakSet[CollectorRegistry]] = {
    "operator": weakref.WeakSet(),
    "leader": weakref.WeakSet(),
}
_lock = threading.Lock()


def _register(group: str, collectors: tuple[Collector, ...], registry: CollectorRegistry) -> None:
    with _lock:
        if registry in _registered[group]:
            return
        for collector in collectors:
            registry.register(collector)
        _registered[group].add(registry)


def register(registry: CollectorRegistry = REGISTRY) -> None:
    """Adds the leading and ready gauges to ``registry`` (once; later calls do nothing)."""
    _register("operator", _OPERATOR, registry)


def register_leader_metrics(registry: CollectorRegistry = REGISTRY) -> None:
    """Adds the gauges only the leader exposes to ``registry`` (once; later calls do nothing)."""
    _register("leader", _LEADER, registry)


def set_leading(leading: bool) -> None:
    _LEADING.set(1 if leading else 0)


def set_ready(ready: bool) -> None:
    _READY.set(1 if ready else 0)


def set_emulation(enabled: bool) -> None:
    """``developerConfiguration.useEmulation`` of the configuration in force."""
    _EMULATION.set(1 if enabled else 0)


def metric_descriptions() -> list[MetricDescription]:
    """Every family virt-operator exposes from this module, as (name, type, help)."""
    return [(name, "Gauge", help_text) for name, help_text in (_LEADING_SPEC, _READY_SPEC, _EMULATION_SPEC)]
