"""virt-handler's scrape-time collector of per-VMI series: every VMI of this node's informer cache whose
launcher answers in time contributes its domain's statistics (and the guest agent's file systems).

A scrape never waits on a launcher for longer than :data:`COLLECTION_TIMEOUT`: the launchers are asked
concurrently, and what has not answered by then is left out of this scrape (its series go stale in
Prometheus) instead of holding up the others. A launcher still busy with earlier requests beyond
``max_requests_per_launcher`` is skipped without being asked again, as KubeVirt's collector does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Protocol, TypeGuard

from prometheus_client.metrics_core import Metric

from kubevirt.log import get_logger
from kubevirt.monitoring.virt_handler.domainstats import domain_metrics, merge_metrics
from kubevirt.virt_handler.launcher_sockets import SocketLookupError, find_launcher_socket

__all__ = ["COLLECTION_TIMEOUT", "DomainStatsCollector", "StatsClient", "launcher_socket", "live"]

# KubeVirt's bound on one collection, and the age past which a late answer is dropped.
COLLECTION_TIMEOUT = 10.0
STATS_MAX_AGE = COLLECTION_TIMEOUT + 2.0
# KubeVirt's --max-metric-requests default: requests in flight per launcher.
MAX_REQUESTS_PER_LAUNCHER = 3
# Threads shared by all scrapes; a hung launcher holds one only until its client's deadline.
_WORKERS = 16

Report = tuple[Mapping[str, Any], Mapping[str, Any], list[Any]]


class StatsClient(Protocol):
    def get_domain_stats(self) -> dict[str, Any] | None: ...

    def get_filesystems(self) -> list[Any]: ...

    def close(self) -> None: ...


def launcher_socket(vmi: Mapping[str, Any], pods_dir: Path, node: str) -> Path | None:
    """The command socket of the VMI's one ready launcher on ``node``, looked up as the VM controller
    looks it up (no link followed); None when there is none to ask."""
    active = (vmi.get("status") or {}).get("activePods") or {}
    try:
        return find_launcher_socket(pods_dir, active, node)
    except SocketLookupError:
        return None


def live(stats: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    """Whether a GetDomainStats answer describes a domain (an empty one: the domain is going away)."""
    return bool(stats and stats.get("Name"))


class DomainStatsCollector:
    """A prometheus_client collector; ``vmis`` lists this node's VMIs from the informer cache and
    ``connect`` dials a launcher's command socket with virt-handler's checks."""

    def __init__(
        self,
        *,
        vmis: Callable[[], Iterable[Mapping[str, Any]]],
        node: str,
        pods_dir: Path,
        connect: Callable[[Path], StatsClient],
        timeout: float = COLLECTION_TIMEOUT,
        max_requests_per_launcher: int = MAX_REQUESTS_PER_LAUNCHER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._vmis = vmis
        self._node = node
        self._pods_dir = pods_dir
        self._connect = connect
        self._timeout = timeout
        self._max_requests = max_requests_per_launcher
        self._clock = clock
        self._log = get_logger()
        self._lock = threading.Lock()
        self._in_flight: dict[Path, int] = {}
        self._pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="domainstats")

    def describe(self) -> list[Metric]:
        return []  # families depend on what the launchers report; never scrape at registration

    def collect(self) -> Iterator[Metric]:
        # One family per name across the VMIs, as the text format wants.
        yield from merge_metrics(self._collect())

    def _collect(self) -> Iterator[Metric]:
        pending: dict[Future[Report | None], Path] = {}
        for vmi, socket in self._sockets():
            if not self._reserve(socket):
                self._log.warning(
                    "metrics source busy from a previous collection, skipped", source=str(socket)
                )
                continue
            pending[self._pool.submit(self._scrape, socket, vmi)] = socket
        deadline = self._clock() + self._timeout
        while pending:
            done, _ = wait(pending, timeout=max(0.0, deadline - self._clock()), return_when=FIRST_COMPLETED)
            if not done:
                self._log.warning("metrics collection timed out", waiting=len(pending))
                return
            for future in done:
                del pending[future]
                report = future.result()
                if report is not None:
                    yield from domain_metrics(report[0], self._node, report[1], filesystems=report[2])

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _sockets(self) -> Iterator[tuple[Mapping[str, Any], Path]]:
        for vmi in self._vmis():
            status = vmi.get("status") or {}
            if status.get("nodeName") != self._node:
                continue  # a migration target's VMI is reported by the node it runs on
            socket = launcher_socket(vmi, self._pods_dir, self._node)
            if socket is not None:
                yield vmi, socket

    def _scrape(self, socket: Path, vmi: Mapping[str, Any]) -> Report | None:
        started = self._clock()
        try:
            client = self._connect(socket)
            try:
                stats = client.get_domain_stats()
                filesystems = self._filesystems(client, socket) if stats else []
            finally:
                client.close()
        except Exception as err:
            self._log.error("failed to scrape metrics", source=str(socket), reason=str(err))
            return None
        finally:
            self._release(socket)
        if not live(stats):
            return None
        if self._clock() - started > STATS_MAX_AGE:
            self._log.info("stats took too long to collect, ignored", source=str(socket))
            return None
        return vmi, stats, filesystems

    def _filesystems(self, client: StatsClient, socket: Path) -> list[Any]:
        """The guest agent's file systems; without them the domain's series still count."""
        try:
            return client.get_filesystems()
        except Exception as err:
            self._log.warning("failed to read guest file systems", source=str(socket), reason=str(err))
            return []

    def _reserve(self, socket: Path) -> bool:
        with self._lock:
            count = self._in_flight.get(socket, 0)
            if count >= self._max_requests:
                return False
            self._in_flight[socket] = count + 1
            return True

    def _release(self, socket: Path) -> None:
        with self._lock:
            count = self._in_flight.get(socket, 1) - 1
            if count:
                self._in_flight[socket] = count
            else:
                self._in_flight.pop(socket, None)
