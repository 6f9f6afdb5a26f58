"""``kubevirt_vmi_launcher_memory_overhead_bytes``: the memory overhead virt-controller last computed for
a VMI's launcher pod. As in KubeVirt it is recorded while rendering the pod and never forgotten."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from prometheus_client import Gauge
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from kubevirt.monitoring.virt_controller.families import GAUGE, Description

__all__ = ["DESCRIPTIONS", "LauncherMemoryOverhead", "metric_descriptions"]

MEMORY_OVERHEAD: Final = Description(
    "kubevirt_vmi_launcher_memory_overhead_bytes",
    GAUGE,
    "Estimation of the memory amount required for virt-launcher's infrastructure components "
    "(e.g. libvirt, QEMU).",
)
DESCRIPTIONS: Final = (MEMORY_OVERHEAD,)


def metric_descriptions() -> list[Description]:
    return list(DESCRIPTIONS)


class LauncherMemoryOverhead(Collector):
    """Call :meth:`record` where the launcher pod's resources are worked out."""

    def __init__(self) -> None:
        self._gauge = Gauge(MEMORY_OVERHEAD.name, MEMORY_OVERHEAD.help, ("namespace", "name"), registry=None)

    def record(self, namespace: str, name: str, overhead_bytes: int) -> None:
        """The overhead as a whole number of bytes (``Quantity.value()``)."""
        self._gauge.labels(namespace, name).set(overhead_bytes)

    def describe(self) -> list[Metric]:
        return list(self._gauge.describe())

    def collect(self) -> Iterator[Metric]:
        yield from self._gauge.collect()
