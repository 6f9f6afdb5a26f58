"""``kubevirt_vmsnapshot_succeeded_timestamp_seconds``: when each VM snapshot that virt-controller saw
succeed was taken. As in KubeVirt, a value outlives its snapshot until the process restarts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from prometheus_client import Gauge
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from kubevirt.monitoring.virt_controller.families import GAUGE, Description
from kubevirt.monitoring.virt_controller.objects import unix_seconds, view_of
from kubevirt_api.view import FieldError

__all__ = ["DESCRIPTIONS", "VMSnapshotSucceeded", "metric_descriptions"]

SUCCEEDED_TIMESTAMP: Final = Description(
    "kubevirt_vmsnapshot_succeeded_timestamp_seconds",
    GAUGE,
    "Returns the timestamp of successful virtual machine snapshot.",
)
DESCRIPTIONS: Final = (SUCCEEDED_TIMESTAMP,)


def metric_descriptions() -> list[Description]:
    return list(DESCRIPTIONS)


class VMSnapshotSucceeded(Collector):
    """Call :meth:`handle_snapshot` with every snapshot the controller writes (or the informer reports)."""

    def __init__(self) -> None:
        self._gauge = Gauge(
            SUCCEEDED_TIMESTAMP.name,
            SUCCEEDED_TIMESTAMP.help,
            ("name", "snapshot_name", "namespace"),
            registry=None,
        )

    def handle_snapshot(self, snapshot: Any) -> None:
        """Records ``status.creationTime`` of a ``Succeeded`` snapshot, labelled with its source VM."""
        try:
            view = view_of(snapshot)
            status, meta = view.object("status"), view.object("metadata")
            if status.string("phase") != "Succeeded":
                return
            created = unix_seconds(status.get("creationTime"))
            source = view.object("spec").object("source").string("name")
        except FieldError:
            return
        if created is None:
            return  # KubeVirt sets the phase only once the creation time is known
        self._gauge.labels(source, meta.string("name"), meta.string("namespace")).set(created)

    def describe(self) -> list[Metric]:
        return list(self._gauge.describe())

    def collect(self) -> Iterator[Metric]:
        yield from self._gauge.collect()
