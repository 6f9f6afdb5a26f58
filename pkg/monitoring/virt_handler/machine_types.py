"""``kubevirt_node_deprecated_machine_types``: one sample set to 1 per machine type this node's libvirt
marks deprecated, labelled with the machine type and the node (KubeVirt's names and help).

virt-handler learns the machine types once, from the host capabilities its node labeller reads
(:attr:`kubevirt.virt_handler.node_labeller.labeller.NodeLabeller.deprecated_machine_types`); a node
without deprecated machine types exposes no sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from kubevirt.monitoring.virt_handler.domainstats import MetricDescription

__all__ = ["DeprecatedMachineTypesCollector", "metric_descriptions"]

_NAME = "kubevirt_node_deprecated_machine_types"
_HELP = (
    "List of deprecated machine types based on the capabilities of individual nodes, as detected by "
    "virt-handler."
)
_LABELS = ["machine_type", "node"]


def metric_descriptions() -> list[MetricDescription]:
    return [(_NAME, "Gauge", _HELP)]


class DeprecatedMachineTypesCollector:
    """A prometheus_client collector of the node's deprecated ``machine_types`` (names, repeats ignored)."""

    def __init__(self, *, node: str, machine_types: Iterable[str] = ()) -> None:
        self._node = node
        self._machine_types = tuple(dict.fromkeys(name for name in machine_types if name))

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily(_NAME, _HELP, labels=_LABELS)]

    def collect(self) -> Iterator[Metric]:
        if not self._machine_types:
            return  # like KubeVirt's gauge vector before any set: no family at all
        family = GaugeMetricFamily(_NAME, _HELP, labels=_LABELS)
        for machine_type in self._machine_types:
            family.add_metric([machine_type, self._node], 1.0)
        yield family
