"""The phase transition histograms, observed from informer updates of VMIs and migrations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client.registry import Collector

from kubevirt.monitoring.virt_controller.migration_transitions import MigrationPhaseTransitions
from kubevirt.monitoring.virt_controller.perfscale import VMIPhaseTransitions
from kubevirt_api.core.v1.vmi import VirtualMachineInstance

Scrape = Callable[[Collector], list[tuple[str, dict[str, str], float]]]
JSON = dict[str, Any]

BOUNDS = (
    "0.5", "1", "2", "5", "10", "20", "30", "40", "50", "60", "90",
    "120", "180", "300", "600", "1200", "1800", "3600", "+Inf",
)  # fmt: skip
CREATED = "2024-05-01T10:00:00Z"


def _vmi(phase: str, transitions: dict[str, str], **metadata: str) -> JSON:
    return {
        "metadata": {"name": "vm1", "namespace": "ns", "creationTimestamp": CREATED, **metadata},
        "spec": {"domain": {"devices": {}}},
        "status": {
            "phase": phase,
            "phaseTransitionTimestamps": [
                {"phase": p, "phaseTransitionTimestamp": at} for p, at in transitions.items()
            ],
        },
    }


def _histogram(name: str, labels: dict[str, str], value: float) -> list[tuple[str, dict[str, str], float]]:
    """The samples of one observation of ``value``, as Go's client exposes them."""
    buckets = [
        (f"{name}_bucket", {**labels, "le": bound}, 1.0 if bound == "+Inf" or value <= float(bound) else 0.0)
        for bound in BOUNDS
    ]
    return [*buckets, (f"{name}_count", labels, 1.0), (f"{name}_sum", labels, value)]


def _series(
    scraped: list[tuple[str, dict[str, str], float]], family: str
) -> list[tuple[str, dict[str, str], float]]:
    return [sample for sample in scraped if sample[0].rsplit("_", 1)[0] == family]


def test_a_phase_change_is_timed_from_the_last_phase_and_from_creation(scrape: Scrape) -> None:
    transitions = {
        "Pending": "2024-05-01T10:00:01Z",
        "Scheduling": "2024-05-01T10:00:02Z",
        "Scheduled": "2024-05-01T10:00:07Z",
        "Running": "2024-05-01T10:00:12Z",
    }
    old = _vmi("Scheduled", dict(list(transitions.items())[:3]))
    new = _vmi("Running", transitions)
    histograms = VMIPhaseTransitions()

    histograms.observe_vmi_update(old, new)

    scraped = scrape(histograms)
    assert scraped == [
        *_histogram(
            "kubevirt_vmi_phase_transition_time_seconds", {"phase": "Running", "last_phase": "Scheduled"}, 5.0
        ),
        *_histogram("kubevirt_vmi_phase_transition_time_from_creation_seconds", {"phase": "Running"}, 12.0),
    ]


def test_observations_accumulate_per_label_values(scrape: Scrape) -> None:
    histograms = VMIPhaseTransitions()
    first = _vmi("Running", {"Scheduled": "2024-05-01T10:00:01Z", "Running": "2024-05-01T10:00:02Z"})
    second = _vmi("Running", {"Scheduled": "2024-05-01T10:00:01Z", "Running": "2024-05-01T10:01:41Z"})

    histograms.observe_vmi_update(_vmi("Scheduled", {}), first)
    histograms.observe_vmi_update(_vmi("Scheduled", {}), second)

    family = "kubevirt_vmi_phase_transition_time_seconds"
    series = {(name, labels.get("le")): value for name, labels, value in _series(scrape(histograms), family)}
    assert series[(f"{family}_bucket", "1")] == 1.0
    assert series[(f"{family}_bucket", "90")] == 1.0
    assert series[(f"{family}_bucket", "120")] == 2.0
    assert series[(f"{family}_count", None)] == 2.0
    assert series[(f"{family}_sum", None)] == 101.0


def test_unchanged_phases_and_missing_timestamps_record_nothing(scrape: Scrape) -> None:
    histograms = VMIPhaseTransitions()
    running = _vmi("Running", {"Running": "2024-05-01T10:00:12Z"})

    histograms.observe_vmi_update(running, running)
    histograms.observe_vmi_update(None, running)
    histograms.observe_vmi_update(_vmi("Scheduled", {}), _vmi("Running", {}))

    assert scrape(histograms) == []


def test_from_an_unset_phase_both_are_timed_from_creation(scrape: Scrape) -> None:
    histograms = VMIPhaseTransitions()
    new = _vmi("Pending", {"Pending": "2024-05-01T10:00:03Z"})

    histograms.observe_vmi_update(_vmi("", {}), new)

    scraped = scrape(histograms)
    assert _series(scraped, "kubevirt_vmi_phase_transition_time_seconds") == _histogram(
        "kubevirt_vmi_phase_transition_time_seconds", {"phase": "Pending", "last_phase": ""}, 3.0
    )


def test_skewed_clocks_read_as_zero(scrape: Scrape) -> None:
    histograms = VMIPhaseTransitions()
    old = _vmi("Scheduled", {"Scheduled": "2024-05-01T10:00:09Z"})
    new = _vmi("Running", {"Scheduled": "2024-05-01T10:00:09Z", "Running": "2024-05-01T10:00:08Z"})

    histograms.observe_vmi_update(old, new)

    scraped = scrape(histograms)
    assert (
        "kubevirt_vmi_phase_transition_time_seconds_sum",
        {"phase": "Running", "last_phase": "Scheduled"},
        0.0,
    ) in scraped


@pytest.mark.parametrize(
    ("phase", "deleting", "recorded"),
    [
        ("Succeeded", True, True),
        ("Failed", True, True),
        ("Failed", False, False),
        ("Running", True, False),
    ],
)
def test_deletion_time_for_vmis_being_deleted_that_reach_a_final_phase(
    scrape: Scrape, phase: str, deleting: bool, recorded: bool
) -> None:
    histograms = VMIPhaseTransitions()
    deletion = {"deletionTimestamp": "2024-05-01T11:00:00Z"} if deleting else {}
    old = _vmi("Scheduled", {"Scheduled": "2024-05-01T10:59:00Z"}, **deletion)
    new = _vmi(phase, {"Scheduled": "2024-05-01T10:59:00Z", phase: "2024-05-01T11:00:05Z"}, **deletion)

    histograms.observe_vmi_update(old, new)

    family = "kubevirt_vmi_phase_transition_time_from_deletion_seconds"
    expected = _histogram(family, {"phase": phase}, 5.0) if recorded else []
    assert _series(scrape(histograms), family) == expected


def test_models_are_observed_like_their_json(scrape: Scrape) -> None:
    old = _vmi("Scheduled", {"Scheduled": "2024-05-01T10:00:07Z"})
    new = _vmi("Running", {"Scheduled": "2024-05-01T10:00:07Z", "Running": "2024-05-01T10:00:12Z"})
    from_models, from_json = VMIPhaseTransitions(), VMIPhaseTransitions()

    from_models.observe_vmi_update(
        VirtualMachineInstance.from_dict(old), VirtualMachineInstance.from_dict(new)
    )
    from_json.observe_vmi_update(old, new)

    assert scrape(from_models) == scrape(from_json) != []


def _migration(phase: str, transitions: list[tuple[str, str]]) -> JSON:
    return {
        "metadata": {"name": "m1", "namespace": "ns", "creationTimestamp": CREATED},
        "status": {
            "phase": phase,
            "phaseTransitionTimestamps": [
                {"phase": p, "phaseTransitionTimestamp": at} for p, at in transitions
            ],
        },
    }


def test_migration_phases_are_timed_from_creation(scrape: Scrape) -> None:
    histograms = MigrationPhaseTransitions()
    transitions = [
        ("Pending", "2024-05-01T10:00:01Z"),
        ("Scheduling", "2024-05-01T10:00:02Z"),
        ("Scheduling", "2024-05-01T10:00:03Z"),  # the last of a run of entries counts
        ("Scheduled", "2024-05-01T10:00:30Z"),
        ("Scheduling", "2024-05-01T10:09:00Z"),  # a later run does not
    ]

    histograms.observe_migration_update(
        _migration("Pending", transitions[:1]), _migration("Scheduling", transitions)
    )
    histograms.observe_migration_update(
        _migration("Scheduling", transitions), _migration("Scheduling", transitions)
    )

    assert scrape(histograms) == _histogram(
        "kubevirt_vmi_migration_phase_transition_time_from_creation_seconds", {"phase": "Scheduling"}, 3.0
    )
