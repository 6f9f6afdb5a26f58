"""Work-queue metrics as KubeVirt registers them for client-go's queues (names, help texts, buckets),
labelled by queue name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from prometheus_client import Counter, Gauge

from kubevirt.client.metrics import GoHistogram, exponential_buckets

__all__ = ["QueueMetrics", "metric_descriptions"]

# KubeVirt's buckets for both durations: 10 ns to 10 s, a decade apart.
_DURATION_BUCKETS: Final = exponential_buckets(10e-9, 10, 10)

_DEPTH_DESCRIPTION: Final = ("kubevirt_workqueue_depth", "Gauge", "Current depth of workqueue")
_ADDS_DESCRIPTION: Final = (
    "kubevirt_workqueue_adds_total",
    "Counter",
    "Total number of adds handled by workqueue",
)
_LATENCY_DESCRIPTION: Final = (
    "kubevirt_workqueue_queue_duration_seconds",
    "Histogram",
    "How long an item stays in workqueue before being requested.",
)
_WORK_DURATION_DESCRIPTION: Final = (
    "kubevirt_workqueue_work_duration_seconds",
    "Histogram",
    "How long in seconds processing an item from workqueue takes.",
)
_RETRIES_DESCRIPTION: Final = (
    "kubevirt_workqueue_retries_total",
    "Counter",
    "Total number of retries handled by workqueue",
)
_LONGEST_DESCRIPTION: Final = (
    "kubevirt_workqueue_longest_running_processor_seconds",
    "Gauge",
    "How many seconds has the longest running processor for workqueue been running.",
)
_UNFINISHED_DESCRIPTION: Final = (
    "kubevirt_workqueue_unfinished_work_seconds",
    "Gauge",
    "How many seconds of work has done that is in progress and hasn't been observed by work_duration. "
    "Large values indicate stuck threads. One can deduce the number of stuck threads by observing "
    "the rate at which this increases.",
)

_LABELS: Final = ["name"]
_DEPTH = Gauge(_DEPTH_DESCRIPTION[0], _DEPTH_DESCRIPTION[2], _LABELS)
_ADDS = Counter(_ADDS_DESCRIPTION[0], _ADDS_DESCRIPTION[2], _LABELS)
_LATENCY = GoHistogram(_LATENCY_DESCRIPTION[0], _LATENCY_DESCRIPTION[2], _LABELS, buckets=_DURATION_BUCKETS)
_WORK_DURATION = GoHistogram(
    _WORK_DURATION_DESCRIPTION[0], _WORK_DURATION_DESCRIPTION[2], _LABELS, buckets=_DURATION_BUCKETS
)
_RETRIES = Counter(_RETRIES_DESCRIPTION[0], _RETRIES_DESCRIPTION[2], _LABELS)
_LONGEST = Gauge(_LONGEST_DESCRIPTION[0], _LONGEST_DESCRIPTION[2], _LABELS)
_UNFINISHED = Gauge(_UNFINISHED_DESCRIPTION[0], _UNFINISHED_DESCRIPTION[2], _LABELS)


def metric_descriptions() -> list[tuple[str, str, str]]:
    """The work-queue families as exposed, as (name, type, help)."""
    return [
        _DEPTH_DESCRIPTION,
        _ADDS_DESCRIPTION,
        _LATENCY_DESCRIPTION,
        _WORK_DURATION_DESCRIPTION,
        _RETRIES_DESCRIPTION,
        _LONGEST_DESCRIPTION,
        _UNFINISHED_DESCRIPTION,
    ]


class QueueMetrics:
    """One queue's series; the in-progress gauges are computed when scraped."""

    def __init__(self, name: str, in_progress: Callable[[], list[float]]) -> None:
        self.depth = _DEPTH.labels(name)
        self.adds = _ADDS.labels(name)
        self.latency = _LATENCY.labels(name)
        self.work_duration = _WORK_DURATION.labels(name)
        self.retries = _RETRIES.labels(name)
        _UNFINISHED.labels(name).set_function(lambda: sum(in_progress()))
        _LONGEST.labels(name).set_function(lambda: max(in_progress(), default=0.0))
