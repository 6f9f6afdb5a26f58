"""The work queue: dedupe, one worker per key, delays, backoff reset and shut-down."""

from __future__ import annotations

import threading
import time
from typing import Any

from prometheus_client import REGISTRY, generate_latest

from kubevirt.controller import RateLimitingQueue
from kubevirt.controller import metrics as queue_metrics
from kubevirt.controller.ratelimit import ItemExponentialFailureRateLimiter


def test_a_key_added_twice_waits_once() -> None:
    queue = RateLimitingQueue("test-dedupe")
    queue.add("ns/a")
    queue.add("ns/b")
    queue.add("ns/a")
    assert len(queue) == 2
    assert queue.get() == "ns/a"
    assert queue.get() == "ns/b"
    assert len(queue) == 0


def test_a_key_added_while_processing_is_queued_only_when_done() -> None:
    queue = RateLimitingQueue("test-processing")
    queue.add("ns/a")
    assert queue.get() == "ns/a"
    queue.add("ns/a")
    queue.add("ns/a")
    assert len(queue) == 0  # held back: a second worker must not take it now
    queue.done("ns/a")
    assert len(queue) == 1
    assert queue.get() == "ns/a"
    queue.done("ns/a")
    assert len(queue) == 0


def test_no_two_workers_process_one_key_at_once() -> None:
    queue = RateLimitingQueue("test-concurrency")
    active: set[str] = set()
    overlaps: list[str] = []
    processed: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        while (key := queue.get()) is not None:
            with lock:
                if key in active:
                    overlaps.append(key)
                active.add(key)
            time.sleep(0.001)
            with lock:
                active.discard(key)
                processed.append(key)
            queue.done(key)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for round_ in range(50):
        for key in ("k1", "k2", "k3"):
            queue.add(key)
        if round_ % 10 == 0:
            time.sleep(0.002)
    time.sleep(0.05)
    queue.shut_down()
    for thread in threads:
        thread.join(timeout=5)
    assert overlaps == []
    assert {"k1", "k2", "k3"} <= set(processed)


def test_add_after_waits_until_due_and_earliest_time_wins(clock: Any) -> None:
    queue = RateLimitingQueue("test-delay", clock=clock)
    queue.add_after("ns/a", 10)
    queue.add_after("ns/a", 5)
    queue.add_after("ns/a", 20)
    assert len(queue) == 0
    clock.now += 4.9
    assert len(queue) == 0
    clock.now += 0.2
    assert len(queue) == 1
    assert queue.get() == "ns/a"
    queue.done("ns/a")
    clock.now += 30
    assert len(queue) == 0  # the superseded later times do not add it again


def test_a_blocked_get_wakes_when_a_delayed_key_is_due() -> None:
    queue = RateLimitingQueue("test-delay-real")
    started = time.monotonic()
    queue.add_after("ns/a", 0.05)
    assert queue.get() == "ns/a"
    assert time.monotonic() - started >= 0.045


def test_per_key_backoff_doubles_from_5ms_to_1000s_and_forget_resets() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [limiter.when("a") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[17] == 0.005 * 2**17  # 655.36 s
    assert delays[18:] == [1000.0, 1000.0]
    assert limiter.num_requeues("a") == 20
    assert limiter.when("b") == 0.005  # per key
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.005


def test_the_default_limiter_backs_off_per_key_and_forget_resets(clock: Any) -> None:
    queue = RateLimitingQueue("test-rate-limited", clock=clock)
    for _ in range(3):
        queue.add_rate_limited("ns/a")
    assert queue.num_requeues("ns/a") == 3
    clock.now += 0.004
    assert len(queue) == 0
    clock.now += 0.002
    assert queue.get() == "ns/a"  # the earliest (5 ms) of the three delays
    queue.done("ns/a")
    queue.forget("ns/a")
    assert queue.num_requeues("ns/a") == 0


def test_the_overall_bucket_allows_a_burst_of_100_then_10_per_second(clock: Any) -> None:
    queue = RateLimitingQueue("test-bucket", clock=clock)
    for index in range(100):
        queue.add_rate_limited(f"k{index}")
    clock.now += 0.005
    assert len(queue) == 100
    queue.add_rate_limited("k100")  # the bucket is empty: it waits a token (0.1 s at 10 qps)
    clock.now += 0.09
    assert len(queue) == 100
    clock.now += 0.02
    assert len(queue) == 101


def test_shut_down_drains_then_get_returns_none_and_adds_are_ignored(clock: Any) -> None:
    queue = RateLimitingQueue("test-shutdown", clock=clock)
    queue.add("ns/a")
    queue.add_after("ns/b", 1)
    queue.shut_down()
    queue.add("ns/c")
    clock.now += 2
    assert queue.get() == "ns/a"
    assert queue.get() is None
    assert queue.shutting_down


def test_shut_down_wakes_blocked_workers() -> None:
    queue = RateLimitingQueue("test-shutdown-wake")
    results: list[str | None] = []
    worker = threading.Thread(target=lambda: results.append(queue.get()))
    worker.start()
    time.sleep(0.02)
    queue.shut_down()
    worker.join(timeout=2)
    assert results == [None]


def test_metrics_use_kubevirts_workqueue_names() -> None:
    queue = RateLimitingQueue("test-metrics")
    queue.add("a")
    queue.add("b")
    queue.add_after("c", 0)
    labels = {"name": "test-metrics"}
    assert REGISTRY.get_sample_value("kubevirt_workqueue_depth", labels) == 3
    assert REGISTRY.get_sample_value("kubevirt_workqueue_adds_total", labels) == 3
    assert REGISTRY.get_sample_value("kubevirt_workqueue_retries_total", labels) == 1
    key = queue.get()
    assert key == "a"
    assert REGISTRY.get_sample_value("kubevirt_workqueue_depth", labels) == 2
    assert REGISTRY.get_sample_value("kubevirt_workqueue_queue_duration_seconds_count", labels) == 1
    time.sleep(0.01)
    assert REGISTRY.get_sample_value("kubevirt_workqueue_longest_running_processor_seconds", labels) >= 0.01
    assert REGISTRY.get_sample_value("kubevirt_workqueue_unfinished_work_seconds", labels) >= 0.01
    queue.done(key)
    assert REGISTRY.get_sample_value("kubevirt_workqueue_work_duration_seconds_count", labels) == 1
    assert REGISTRY.get_sample_value("kubevirt_workqueue_longest_running_processor_seconds", labels) == 0


def test_the_workqueue_families_are_exposed_with_kubevirts_help_buckets_and_no_created_series() -> None:
    queue = RateLimitingQueue("test-exposition")
    queue.add("a")
    queue.done(queue.get() or "")
    assert queue_metrics.metric_descriptions() == [
        ("kubevirt_workqueue_depth", "Gauge", "Current depth of workqueue"),
        ("kubevirt_workqueue_adds_total", "Counter", "Total number of adds handled by workqueue"),
        (
            "kubevirt_workqueue_queue_duration_seconds",
            "Histogram",
            "How long an item stays in workqueue before being requested.",
        ),
        (
            "kubevirt_workqueue_work_duration_seconds",
            "Histogram",
            "How long in seconds processing an item from workqueue takes.",
        ),
        ("kubevirt_workqueue_retries_total", "Counter", "Total number of retries handled by workqueue"),
        (
            "kubevirt_workqueue_longest_running_processor_seconds",
            "Gauge",
            "How many seconds has the longest running processor for workqueue been running.",
        ),
        (
            "kubevirt_workqueue_unfinished_work_seconds",
            "Gauge",
            "How many seconds of work has done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
            "threads by observing the rate at which this increases.",
        ),
    ]
    text = generate_latest(REGISTRY).decode()
    for name, kind, help_text in queue_metrics.metric_descriptions():
        assert f"# HELP {name} {help_text}\n# TYPE {name} {kind.lower()}\n" in text
    assert "kubevirt_workqueue_adds_created" not in text
    assert "kubevirt_workqueue_queue_duration_seconds_created" not in text
    for family in ("queue_duration", "work_duration"):
        bounds = [
            line.split('le="')[1].split('"')[0]
            for line in text.splitlines()
            if line.startswith(f"kubevirt_workqueue_{family}_seconds_bucket") and "test-exposition" in line
        ]
        # Go's exponential bounds, multiplied in turn, and written as Go writes them.
        assert bounds == [
            *("1e-08", "1e-07", "1e-06", "9.999999999999999e-06", "9.999999999999999e-05"),
            *("0.001", "0.01", "0.1", "1", "10", "+Inf"),
        ]
