"""The families virt-controller records as it works: leading and ready, launcher memory overhead and
succeeded snapshots; and the package's table of every family it exposes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from kubevirt.monitoring.virt_controller.component import ComponentStatus
from kubevirt.monitoring.virt_controller.descriptions import metric_descriptions
from kubevirt.monitoring.virt_controller.migration_transitions import MigrationPhaseTransitions
from kubevirt.monitoring.virt_controller.migrationstats import MigrationStatsCollector
from kubevirt.monitoring.virt_controller.perfscale import VMIPhaseTransitions
from kubevirt.monitoring.virt_controller.vmi_overhead import LauncherMemoryOverhead
from kubevirt.monitoring.virt_controller.vmistats import VMIStatsCollector
from kubevirt.monitoring.virt_controller.vmsnapshot import VMSnapshotSucceeded
from kubevirt.monitoring.virt_controller.vmstats import VMStatsCollector

Scrape = Callable[[Collector], list[tuple[str, dict[str, str], float]]]


def test_leading_and_ready_start_at_zero(scrape: Scrape) -> None:
    status = ComponentStatus()

    assert scrape(status) == [
        ("kubevirt_virt_controller_leading_status", {}, 0.0),
        ("kubevirt_virt_controller_ready_status", {}, 0.0),
    ]

    status.set_ready()
    status.set_leading()
    assert [value for _, _, value in scrape(status)] == [1.0, 1.0]

    status.set_ready(False)
    assert [value for _, _, value in scrape(status)] == [1.0, 0.0]


def test_launcher_memory_overhead_keeps_the_last_value_per_vmi(scrape: Scrape) -> None:
    overhead = LauncherMemoryOverhead()

    overhead.record("ns", "vm1", 230_000_000)
    overhead.record("ns", "vm2", 250_000_000)
    overhead.record("ns", "vm1", 240_000_000)

    assert scrape(overhead) == [
        ("kubevirt_vmi_launcher_memory_overhead_bytes", {"namespace": "ns", "name": "vm1"}, 240_000_000.0),
        ("kubevirt_vmi_launcher_memory_overhead_bytes", {"namespace": "ns", "name": "vm2"}, 250_000_000.0),
    ]


def _snapshot(name: str, phase: str, created: str | None = "2024-05-01T10:00:00Z") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if created:
        status["creationTime"] = created
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "vm1"}},
        "status": status,
    }


def test_succeeded_snapshots_record_their_creation_time(scrape: Scrape) -> None:
    snapshots = VMSnapshotSucceeded()

    snapshots.handle_snapshot(_snapshot("snap-progress", "InProgress"))
    snapshots.handle_snapshot(_snapshot("snap-failed", "Failed"))
    snapshots.handle_snapshot(_snapshot("snap-1", "Succeeded"))
    snapshots.handle_snapshot(_snapshot("snap-unknown-time", "Succeeded", created=None))

    assert scrape(snapshots) == [
        (
            "kubevirt_vmsnapshot_succeeded_timestamp_seconds",
            {"name": "vm1", "snapshot_name": "snap-1", "namespace": "ns"},
            1714557600.0,
        )
    ]


def _every_collector() -> list[Collector]:
    vm: dict[str, Any] = {
        "metadata": {"name": "vm1", "namespace": "ns", "creationTimestamp": "2024-05-01T10:00:00Z"},
        "spec": {
            "template": {
                "spec": {
                    "domain": {
                        "devices": {"interfaces": [{"name": "default", "masquerade": {}}]},
                        "resources": {"limits": {"memory": "1Gi"}},
                    },
                    "networks": [{"name": "default", "pod": {}}],
                    "volumes": [{"name": "disk", "persistentVolumeClaim": {"claimName": "pvc"}}],
                }
            }
        },
        "status": {"printableStatus": "Running"},
    }
    vmi = {
        "metadata": {
            "name": "vm1",
            "namespace": "ns",
            "annotations": {"kubevirt.io/ephemeral-hotplug-volumes": "hp"},
        },
        "spec": vm["spec"]["template"]["spec"],
        "status": {
            "phase": "Running",
            "interfaces": [{"name": "default", "ipAddress": "10.0.0.1"}],
            "migrationState": {
                "startTimestamp": "2024-05-01T10:00:00Z",
                "endTimestamp": "2024-05-01T10:01:00Z",
                "completed": True,
            },
        },
    }
    pvc = {"metadata": {"name": "pvc", "namespace": "ns"}, "spec": {}}
    migrations = [
        {"metadata": {"name": "ok"}, "status": {"phase": "Succeeded"}},
        {"metadata": {"name": "ko"}, "status": {"phase": "Failed"}},
    ]
    transitions = {
        "phaseTransitionTimestamps": [
            {"phase": "Running", "phaseTransitionTimestamp": "2024-05-01T10:00:05Z"},
            {"phase": "Failed", "phaseTransitionTimestamp": "2024-05-01T10:00:09Z"},
        ]
    }
    old = {"metadata": {"creationTimestamp": "2024-05-01T10:00:00Z"}, "status": {"phase": "Running"}}
    new = {
        "metadata": {
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "deletionTimestamp": "2024-05-01T10:00:01Z",
        },
        "status": {"phase": "Failed", **transitions},
    }
    vmi_transitions, migration_transitions = VMIPhaseTransitions(), MigrationPhaseTransitions()
    vmi_transitions.observe_vmi_update(old, new)
    migration_transitions.observe_migration_update(old, new)
    overhead, snapshots = LauncherMemoryOverhead(), VMSnapshotSucceeded()
    overhead.record("ns", "vm1", 1)
    snapshots.handle_snapshot(_snapshot("snap", "Succeeded"))
    return [
        ComponentStatus(),
        VMStatsCollector(vms=lambda: [vm], pvcs=lambda: [pvc]),
        VMIStatsCollector(vmis=lambda: [vmi], pods=list, migrations=lambda: migrations),
        MigrationStatsCollector(migrations=lambda: migrations),
        vmi_transitions,
        migration_transitions,
        overhead,
        snapshots,
    ]


def test_the_table_lists_every_family_exposed_with_its_help() -> None:
    exposed = {
        (family.name, family.documentation, family.type)
        for collector in _every_collector()
        for family in collector.collect()
    }

    table = {(name, help_text, kind) for name, kind, help_text in metric_descriptions()}
    # Counters built at scrape time go out as gauges to keep KubeVirt's names (no ``_total``).
    exposure = {"Gauge": "gauge", "Counter": "gauge", "Histogram": "histogram"}
    assert exposed == {(name, help_text, exposure[kind]) for name, help_text, kind in table}


def test_everything_registers_together_and_exposes_no_extra_series() -> None:
    registry = CollectorRegistry()
    for collector in _every_collector():
        registry.register(collector)

    text = generate_latest(registry).decode()

    assert "_created" not in text
    assert "_total" not in text
    assert (
        'kubevirt_vmi_phase_transition_time_from_deletion_seconds_bucket{le="1",phase="Failed"} 0.0' in text
    )
