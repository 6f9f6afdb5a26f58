"""The migration benchmark's own measuring: the reachability probe sees a listener's outage, and the
summary takes medians over the migrations that succeeded."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import migration as mig  # noqa: E402
from localcluster.migration_bench import summary  # noqa: E402


def listener(port: int = 0) -> socket.socket:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(128)
    return server


def test_the_probe_measures_how_long_nobody_answered() -> None:
    server = listener()
    port = server.getsockname()[1]
    with mig.ReachabilityProbe(lambda: ["127.0.0.1"], port=port, interval=0.002) as probe:
        began = time.monotonic()
        time.sleep(0.3)
        server.close()  # the guest paused: nothing accepts
        time.sleep(0.4)
        server = listener(port)  # resumed on the target
        time.sleep(0.3)
        ended = time.monotonic()
    server.close()
    gap = probe.longest_gap(began, ended)
    assert 0.35 <= gap <= 0.6, gap
    assert len(probe.answered) > 50


def test_the_summary_takes_medians_of_the_succeeded_migrations() -> None:
    results = [
        {"phase": "Succeeded", "wall_seconds": 10.0, "libvirt_downtime_ms": 100, "client_downtime_ms": 300.0,
         "counter_went_on": True},
        {"phase": "Succeeded", "wall_seconds": 20.0, "libvirt_downtime_ms": 140, "client_downtime_ms": 500.0,
         "counter_went_on": True},
        {"phase": "Failed", "wall_seconds": 99.0, "client_downtime_ms": 9999.0},
    ]  # fmt: skip
    totals = summary(results)
    assert totals["succeeded"] == 2
    assert totals["median_wall_seconds"] == 15.0
    assert totals["median_libvirt_downtime_ms"] == 120.0
    assert totals["max_client_downtime_ms"] == 500.0
    assert totals["counter_went_on"] is True
