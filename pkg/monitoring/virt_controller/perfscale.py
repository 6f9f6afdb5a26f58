"""The VMI phase transition histograms, observed as virt-controller's VMI informer reports updates:
time from the previous phase, from creation, and (for a VMI being deleted that reached a final phase)
from the deletion request."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Final

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from kubevirt.monitoring.virt_controller.families import HISTOGRAM, Description, described, non_empty
from kubevirt.monitoring.virt_controller.histogram import PHASE_TRANSITION_TIME_BUCKETS, LabelledHistogram
from kubevirt.monitoring.virt_controller.objects import parse_time, phase_of, view_of
from kubevirt_api.core.v1.phases import FINAL_VMI_PHASES
from kubevirt_api.view import FieldError, View

__all__ = ["DESCRIPTIONS", "VMIPhaseTransitions", "metric_descriptions", "transition_seconds"]

FROM_PREVIOUS: Final = Description(
    "kubevirt_vmi_phase_transition_time_seconds",
    HISTOGRAM,
    "Histogram of VM phase transitions duration between different phases in seconds.",
)
FROM_CREATION: Final = Description(
    "kubevirt_vmi_phase_transition_time_from_creation_seconds",
    HISTOGRAM,
    "Histogram of VM phase transitions duration from creation time in seconds.",
)
FROM_DELETION: Final = Description(
    "kubevirt_vmi_phase_transition_time_from_deletion_seconds",
    HISTOGRAM,
    "Histogram of VM phase transitions duration from deletion time in seconds.",
)
DESCRIPTIONS: Final = (FROM_PREVIOUS, FROM_CREATION, FROM_DELETION)

# Where a transition is measured from.
PREVIOUS: Final = "previous"
CREATION: Final = "creation"
DELETION: Final = "deletion"


def metric_descriptions() -> list[Description]:
    return list(DESCRIPTIONS)


def transition_seconds(old: View, new: View, since: str) -> float | None:
    """Seconds from ``since`` (the old phase's transition, creation or deletion) to the new phase's
    transition, never below zero (fast transitions can see clock skew); None without both times."""
    old_phase, new_phase = old.object("status").string("phase"), new.object("status").string("phase")
    meta = new.object("metadata")
    start: datetime | None = None
    if since == CREATION or not old_phase:
        start = parse_time(meta.get("creationTimestamp"))
    elif since == DELETION:
        start = parse_time(meta.get("deletionTimestamp"))
        if start is None:
            return None
    end: datetime | None = None
    for transition in new.object("status").items("phaseTransitionTimestamps"):
        phase = transition.string("phase")
        if end is None and phase == new_phase:
            end = parse_time(transition.get("phaseTransitionTimestamp"))
        elif start is None and phase == old_phase:
            start = parse_time(transition.get("phaseTransitionTimestamp"))
        elif start is not None and end is not None:
            break
    if start is None or end is None:
        return None
    return max((end - start).total_seconds(), 0.0)


class VMIPhaseTransitions(Collector):
    """The three histograms; call :meth:`observe_vmi_update` from the VMI informer's update handler."""

    def __init__(self) -> None:
        buckets = PHASE_TRANSITION_TIME_BUCKETS
        self._from_previous = LabelledHistogram(FROM_PREVIOUS, ("phase", "last_phase"), buckets)
        self._from_creation = LabelledHistogram(FROM_CREATION, ("phase",), buckets)
        self._from_deletion = LabelledHistogram(FROM_DELETION, ("phase",), buckets)

    def observe_vmi_update(self, old: Any, new: Any) -> None:
        """Records the transition when the phase changed between ``old`` and ``new`` (models or dicts)."""
        if old is None or new is None:
            return
        old_phase, new_phase = phase_of(old), phase_of(new)
        if old_phase == new_phase:
            return
        try:
            old_view, new_view = view_of(old), view_of(new)
            self._observe(old_view, new_view, old_phase, new_phase)
        except FieldError:
            return  # a malformed object has no transition to record

    def _observe(self, old: View, new: View, old_phase: str, new_phase: str) -> None:
        seconds = transition_seconds(old, new, PREVIOUS)
        if seconds is not None:
            self._from_previous.observe((new_phase, old_phase), seconds)
        seconds = transition_seconds(old, new, CREATION)
        if seconds is not None:
            self._from_creation.observe((new_phase,), seconds)
        deleting = new.object("metadata").has("deletionTimestamp")
        if deleting and new_phase in FINAL_VMI_PHASES:
            seconds = transition_seconds(old, new, DELETION)
            if seconds is not None:
                self._from_deletion.observe((new_phase,), seconds)

    def describe(self) -> list[Metric]:
        return described(DESCRIPTIONS)

    def collect(self) -> Iterator[Metric]:
        histograms = (self._from_previous, self._from_creation, self._from_deletion)
        yield from non_empty(histogram.family() for histogram in histograms)
