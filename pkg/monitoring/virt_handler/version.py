"""``kubevirt_info``: virt-handler's build, one sample set to 1 (KubeVirt's label names; the runtime's
version stands where KubeVirt names its Go version)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from kubevirt.version import version_info

__all__ = ["VersionCollector", "metric_descriptions"]

_NAME = "kubevirt_info"
_HELP = "Version information."


class VersionCollector:
    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily(_NAME, _HELP, labels=["goversion", "kubeversion"])]

    def collect(self) -> Iterator[Metric]:
        info = version_info()
        family = GaugeMetricFamily(_NAME, _HELP, labels=["goversion", "kubeversion"])
        family.add_metric([info["goVersion"], info["gitVersion"]], 1.0)
        yield family


def metric_descriptions() -> list[tuple[str, str, str]]:
    return [(_NAME, "Gauge", _HELP)]
