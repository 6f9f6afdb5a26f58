"""The controller runner: success forgets, failure retries with backoff, RequeueAfter delays."""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog.testing

from kubevirt.client.errors import AlreadyExistsError, ConflictError, InvalidError, is_stale_write
from kubevirt.controller import Controller, RateLimitingQueue, RequeueAfter


class ScriptedReconciler:
    def __init__(self, outcomes: dict[str, list[Exception | None]]) -> None:
        self.outcomes = outcomes
        self.calls: list[str] = []

    def reconcile(self, key: str) -> None:
        self.calls.append(key)
        outcome = self.outcomes.get(key, [None]).pop(0) if self.outcomes.get(key) else None
        if outcome is not None:
            raise outcome


def test_a_failing_key_is_retried_with_backoff_then_forgotten_on_success() -> None:
    queue = RateLimitingQueue("test-runner-retry")
    reconciler = ScriptedReconciler({"ns/a": [RuntimeError("conflict"), RuntimeError("again")]})
    controller = Controller("test", queue, reconciler)
    queue.add("ns/a")
    assert controller.process_next()
    assert queue.num_requeues("ns/a") == 1
    assert controller.process_next()  # back after 5 ms
    assert queue.num_requeues("ns/a") == 2
    assert controller.process_next()
    assert queue.num_requeues("ns/a") == 0
    assert reconciler.calls == ["ns/a"] * 3


def test_requeue_after_delays_without_counting_a_failure() -> None:
    queue = RateLimitingQueue("test-runner-requeue")
    reconciler = ScriptedReconciler({"ns/a": [RequeueAfter(0.02)]})
    controller = Controller("test", queue, reconciler)
    queue.add("ns/a")
    assert controller.process_next()
    assert queue.num_requeues("ns/a") == 0
    assert len(queue) == 0
    assert controller.process_next()
    assert reconciler.calls == ["ns/a", "ns/a"]


def test_run_processes_keys_on_several_workers_and_stops(eventually: Callable[..., None]) -> None:
    queue = RateLimitingQueue("test-runner-run")
    reconciler = ScriptedReconciler({})
    controller = Controller("test", queue, reconciler, workers=3)
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(stop,))
    runner.start()
    for index in range(20):
        queue.add(f"ns/k{index}")
    eventually(lambda: len(reconciler.calls) == 20)
    stop.set()
    runner.join(timeout=5)
    assert not runner.is_alive()
    assert queue.get() is None


def test_a_stale_write_is_retried_at_info_level_and_other_failures_at_error() -> None:
    stale_patch = InvalidError(
        422, "Invalid", "the server rejected our request due to an error in our request"
    )
    failures: list[Exception] = [
        ConflictError(409, "Conflict", "modified"),
        stale_patch,
        RuntimeError("boom"),
    ]
    queue = RateLimitingQueue("test-runner-levels")
    controller = Controller("test", queue, ScriptedReconciler({"ns/a": list(failures)}))
    queue.add("ns/a")
    with structlog.testing.capture_logs() as logs:
        for _ in failures:
            assert controller.process_next()
    levels = [entry["log_level"] for entry in logs if entry["event"] == "reconcile failed, retrying"]
    assert levels == ["info", "info", "error"]
    assert queue.num_requeues("ns/a") == 3  # all three are retried with backoff


def test_only_stale_versions_count_as_stale_writes() -> None:
    assert is_stale_write(ConflictError(409, "Conflict", "the object has been modified"))
    assert is_stale_write(InvalidError(422, "Invalid", "the server rejected our request due to an error"))
    invalid = 'VirtualMachineInstance.kubevirt.io "x" is invalid: spec.domain: Required value'
    assert not is_stale_write(InvalidError(422, "Invalid", invalid))
    assert not is_stale_write(AlreadyExistsError(409, "AlreadyExists", "exists"))
    assert not is_stale_write(RuntimeError("the server rejected our request"))
