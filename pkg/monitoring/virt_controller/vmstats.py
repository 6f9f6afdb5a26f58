"""The per-VM families virt-controller builds from its VM cache at every scrape: ``kubevirt_vm_info``,
the status transition timestamps, creation time, vNICs, resource requests and limits, and disk sizes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from kubevirt.instancetype.find import Getter
from kubevirt.log import get_logger
from kubevirt.monitoring.virt_controller.families import (
    COUNTER,
    GAUGE,
    Description,
    Sample,
    described,
    gauge,
    non_empty,
)
from kubevirt.monitoring.virt_controller.instancetypes import (
    vm_instancetype,
    vm_preference,
    with_instancetype,
)
from kubevirt.monitoring.virt_controller.objects import as_json, unix_seconds
from kubevirt.monitoring.virt_controller.vm_disks import (
    DISK_ALLOCATED,
    DISK_ALLOCATED_LABELS,
    PVCs,
    disk_samples,
    pvcs_by_key,
)
from kubevirt.monitoring.virt_controller.vm_resources import (
    LIMITS,
    LIMITS_LABELS,
    REQUESTS,
    REQUESTS_LABELS,
    resource_samples,
)
from kubevirt.monitoring.virt_controller.vmistats import system_info
from kubevirt.monitoring.virt_controller.vnics import VNIC_LABELS, vnic_labels
from kubevirt_api.view import FieldError, View

__all__ = ["DESCRIPTIONS", "VMStatsCollector", "metric_descriptions", "status_group"]


def _timestamp(group: str, what: str) -> Description:
    return Description(
        f"kubevirt_vm_{group}_status_last_transition_timestamp_seconds",
        COUNTER,
        f"Virtual Machine last transition timestamp to {what} status.",
    )


STARTING: Final = _timestamp("starting", "starting")
RUNNING: Final = _timestamp("running", "running")
MIGRATING: Final = _timestamp("migrating", "migrating")
NON_RUNNING: Final = _timestamp("non_running", "paused/stopped")
ERROR: Final = _timestamp("error", "error")
TIMESTAMPS: Final = (STARTING, RUNNING, MIGRATING, NON_RUNNING, ERROR)

VM_INFO: Final = Description("kubevirt_vm_info", GAUGE, "Information about Virtual Machines.")
CREATE_DATE: Final = Description(
    "kubevirt_vm_create_date_timestamp_seconds", GAUGE, "Virtual Machine creation timestamp."
)
VNIC_INFO: Final = Description(
    "kubevirt_vm_vnic_info",
    GAUGE,
    "Details of Virtual Machine (VM) vNIC interfaces, such as vNIC name, binding type, network name, "
    "and binding name for each vNIC defined in the VM's configuration.",
)
DESCRIPTIONS: Final = (*TIMESTAMPS, REQUESTS, LIMITS, VM_INFO, DISK_ALLOCATED, CREATE_DATE, VNIC_INFO)

_NAME_NAMESPACE: Final = ("name", "namespace")
_LABELS: Final[Mapping[Description, tuple[str, ...]]] = {
    **dict.fromkeys(TIMESTAMPS, _NAME_NAMESPACE),
    REQUESTS: REQUESTS_LABELS,
    LIMITS: LIMITS_LABELS,
    VM_INFO: (
        "name",
        "namespace",
        "os",
        "workload",
        "flavor",
        "machine_type",
        "instance_type",
        "preference",
        "status",
        "status_group",
    ),
    DISK_ALLOCATED: DISK_ALLOCATED_LABELS,
    CREATE_DATE: _NAME_NAMESPACE,
    VNIC_INFO: VNIC_LABELS,
}

# Printable statuses by group, and the timestamp family each group reports in.
_GROUPS: Final[tuple[tuple[str, Description, frozenset[str]], ...]] = (
    ("starting", STARTING, frozenset({"Provisioning", "Starting", "WaitingForVolumeBinding"})),
    ("running", RUNNING, frozenset({"Running"})),
    ("migrating", MIGRATING, frozenset({"Migrating"})),
    ("non_running", NON_RUNNING, frozenset({"Stopped", "Paused", "Stopping", "Terminating"})),
    (
        "error",
        ERROR,
        frozenset(
            {
                "CrashLoopBackOff",
                "Unknown",
                "ErrorUnschedulable",
                "ErrImagePull",
                "ImagePullBackOff",
                "ErrorPvcNotFound",
                "DataVolumeError",
            }
        ),
    ),
)
# The conditions whose latest transition dates the current status.
_STATUS_CONDITIONS: Final = frozenset({"Ready", "Failure", "Paused"})


def metric_descriptions() -> list[Description]:
    return list(DESCRIPTIONS)


def status_group(printable_status: str) -> str:
    """``status_group`` of ``kubevirt_vm_info``; ``<unknown>`` for statuses outside every group."""
    return next((group for group, _, statuses in _GROUPS if printable_status in statuses), "<unknown>")


def _timestamp_family(printable_status: str) -> Description:
    # An ungrouped status (WaitingForReceiver, none yet) is dated in the error family, as in KubeVirt.
    return next((family for _, family, statuses in _GROUPS if printable_status in statuses), ERROR)


def _last_transition(status: View) -> int:
    latest = -1
    for condition in status.items("conditions"):
        if condition.string("type") not in _STATUS_CONDITIONS:
            continue
        moment = unix_seconds(condition.get("lastTransitionTime"))
        if moment is not None and moment > latest:
            latest = moment
    return latest


class VMStatsCollector(Collector):
    """Reads ``vms`` (virt-controller's VM cache) at every scrape; ``pvcs`` (the PVC cache) sizes disks
    and ``lookup`` finds instance types, preferences and their ControllerRevisions."""

    def __init__(
        self,
        *,
        vms: Callable[[], Iterable[Any]],
        pvcs: Callable[[], Iterable[Any]],
        lookup: Getter | None = None,
    ) -> None:
        self._vms = vms
        self._pvcs = pvcs
        self._lookup = lookup
        self._log = get_logger()

    def describe(self) -> list[Metric]:
        return described(DESCRIPTIONS)

    def collect(self) -> Iterator[Metric]:
        vms = list(self._vms())
        if not vms:
            return
        families = {d: gauge(d, _LABELS[d]) for d in DESCRIPTIONS}
        pvcs = pvcs_by_key(self._pvcs())
        for vm in vms:
            try:
                samples = self._samples(vm, pvcs)
            except FieldError as err:  # one malformed object must not cost the whole scrape
                self._log.warning("skipping a VM in the metrics", error=str(err))
                continue
            for description, labels, value in samples:
                families[description].add_metric(labels, value)
        yield from non_empty(families.values())

    def _samples(self, vm: Any, pvcs: PVCs) -> list[Sample]:
        data = as_json(vm)
        view = View.of(data)
        meta, spec = view.object("metadata"), view.object("spec")
        name, namespace = meta.string("name"), meta.string("namespace")
        samples = [self._info(view)]
        printable = view.object("status").string("printableStatus")
        current, latest = _timestamp_family(printable), _last_transition(view.object("status"))
        samples.extend(
            (family, (name, namespace), float(latest) if family is current else 0.0) for family in TIMESTAMPS
        )
        created = unix_seconds(meta.get("creationTimestamp"))
        if created is not None:
            samples.append((CREATE_DATE, (name, namespace), float(created)))
        template_spec = spec.object("template").object("spec")
        samples.extend((VNIC_INFO, labels, 1.0) for labels in vnic_labels(name, namespace, template_spec))
        applied = View.of(with_instancetype(vm, data, self._lookup)).object("spec")
        samples.extend(resource_samples(name, namespace, applied))
        samples.extend(disk_samples(name, namespace, spec, pvcs))
        return samples

    def _info(self, vm: View) -> Sample:
        meta, spec = vm.object("metadata"), vm.object("spec")
        namespace = meta.string("namespace")
        template = spec.optional_object("template")
        os_name = workload = flavor = machine_type = ""
        if template is not None:
            os_name, workload, flavor = system_info(template.object("metadata").string_map("annotations"))
            machine_type = template.object("spec").object("domain").object("machine").string("type")
        printable = vm.object("status").string("printableStatus")
        labels = (
            meta.string("name"),
            namespace,
            os_name,
            workload,
            flavor,
            machine_type,
            vm_instancetype(spec, namespace, self._lookup),
            vm_preference(spec, namespace, self._lookup),
            printable.lower(),
            status_group(printable),
        )
        return (VM_INFO, labels, 1.0)
