"""A labelled histogram kept here rather than in prometheus_client's ``Histogram``, whose extra
``_created`` series KubeVirt's Go client never exposes."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from prometheus_client.core import HistogramMetricFamily

from kubevirt.monitoring.virt_controller.families import Description

__all__ = ["PHASE_TRANSITION_TIME_BUCKETS", "LabelledHistogram"]

# KubeVirt's buckets for phase transition times: half a second to an hour.
PHASE_TRANSITION_TIME_BUCKETS: Final = (
    0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 90.0,
    120.0, 180.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0,
)  # fmt: skip


def _bound(value: float) -> str:
    """An upper bound as Go's client writes ``le``: ``1``, not ``1.0``."""
    return str(int(value)) if value.is_integer() else repr(value)


@dataclass
class _Series:
    counts: list[int]  # per bucket, the last one for values above every bound
    total: float = 0.0


class LabelledHistogram:
    """Observations by label values; safe to observe from informer threads while a scrape reads."""

    def __init__(self, description: Description, labels: Sequence[str], buckets: Sequence[float]) -> None:
        self._description = description
        self._labels = list(labels)
        self._bounds = sorted(buckets)
        self._lock = threading.Lock()
        self._series: dict[tuple[str, ...], _Series] = {}

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        index = bisect.bisect_left(self._bounds, value)  # a value on a bound belongs to that bucket
        with self._lock:
            series = self._series.get(labels)
            if series is None:
                series = self._series[labels] = _Series([0] * (len(self._bounds) + 1))
            series.counts[index] += 1
            series.total += value

    def family(self) -> HistogramMetricFamily:
        family = HistogramMetricFamily(self._description.name, self._description.help, labels=self._labels)
        with self._lock:
            snapshot = [(labels, list(s.counts), s.total) for labels, s in self._series.items()]
        for labels, counts, total in snapshot:
            cumulative, buckets = 0, []
            for bound, count in zip([*map(_bound, self._bounds), "+Inf"], counts, strict=True):
                cumulative += count
                buckets.append((bound, float(cumulative)))
            family.add_metric(list(labels), buckets, total)
        return family
