"""The migration families virt-controller builds from its migration cache at every scrape: how many
migrations are in each early phase, and which migrations succeeded or failed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from kubevirt.log import get_logger
from kubevirt.monitoring.virt_controller.families import GAUGE, Description, described, gauge, non_empty
from kubevirt.monitoring.virt_controller.objects import view_of
from kubevirt_api.core.v1.phases import VirtualMachineInstanceMigrationPhase as Phase
from kubevirt_api.view import FieldError

__all__ = ["DESCRIPTIONS", "MigrationStatsCollector", "metric_descriptions"]

PENDING: Final = Description(
    "kubevirt_vmi_migrations_in_pending_phase", GAUGE, "Number of current pending migrations."
)
SCHEDULING: Final = Description(
    "kubevirt_vmi_migrations_in_scheduling_phase", GAUGE, "Number of current scheduling migrations."
)
UNSET: Final = Description(
    "kubevirt_vmi_migrations_in_unset_phase",
    GAUGE,
    "Number of current unset migrations. These are pending items the virt-controller hasn\u2019t processed "
    "yet from the queue.",
)
RUNNING: Final = Description(
    "kubevirt_vmi_migrations_in_running_phase", GAUGE, "Number of current running migrations."
)
SUCCEEDED: Final = Description(
    "kubevirt_vmi_migration_succeeded", GAUGE, "Indicates if the VMI migration succeeded."
)
FAILED: Final = Description("kubevirt_vmi_migration_failed", GAUGE, "Indicates if the VMI migration failed.")
DESCRIPTIONS: Final = (PENDING, SCHEDULING, UNSET, RUNNING, SUCCEEDED, FAILED)

_OUTCOME_LABELS: Final = ("vmi", "vmim", "namespace")
_COUNTED: Final = {
    Phase.PENDING: PENDING,
    Phase.SCHEDULING: SCHEDULING,
    Phase.PHASE_UNSET: UNSET,
    Phase.RUNNING: RUNNING,
    Phase.SCHEDULED: RUNNING,
    Phase.PREPARING_TARGET: RUNNING,
    Phase.TARGET_READY: RUNNING,
}


def metric_descriptions() -> list[Description]:
    return list(DESCRIPTIONS)


class MigrationStatsCollector(Collector):
    """Reads ``migrations`` (virt-controller's migration cache) at every scrape.

    As in KubeVirt, every phase not counted and not ``Succeeded`` marks the migration failed, the
    decentralized ``WaitingForSync`` and ``Synchronizing`` phases included. The four counts are always
    exposed, zero when there are no migrations.
    """

    def __init__(self, *, migrations: Callable[[], Iterable[Any]]) -> None:
        self._migrations = migrations
        self._log = get_logger()

    def describe(self) -> list[Metric]:
        return described(DESCRIPTIONS)

    def collect(self) -> Iterator[Metric]:
        counts: Counter[Description] = Counter()
        outcomes = {d: gauge(d, _OUTCOME_LABELS) for d in (SUCCEEDED, FAILED)}
        for migration in self._migrations():
            try:
                view = view_of(migration)
                phase = view.object("status").string("phase")
                meta, vmi = view.object("metadata"), view.object("spec").string("vmiName")
                labels = (vmi, meta.string("name"), meta.string("namespace"))
            except FieldError as err:  # one malformed object must not cost the whole scrape
                self._log.warning("skipping a migration in the metrics", error=str(err))
                continue
            counted = _COUNTED.get(phase)
            if counted is not None:
                counts[counted] += 1
            else:
                outcomes[SUCCEEDED if phase == Phase.SUCCEEDED else FAILED].add_metric(labels, 1.0)
        yield from non_empty(outcomes.values())
        for description in (PENDING, SCHEDULING, UNSET, RUNNING):
            family = gauge(description)
            family.add_metric((), float(counts[description]))
            yield family
