"""The migration counts by phase and the per-migration outcome gauges, read from cached migrations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client.registry import Collector

from kubevirt.monitoring.virt_controller.migrationstats import MigrationStatsCollector

Scrape = Callable[[Collector], list[tuple[str, dict[str, str], float]]]


def _migration(name: str, phase: str | None) -> dict[str, Any]:
    migration: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"vmiName": f"vmi-{name}"},
    }
    if phase is not None:
        migration["status"] = {"phase": phase}
    return migration


def test_each_phase_counts_where_kubevirt_counts_it(scrape: Scrape) -> None:
    migrations = [
        _migration("new", None),
        _migration("unset", ""),
        _migration("pending", "Pending"),
        _migration("pending2", "Pending"),
        _migration("scheduling", "Scheduling"),
        _migration("scheduled", "Scheduled"),
        _migration("preparing", "PreparingTarget"),
        _migration("ready", "TargetReady"),
        _migration("running", "Running"),
        _migration("done", "Succeeded"),
        _migration("broken", "Failed"),
        _migration("waiting", "WaitingForSync"),  # KubeVirt counts every other phase as failed
    ]

    scraped = scrape(MigrationStatsCollector(migrations=lambda: migrations))

    def outcome(name: str) -> dict[str, str]:
        return {"vmi": f"vmi-{name}", "vmim": name, "namespace": "ns"}

    assert scraped == [
        ("kubevirt_vmi_migration_succeeded", outcome("done"), 1.0),
        ("kubevirt_vmi_migration_failed", outcome("broken"), 1.0),
        ("kubevirt_vmi_migration_failed", outcome("waiting"), 1.0),
        ("kubevirt_vmi_migrations_in_pending_phase", {}, 2.0),
        ("kubevirt_vmi_migrations_in_scheduling_phase", {}, 1.0),
        ("kubevirt_vmi_migrations_in_unset_phase", {}, 2.0),
        ("kubevirt_vmi_migrations_in_running_phase", {}, 4.0),
    ]


def test_without_migrations_the_counts_are_zero(scrape: Scrape) -> None:
    assert scrape(MigrationStatsCollector(migrations=list)) == [
        ("kubevirt_vmi_migrations_in_pending_phase", {}, 0.0),
        ("kubevirt_vmi_migrations_in_scheduling_phase", {}, 0.0),
        ("kubevirt_vmi_migrations_in_unset_phase", {}, 0.0),
        ("kubevirt_vmi_migrations_in_running_phase", {}, 0.0),
    ]


def test_the_unset_help_keeps_kubevirts_typographic_apostrophe() -> None:
    [family] = [
        f
        for f in MigrationStatsCollector(migrations=list).collect()
        if f.name == "kubevirt_vmi_migrations_in_unset_phase"
    ]

    assert family.documentation == (
        "Number of current unset migrations. These are pending items the virt-controller hasn\u2019t "
        "processed yet from the queue."
    )
