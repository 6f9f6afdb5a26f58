"""virt-handler's series of a live migration's progress, as KubeVirt's migration domain-stats handler
makes them: names, help texts and labels are KubeVirt's.

A VMI of this node's informer counts as migrating from the moment its ``status.migrationState`` is set
and not ``completed`` (:func:`is_migrating`). From then on, its launcher is asked for its domain
statistics at once and every :data:`POLLING_INTERVAL` seconds, on a background thread; the
``MigrateDomainJobInfo`` of each answer is kept with the time it came, the last :data:`BUFFER_SIZE` of
them. Polling stops when the informer no longer has the VMI or its migration is over. A scrape exposes
every kept answer with its own timestamp (series a scrape already showed come again, as KubeVirt's do),
and the first scrape after the migration ended is the VMI's last.

Samples are labelled ``namespace``, ``name`` and ``node`` (the VMI's ``status.nodeName`` when its
migration was first seen); a job statistic the launcher did not report gives no sample.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from kubevirt.controller.keys import key_of
from kubevirt.log import get_logger
from kubevirt.monitoring.virt_handler.collector import COLLECTION_TIMEOUT, StatsClient, launcher_socket, live
from kubevirt.monitoring.virt_handler.domainstats import MetricDescription

__all__ = [
    "BUFFER_SIZE",
    "POLLING_INTERVAL",
    "MigrationStatsCollector",
    "is_migrating",
    "metric_descriptions",
]

# KubeVirt's polling period of a migrating VMI and how many answers it keeps per VMI.
POLLING_INTERVAL = 5.0
BUFFER_SIZE = 10
# Scrapes of launchers run here; migrations leaving one node at a time are few.
_WORKERS = 4


@dataclass(frozen=True)
class _Family:
    name: str
    type: str
    help: str
    source: str  # the DomainJobInfo field; its "<field>Set" flag says whether libvirt reported it


# In KubeVirt's order. The total is a counter in KubeVirt's documentation; prometheus_client would expose
# a counter family as "<name>_total", so every family goes out as a gauge to keep KubeVirt's names.
_FAMILIES = (
    _Family(
        "kubevirt_vmi_migration_data_total_bytes",
        "Counter",
        "The total Guest OS data to be migrated to the new VM.",
        "DataTotal",
    ),
    _Family(
        "kubevirt_vmi_migration_data_remaining_bytes",
        "Gauge",
        "The remaining guest OS data to be migrated to the new VM.",
        "DataRemaining",
    ),
    _Family(
        "kubevirt_vmi_migration_data_processed_bytes",
        "Gauge",
        "The total Guest OS data processed and migrated to the new VM.",
        "DataProcessed",
    ),
    _Family(
        "kubevirt_vmi_migration_dirty_memory_rate_bytes",
        "Gauge",
        "The rate of memory being dirty in the Guest OS.",
        "MemDirtyRate",
    ),
    _Family(
        "kubevirt_vmi_migration_disk_transfer_rate_bytes",
        "Gauge",
        "The rate at which the memory is being transferred.",
        "MemoryBps",
    ),
)


def metric_descriptions() -> list[MetricDescription]:
    """Every family this module can emit, as (name, type, help) with KubeVirt's documented types."""
    return [(family.name, family.type, family.help) for family in _FAMILIES]


def is_migrating(vmi: Mapping[str, Any]) -> bool:
    """Whether the VMI has a migration under way: a ``status.migrationState`` not ``completed``."""
    state = (vmi.get("status") or {}).get("migrationState")
    return isinstance(state, Mapping) and not state.get("completed")


@dataclass(frozen=True)
class _Answer:
    job_info: Mapping[str, Any]
    timestamp: float  # Unix seconds, when the launcher answered


@dataclass
class _Migration:
    """One migrating VMI: the object it was found as, its last answers, and where its polling stands."""

    vmi: Mapping[str, Any]
    answers: deque[_Answer]
    due: float  # the next poll, on the monotonic clock
    polling: bool = True
    in_flight: bool = False
    labels: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        metadata = self.vmi.get("metadata") or {}
        status = self.vmi.get("status") or {}
        labels = {
            "namespace": str(metadata.get("namespace") or ""),
            "name": str(metadata.get("name") or ""),
            "node": str(status.get("nodeName") or ""),
        }
        # An empty label value is left out, as KubeVirt's collector leaves it out.
        self.labels = {key: value for key, value in labels.items() if value}


class MigrationStatsCollector:
    """A prometheus_client collector of the migration series.

    ``observe`` is the informer's add and update handler; ``get_vmi`` reads a VMI from the same informer
    by ``namespace/name`` key; ``connect`` dials a launcher's command socket found below ``pods_dir`` for
    ``node`` (this handler's node). ``start`` runs the polling thread, ``close`` ends it.
    """

    def __init__(
        self,
        *,
        get_vmi: Callable[[str], Mapping[str, Any] | None],
        node: str,
        pods_dir: Path,
        connect: Callable[[Path], StatsClient],
        interval: float = POLLING_INTERVAL,
        timeout: float = COLLECTION_TIMEOUT,
        buffer_size: int = BUFFER_SIZE,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._get_vmi = get_vmi
        self._node = node
        self._pods_dir = pods_dir
        self._connect = connect
        self._interval = interval
        self._timeout = timeout
        self._buffer_size = buffer_size
        self._clock = clock
        self._wall_clock = wall_clock
        self._log = get_logger()
        self._changed = threading.Condition()  # guards the migrations; notified when one is added
        self._migrations: dict[str, _Migration] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="migrationstats")

    # -- the informer's side --------------------------------------------------------------------

    def observe(self, vmi: Mapping[str, Any]) -> None:
        """Start polling the VMI's launcher when its migration has begun (idempotent)."""
        if not is_migrating(vmi):
            return
        key = key_of(vmi)
        with self._changed:
            known = self._migrations.get(key)
            if known is not None and known.polling:
                return
            answers: deque[_Answer] = deque(maxlen=self._buffer_size)
            if known is not None:
                # A new migration before a scrape retired the last one: what was kept stays.
                answers.extend(known.answers)
            self._migrations[key] = _Migration(vmi, answers, self._clock())
            self._changed.notify_all()

    # -- polling ---------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="migration-stats", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        with self._changed:
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_due()
            except Exception as err:  # the series must outlive one bad pass
                self._log.error("failed to poll migrating VMIs", reason=str(err))
            with self._changed:
                dues = [m.due for m in self._migrations.values() if m.polling]
                wait = min(dues) - self._clock() if dues else None
                if wait is None or wait > 0:
                    self._changed.wait(wait)

    def poll_due(self) -> None:
        """Ask the launcher of every migration whose poll is due; stop polling the ones that ended."""
        now = self._clock()
        with self._changed:
            due = [(key, m) for key, m in self._migrations.items() if m.polling and m.due <= now]
            for _, migration in due:
                migration.due = now + self._interval
        # The informer's store is read without holding our lock: its handlers take it (observe).
        for key, migration in due:
            finished = self._finished(key)
            with self._changed:
                busy = migration.in_flight
                if finished:
                    migration.polling = False
                elif not busy:
                    migration.in_flight = True
            if finished:
                continue
            if busy:
                self._log.warning("metrics source busy from a previous collection, skipped", vmi=key)
                continue
            self._pool.submit(self._scrape, key, migration)

    def _scrape(self, key: str, migration: _Migration) -> None:
        try:
            self._record(key, migration)
        finally:
            with self._changed:
                migration.in_flight = False

    def _record(self, key: str, migration: _Migration) -> None:
        started = self._clock()
        try:
            job_info = self._job_info(migration.vmi)
        except Exception as err:
            self._log.error("failed to scrape migration stats", vmi=key, reason=str(err))
            return
        if job_info is None:
            return
        if self._clock() - started > self._timeout:
            self._log.info("migration stats took too long to collect, ignored", vmi=key)
            return
        with self._changed:
            migration.answers.append(_Answer(job_info, self._wall_clock()))

    def _job_info(self, vmi: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The launcher's ``MigrateDomainJobInfo``; None when it has no domain or no launcher is found."""
        socket = launcher_socket(vmi, self._pods_dir, self._node)
        if socket is None:
            return None
        client = self._connect(socket)
        try:
            stats = client.get_domain_stats()
        finally:
            client.close()
        if not live(stats):
            return None
        job_info = stats.get("MigrateDomainJobInfo")
        return job_info if isinstance(job_info, Mapping) else None

    def _finished(self, key: str) -> bool:
        vmi = self._get_vmi(key)
        return vmi is None or not is_migrating(vmi)

    # -- scraping --------------------------------------------------------------------------------

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily(family.name, family.help) for family in _FAMILIES]

    def collect(self) -> Iterator[Metric]:
        with self._changed:
            migrations = list(self._migrations.items())
            kept = [(m.labels, list(m.answers)) for _, m in migrations]
        finished = [(key, m) for key, m in migrations if self._finished(key)]
        with self._changed:
            for key, migration in finished:
                if self._migrations.get(key) is migration:
                    del self._migrations[key]  # exposed this once more, then gone
        for family in _FAMILIES:
            metric = GaugeMetricFamily(family.name, family.help)
            for labels, answers in kept:
                for answer in answers:
                    if answer.job_info.get(family.source + "Set"):
                        value = float(answer.job_info.get(family.source) or 0)
                        metric.add_sample(family.name, labels, value, timestamp=answer.timestamp)
            if metric.samples:  # like KubeVirt's, a family without samples is not exposed
                yield metric
