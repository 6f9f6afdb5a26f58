"""What every module here shares: the (name, type, help) triple of a family and empty families to fill."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Final, NamedTuple

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric

__all__ = [
    "COUNTER",
    "GAUGE",
    "HISTOGRAM",
    "Description",
    "Sample",
    "described",
    "gauge",
    "non_empty",
]

# The types as KubeVirt's metrics documentation spells them.
GAUGE: Final = "Gauge"
COUNTER: Final = "Counter"
HISTOGRAM: Final = "Histogram"


class Description(NamedTuple):
    """One family as KubeVirt documents it; ``type`` is ``Gauge``, ``Counter`` or ``Histogram``."""

    name: str
    type: str
    help: str


# One series for a family: the family, its label values in the family's order, and the value.
Sample = tuple[Description, tuple[str, ...], float]


def gauge(description: Description, labels: Sequence[str] = ()) -> GaugeMetricFamily:
    """An empty family to fill at scrape time.

    KubeVirt's scrape-time counters (the VM status timestamps) come here too: prometheus_client would
    expose a counter as ``<name>_total``, and the names must stay KubeVirt's, so they go out as gauges.
    """
    return GaugeMetricFamily(description.name, description.help, labels=list(labels))


def described(descriptions: Iterable[Description]) -> list[Metric]:
    """Empty families for ``describe()``: their names let a registry refuse duplicates without scraping."""
    families: list[Metric] = []
    for description in descriptions:
        if description.type == HISTOGRAM:
            families.append(HistogramMetricFamily(description.name, description.help))
        else:
            families.append(gauge(description))
    return families


def non_empty(families: Iterable[Metric]) -> Iterator[Metric]:
    """The families with samples: like KubeVirt's Go collectors, an empty family is not exposed at all."""
    return (family for family in families if family.samples)
