"""Work-queue metrics under client-go's names with KubeVirt's ``kubevirt_`` prefix, labelled by queue name."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import Counter, Gauge, Histogram

__all__ = ["QueueMetrics"]

# client-go's buckets: 10 ns to 10 s, a decade apart.
_DURATION_BUCKETS = tuple(10e-9 * 10**power for power in range(10))

_DEPTH = Gauge("kubevirt_workqueue_depth", "Keys waiting in the work queue", ["name"])
_ADDS = Counter("kubevirt_workqueue_adds_total", "Keys added to the work queue", ["name"])
_LATENCY = Histogram(
    "kubevirt_workqueue_queue_duration_seconds",
    "Seconds a key waited in the work queue before a worker took it",
    ["name"],
    buckets=_DURATION_BUCKETS,
)
_WORK_DURATION = Histogram(
    "kubevirt_workqueue_work_duration_seconds",
    "Seconds a worker spent on one key",
    ["name"],
    buckets=_DURATION_BUCKETS,
)
_UNFINISHED = Gauge(
    "kubevirt_workqueue_unfinished_work_seconds",
    "Seconds spent so far on keys still being worked on (grows when workers are stuck)",
    ["name"],
)
_LONGEST = Gauge(
    "kubevirt_workqueue_longest_running_processor_seconds",
    "Seconds the longest-running worker has spent on its current key",
    ["name"],
)
_RETRIES = Counter(
    "kubevirt_workqueue_retries_total", "Keys added back to the work queue after a delay", ["name"]
)


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
