"""The migration series: a migrating VMI's launcher polled from the first sight of its migration, the last
answers kept and exposed with their timestamps, and the VMI dropped after its migration ends."""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from kubevirt.monitoring.virt_handler.migrationstats import (
    BUFFER_SIZE,
    POLLING_INTERVAL,
    MigrationStatsCollector,
    is_migrating,
    metric_descriptions,
)
from kubevirt_testing.launcher_socket import launcher_socket

NODE = "node-a"
KEY = "ns/vm-1"
LABELS = {"namespace": "ns", "name": "vm-1", "node": NODE}
TOTAL = "kubevirt_vmi_migration_data_total_bytes"
REMAINING = "kubevirt_vmi_migration_data_remaining_bytes"
PROCESSED = "kubevirt_vmi_migration_data_processed_bytes"
DIRTY = "kubevirt_vmi_migration_dirty_memory_rate_bytes"
TRANSFER = "kubevirt_vmi_migration_disk_transfer_rate_bytes"


def vmi(migration: dict[str, Any] | None = None, *, node: str = NODE) -> dict[str, Any]:
    status: dict[str, Any] = {"nodeName": node, "activePods": {"pod-1": NODE, "pod-2": "node-b"}}
    if migration is not None:
        status["migrationState"] = migration
    return {"metadata": {"name": "vm-1", "namespace": "ns", "labels": {"app": "x"}}, "status": status}


def job(remaining: int, *, dirty: bool = True) -> dict[str, Any]:
    return {
        "DataTotalSet": True,
        "DataTotal": 4000,
        "DataProcessedSet": True,
        "DataProcessed": 4000 - remaining,
        "MemoryBpsSet": True,
        "MemoryBps": 100,
        "DataRemainingSet": True,
        "DataRemaining": remaining,
        "MemDirtyRateSet": dirty,
        "MemDirtyRate": 8192 if dirty else 0,
    }


class FakeLauncher:
    """Answers GetDomainStats with the next job info of ``answers`` (the last one once they run out)."""

    def __init__(self, *answers: dict[str, Any] | None) -> None:
        self.answers = list(answers)
        self.calls = 0
        self.gate: threading.Event | None = None  # set: answers wait for it
        self.error: Exception | None = None

    def get_domain_stats(self) -> dict[str, Any] | None:
        self.calls += 1
        if self.gate is not None:
            self.gate.wait(10)
        if self.error is not None:
            raise self.error
        info = self.answers[min(self.calls, len(self.answers)) - 1]
        return {"Name": "ns_vm-1", "MigrateDomainJobInfo": info}

    def get_filesystems(self) -> list[Any]:
        return []

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pods(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    with contextlib.ExitStack() as stack:
        socket = stack.enter_context(launcher_socket(tmp_path, "pod-1"))
        stack.enter_context(launcher_socket(tmp_path, "pod-2"))  # the target's pod, on another node
        yield tmp_path, socket


class Harness:
    def __init__(self, pods_dir: Path, socket: Path, launcher: FakeLauncher, **kwargs: Any) -> None:
        self.store: dict[str, dict[str, Any]] = {}
        self.clock = Clock()
        self.wall = 1_700_000_000.0
        self.launcher = launcher
        self.dialled: list[Path] = []

        def connect(path: Path) -> FakeLauncher:
            self.dialled.append(path)
            assert path == socket
            return launcher

        self.collector = MigrationStatsCollector(
            get_vmi=self.store.get,
            node=NODE,
            pods_dir=pods_dir,
            connect=connect,
            clock=self.clock,
            wall_clock=lambda: self.wall,
            **kwargs,
        )

    def set_vmi(self, obj: dict[str, Any] | None) -> None:
        if obj is None:
            self.store.pop(KEY, None)
        else:
            self.store[KEY] = obj
            self.collector.observe(obj)

    def poll(self, calls: int | None = None) -> None:
        """One pass of the polling thread, waiting until the launcher was asked ``calls`` times."""
        self.collector.poll_due()
        wait_for(lambda: calls is None or self.launcher.calls >= calls)
        wait_for(lambda: not any(m.in_flight for m in self.collector._migrations.values()))

    def scrape(self) -> CollectorRegistry:
        registry = CollectorRegistry()
        registry.register(self.collector)
        return registry

    def samples(self) -> dict[str, list[tuple[dict[str, str], float, float | None]]]:
        out: dict[str, list[tuple[dict[str, str], float, float | None]]] = {}
        for family in self.collector.collect():
            for sample in family.samples:
                ts = float(sample.timestamp) if sample.timestamp is not None else None
                out.setdefault(sample.name, []).append((sample.labels, sample.value, ts))
        return out


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.fixture
def harness(pods: tuple[Path, Path]) -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(launcher: FakeLauncher, **kwargs: Any) -> Harness:
        made.append(Harness(*pods, launcher, **kwargs))
        return made[-1]

    yield make
    for h in made:
        if h.launcher.gate is not None:
            h.launcher.gate.set()
        h.collector.close()


def test_kubevirts_names_types_and_help() -> None:
    assert metric_descriptions() == [
        (TOTAL, "Counter", "The total Guest OS data to be migrated to the new VM."),
        (REMAINING, "Gauge", "The remaining guest OS data to be migrated to the new VM."),
        (PROCESSED, "Gauge", "The total Guest OS data processed and migrated to the new VM."),
        (DIRTY, "Gauge", "The rate of memory being dirty in the Guest OS."),
        (TRANSFER, "Gauge", "The rate at which the memory is being transferred."),
    ]
    assert (POLLING_INTERVAL, BUFFER_SIZE) == (5.0, 10)


@pytest.mark.parametrize(
    ("migration", "expected"),
    [
        (None, False),
        ({}, True),
        ({"migrationUid": "m1", "completed": False}, True),
        ({"migrationUid": "m1", "completed": True}, False),
        ({"migrationUid": "m1", "completed": True, "failed": True}, False),
    ],
)
def test_a_vmi_migrates_while_its_migration_state_is_set_and_not_completed(
    migration: dict[str, Any] | None, expected: bool
) -> None:
    assert is_migrating(vmi(migration)) is expected


def test_a_migrating_vmi_is_polled_at_once_and_its_job_info_exposed_with_timestamps(
    harness: Callable[..., Harness],
) -> None:
    h = harness(FakeLauncher(job(3000, dirty=False)))
    h.set_vmi(vmi({"migrationUid": "m1"}))
    h.poll(calls=1)

    samples = h.samples()
    assert samples[TOTAL] == [(LABELS, 4000.0, h.wall)]
    assert samples[REMAINING] == [(LABELS, 3000.0, h.wall)]
    assert samples[PROCESSED] == [(LABELS, 1000.0, h.wall)]
    assert samples[TRANSFER] == [(LABELS, 100.0, h.wall)]
    assert DIRTY not in samples  # libvirt did not report it: no sample, not a zero
    assert h.dialled  # the source's launcher (pod-1 on this node), not the target's


def test_the_exposition_keeps_kubevirts_names_and_carries_millisecond_timestamps(
    harness: Callable[..., Harness],
) -> None:
    h = harness(FakeLauncher(job(3000)))
    h.set_vmi(vmi({"migrationUid": "m1"}))
    h.poll(calls=1)
    text = generate_latest(h.scrape()).decode()
    assert "# TYPE kubevirt_vmi_migration_data_total_bytes gauge" in text
    assert "# HELP kubevirt_vmi_migration_dirty_memory_rate_bytes The rate of memory being dirty" in text
    line = 'kubevirt_vmi_migration_data_remaining_bytes{name="vm-1",namespace="ns",node="node-a"} 3000.0'
    assert f"{line} 1700000000000\n" in text
    assert "_total_bytes_total" not in text


def test_polls_follow_the_interval_and_the_last_answers_are_kept(harness: Callable[..., Harness]) -> None:
    h = harness(FakeLauncher(job(3000), job(2000), job(1000), job(500)), buffer_size=3)
    h.set_vmi(vmi({"migrationUid": "m1"}))
    h.poll(calls=1)
    h.clock.now += POLLING_INTERVAL - 1
    h.poll()
    assert h.launcher.calls == 1  # not due yet
    for calls in (2, 3, 4):
        h.clock.now += POLLING_INTERVAL
        h.wall += POLLING_INTERVAL
        h.poll(calls=calls)

    remaining = [(value, ts) for _, value, ts in h.samples()[REMAINING]]
    assert remaining == [(2000.0, 1_700_000_005.0), (1000.0, 1_700_000_010.0), (500.0, 1_700_000_015.0)]
    # A scrape does not use them up: the next one shows them again.
    assert [(value, ts) for _, value, ts in h.samples()[REMAINING]] == remaining


def test_the_node_label_is_the_vmis_node_when_its_migration_was_first_seen(
    harness: Callable[..., Harness],
) -> None:
    h = harness(FakeLauncher(job(3000)))
    h.set_vmi(vmi({"migrationUid": "m1"}))
    h.poll(calls=1)
    moved = vmi({"migrationUid": "m1", "targetNode": "node-b"}, node="node-b")
    h.set_vmi(moved)  # still migrating: the same poller goes on
    h.clock.now += POLLING_INTERVAL
    h.poll(calls=2)
    assert {labels["node"] for labels, _, _ in h.samples()[TOTAL]} == {NODE}


@pytest.mark.parametrize("end", ["completed", "gone"])
def test_after_the_migration_polling_stops_and_one_last_scrape_shows_it(
    harness: Callable[..., Harness], end: str
) -> None:
    h = harness(FakeLauncher(job(3000)))
    h.set_vmi(vmi({"migrationUid": "m1"}))
    h.poll(calls=1)
    if end == "completed":
        h.set_vmi(vmi({"migrationUid": "m1", "completed": True}))
    else:
        h.set_vmi(None)
    h.clock.now += POLLING_INTERVAL
    h.poll()
    assert h.launcher.calls == 1  # the ended migration's launcher is not asked again

    assert h.samples()[REMAINING] == [(LABELS, 3000.0, h.wall)]
    assert h.samples() == {}


def test_a_vmi_without_a_migration_is_never_polled(harness: Callable[..., Harness]) -> None:
    h = harness(FakeLauncher(job(3000)))
    h.set_vmi(vmi())
    h.set_vmi(vmi({"migrationUid": "m1", "completed": True}))
    h.poll()
    assert h.launcher.calls == 0
    assert h.samples() == {}


def test_an_unset_job_info_or_a_vanishing_domain_gives_no_sample(harness: Callable[..., Harness]) -> None:
    unset = {key: False if key.endswith("Set") else 0 for key in job(0)}
    h = harness(FakeLauncher(unset, None))
    h.set_vmi(vmi({"migrationUid": "m1"}))
    h.poll(calls=1)
    h.clock.now += POLLING_INTERVAL
    h.poll(calls=2)
    assert h.samples() == {}


def test_a_failing_launcher_is_asked_again_at_the_next_poll(harness: Callable[..., Harness]) -> None:
    launcher = FakeLauncher(job(3000))
    launcher.error = ConnectionError("launcher gone")
    h = harness(launcher)
    h.set_vmi(vmi({"migrationUid": "m1"}))
    h.poll(calls=1)
    assert h.samples() == {}
    launcher.error = None
    h.clock.now += POLLING_INTERVAL
    h.poll(calls=2)
    assert h.samples()[REMAINING] == [(LABELS, 3000.0, h.wall)]


def test_a_hung_launcher_is_not_asked_twice_and_its_late_answer_is_dropped(
    harness: Callable[..., Harness],
) -> None:
    launcher = FakeLauncher(job(3000))
    launcher.gate = threading.Event()
    h = harness(launcher, timeout=10.0)
    h.set_vmi(vmi({"migrationUid": "m1"}))
    h.collector.poll_due()
    wait_for(lambda: launcher.calls == 1)
    h.clock.now += 11.0  # due again, and past the collection timeout
    h.collector.poll_due()  # the first request is still in flight: skipped
    launcher.gate.set()
    wait_for(lambda: not h.collector._migrations[KEY].in_flight)
    assert launcher.calls == 1
    assert h.samples() == {}


def test_a_new_migration_before_any_scrape_is_polled_again(harness: Callable[..., Harness]) -> None:
    h = harness(FakeLauncher(job(3000), job(2000)))
    h.set_vmi(vmi({"migrationUid": "m1"}))
    h.poll(calls=1)
    h.store[KEY] = vmi({"migrationUid": "m1", "completed": True})
    h.clock.now += POLLING_INTERVAL
    h.poll()  # polling of m1 stops
    h.set_vmi(vmi({"migrationUid": "m2"}))
    h.poll(calls=2)
    assert [value for _, value, _ in h.samples()[REMAINING]] == [3000.0, 2000.0]


def test_the_background_thread_polls_without_being_driven(pods: tuple[Path, Path]) -> None:
    launcher = FakeLauncher(job(3000))
    store: dict[str, dict[str, Any]] = {}
    collector = MigrationStatsCollector(
        get_vmi=store.get, node=NODE, pods_dir=pods[0], connect=lambda _path: launcher, interval=0.05
    )
    collector.start()
    try:
        store[KEY] = vmi({"migrationUid": "m1"})
        collector.observe(copy.deepcopy(store[KEY]))
        wait_for(lambda: launcher.calls >= 3)
        store[KEY] = vmi({"migrationUid": "m1", "completed": True})
        time.sleep(0.2)  # the poller sees the end and stops asking
        calls = launcher.calls
        time.sleep(0.2)
        assert launcher.calls == calls
    finally:
        collector.close()
