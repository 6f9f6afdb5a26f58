"""Whether this virt-controller replica leads, and whether it is ready to take the lead. Both gauges
exist from the start, at zero, as KubeVirt registers them when the process sets up its metrics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from prometheus_client import Gauge
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from kubevirt.monitoring.virt_controller.families import GAUGE, Description

__all__ = ["DESCRIPTIONS", "ComponentStatus", "metric_descriptions"]

LEADING: Final = Description(
    "kubevirt_virt_controller_leading_status", GAUGE, "Indication for an operating virt-controller."
)
READY: Final = Description(
    "kubevirt_virt_controller_ready_status",
    GAUGE,
    "Indication for a virt-controller that is ready to take the lead.",
)
DESCRIPTIONS: Final = (LEADING, READY)


def metric_descriptions() -> list[Description]:
    return list(DESCRIPTIONS)


class ComponentStatus(Collector):
    """KubeVirt sets ready once leader election starts (unready if it ever returns), and leading once
    the leader's controllers run and its caches have synced; leading is never cleared, the process
    exits when it loses the lead."""

    def __init__(self) -> None:
        self._leading = Gauge(LEADING.name, LEADING.help, registry=None)
        self._ready = Gauge(READY.name, READY.help, registry=None)

    def set_leading(self) -> None:
        self._leading.set(1)

    def set_ready(self, ready: bool = True) -> None:
        self._ready.set(1 if ready else 0)

    def describe(self) -> list[Metric]:
        return [*self._leading.describe(), *self._ready.describe()]

    def collect(self) -> Iterator[Metric]:
        yield from self._leading.collect()
        yield from self._ready.collect()
