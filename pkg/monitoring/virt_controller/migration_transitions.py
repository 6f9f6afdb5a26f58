"""``kubevirt_vmi_migration_phase_transition_time_from_creation_seconds``, observed as virt-controller's
migration informer reports updates: the time from a migration's creation to each phase it enters."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Final

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from kubevirt.monitoring.virt_controller.families import HISTOGRAM, Description, described, non_empty
from kubevirt.monitoring.virt_controller.histogram import PHASE_TRANSITION_TIME_BUCKETS, LabelledHistogram
from kubevirt.monitoring.virt_controller.objects import parse_time, phase_of, view_of
from kubevirt_api.view import FieldError, View

__all__ = ["DESCRIPTIONS", "MigrationPhaseTransitions", "metric_descriptions"]

FROM_CREATION: Final = Description(
    "kubevirt_vmi_migration_phase_transition_time_from_creation_seconds",
    HISTOGRAM,
    "Histogram of VM migration phase transitions duration from creation time in seconds.",
)
DESCRIPTIONS: Final = (FROM_CREATION,)


def metric_descriptions() -> list[Description]:
    return list(DESCRIPTIONS)


def _seconds_since_creation(migration: View, phase: str) -> float | None:
    start = parse_time(migration.object("metadata").get("creationTimestamp"))
    end: datetime | None = None
    # The last timestamp of the first run of entries for the phase.
    for transition in migration.object("status").items("phaseTransitionTimestamps"):
        if transition.string("phase") == phase:
            end = parse_time(transition.get("phaseTransitionTimestamp"))
        elif end is not None:
            break
    if start is None or end is None:
        return None
    return max((end - start).total_seconds(), 0.0)


class MigrationPhaseTransitions(Collector):
    """Call :meth:`observe_migration_update` from the migration informer's update handler."""

    def __init__(self) -> None:
        self._histogram = LabelledHistogram(FROM_CREATION, ("phase",), PHASE_TRANSITION_TIME_BUCKETS)

    def observe_migration_update(self, old: Any, new: Any) -> None:
        """Records the new phase when it differs from the old one (models or dicts)."""
        if old is None or new is None:
            return
        phase = phase_of(new)
        if phase_of(old) == phase:
            return
        try:
            seconds = _seconds_since_creation(view_of(new), phase)
        except FieldError:
            return  # a malformed object has no transition to record
        if seconds is not None:
            self._histogram.observe((phase,), seconds)

    def describe(self) -> list[Metric]:
        return described(DESCRIPTIONS)

    def collect(self) -> Iterator[Metric]:
        yield from non_empty([self._histogram.family()])
