"""The per-VMI families virt-controller builds from its VMI cache at every scrape: ``kubevirt_vmi_info``,
eviction blockers, addresses, migration start and end times, vNICs and ephemeral hotplug volumes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import suppress
from typing import Any, Final

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from kubevirt.instancetype.find import Getter
from kubevirt.log import get_logger
from kubevirt.monitoring.virt_controller.families import (
    GAUGE,
    Description,
    Sample,
    described,
    gauge,
    non_empty,
)
from kubevirt.monitoring.virt_controller.instancetypes import vmi_instancetype, vmi_preference
from kubevirt.monitoring.virt_controller.objects import unix_seconds, view_of
from kubevirt.monitoring.virt_controller.vnics import VNIC_LABELS, vnic_labels
from kubevirt_api.core.v1.constants import CREATED_BY_LABEL, OUTDATED_LAUNCHER_IMAGE_LABEL
from kubevirt_api.view import FieldError, View

__all__ = ["DESCRIPTIONS", "VMIStatsCollector", "metric_descriptions", "system_info"]

VMI_INFO: Final = Description("kubevirt_vmi_info", GAUGE, "Information about VirtualMachineInstances.")
NON_EVICTABLE: Final = Description(
    "kubevirt_vmi_non_evictable",
    GAUGE,
    "Indication for a VirtualMachine that its eviction strategy is set to Live Migration but is not "
    "migratable.",
)
ADDRESSES: Final = Description(
    "kubevirt_vmi_status_addresses",
    GAUGE,
    "The addresses of a VirtualMachineInstance. This metric provides the address of an available network "
    "interface associated with the VMI in the 'address' label, and about the type of address, such as "
    "internal IP, in the 'type' label.",
)
MIGRATION_START: Final = Description(
    "kubevirt_vmi_migration_start_time_seconds", GAUGE, "The time at which the migration started."
)
MIGRATION_END: Final = Description(
    "kubevirt_vmi_migration_end_time_seconds", GAUGE, "The time at which the migration ended."
)
VNIC_INFO: Final = Description(
    "kubevirt_vmi_vnic_info",
    GAUGE,
    "Details of VirtualMachineInstance (VMI) vNIC interfaces, such as vNIC name, binding type, "
    "network name, and binding name for each vNIC of a running instance.",
)
EPHEMERAL_HOTPLUG: Final = Description(
    "kubevirt_vmi_contains_ephemeral_hotplug_volume",
    GAUGE,
    "Reported only for VMIs that contain an ephemeral hotplug volume.",
)
DESCRIPTIONS: Final = (
    VMI_INFO,
    NON_EVICTABLE,
    ADDRESSES,
    MIGRATION_START,
    MIGRATION_END,
    VNIC_INFO,
    EPHEMERAL_HOTPLUG,
)

_LABELS: Final[Mapping[Description, tuple[str, ...]]] = {
    VMI_INFO: (
        "node",
        "namespace",
        "name",
        "phase",
        "os",
        "workload",
        "flavor",
        "instance_type",
        "preference",
        "guest_os_kernel_release",
        "guest_os_machine",
        "guest_os_arch",
        "guest_os_name",
        "guest_os_version_id",
        "evictable",
        "outdated",
        "vmi_pod",
    ),
    NON_EVICTABLE: ("node", "namespace", "name"),
    ADDRESSES: ("node", "namespace", "name", "vnic_name", "interface_name", "address", "type"),
    MIGRATION_START: ("node", "namespace", "name", "migration_name"),
    MIGRATION_END: ("node", "namespace", "name", "migration_name", "status"),
    VNIC_INFO: VNIC_LABELS,
    EPHEMERAL_HOTPLUG: ("namespace", "name", "volume_name"),
}

# The template annotations (from common-templates) naming the guest OS, workload and flavor.
_SYSTEM_ANNOTATIONS: Final = ("vm.kubevirt.io/os", "vm.kubevirt.io/workload", "vm.kubevirt.io/flavor")
EPHEMERAL_HOTPLUG_ANNOTATION: Final = "kubevirt.io/ephemeral-hotplug-volumes"
_MIGRATABLE_CONDITION: Final = "LiveMigratable"


def metric_descriptions() -> list[Description]:
    return list(DESCRIPTIONS)


def system_info(annotations: Mapping[str, str]) -> tuple[str, str, str]:
    """``os``, ``workload`` and ``flavor`` from the ``vm.kubevirt.io/`` annotations."""
    os_name, workload, flavor = (annotations.get(key, "") for key in _SYSTEM_ANNOTATIONS)
    return os_name, workload, flavor


def _evictable(spec: View, status: View, cluster_strategy: str | None) -> bool:
    """False when the VMI should live-migrate on eviction but is not (yet) known to be migratable."""
    own = spec.optional_string("evictionStrategy")
    strategy = own if own is not None else cluster_strategy
    migratable = next(
        (c.string("status") for c in status.items("conditions") if c.string("type") == _MIGRATABLE_CONDITION),
        None,
    )
    on_eviction = strategy == "LiveMigrate" or (strategy == "LiveMigrateIfPossible" and migratable == "True")
    return not (on_eviction and migratable in (None, "False"))


def _running_launchers(pods: Iterable[Any]) -> dict[tuple[str, str, str], str]:
    """Running launcher pods by (namespace, owning VMI's uid, node): the first one wins."""
    found: dict[tuple[str, str, str], str] = {}
    for pod in pods:
        with suppress(FieldError):  # a malformed pod names no VMI's launcher
            view = view_of(pod)
            if view.object("status").string("phase") != "Running":
                continue
            meta = view.object("metadata")
            key = (
                meta.string("namespace"),
                meta.string_map("labels").get(CREATED_BY_LABEL, ""),
                view.object("spec").string("nodeName"),
            )
            found.setdefault(key, meta.string("name"))
    return found


def _migration_names(migrations: Iterable[Any]) -> dict[str, str]:
    names: dict[str, str] = {}
    for migration in migrations:
        with suppress(FieldError):
            meta = view_of(migration).object("metadata")
            names.setdefault(meta.string("uid"), meta.string("name"))
    return names


class VMIStatsCollector(Collector):
    """Reads ``vmis`` (virt-controller's VMI cache) at every scrape. ``pods`` (the launcher pods) name
    ``vmi_pod``, ``migrations`` name ``migration_name``, ``lookup`` finds instance types and
    preferences, and ``eviction_strategy`` is the cluster-wide default a VMI without its own follows."""

    def __init__(
        self,
        *,
        vmis: Callable[[], Iterable[Any]],
        pods: Callable[[], Iterable[Any]],
        migrations: Callable[[], Iterable[Any]],
        lookup: Getter | None = None,
        eviction_strategy: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._vmis = vmis
        self._pods = pods
        self._migrations = migrations
        self._lookup = lookup
        self._eviction_strategy = eviction_strategy
        self._log = get_logger()

    def describe(self) -> list[Metric]:
        return described(DESCRIPTIONS)

    def collect(self) -> Iterator[Metric]:
        vmis = list(self._vmis())
        if not vmis:
            return
        families = {d: gauge(d, _LABELS[d]) for d in DESCRIPTIONS}
        scrape = _Scrape(self._pods, self._migrations, self._lookup, self._eviction_strategy())
        for vmi in vmis:
            try:
                samples = scrape.samples(view_of(vmi))
            except FieldError as err:  # one malformed object must not cost the whole scrape
                self._log.warning("skipping a VMI in the metrics", error=str(err))
                continue
            for description, labels, value in samples:
                families[description].add_metric(labels, value)
        yield from non_empty(families.values())


class _Scrape:
    """One scrape's state: pods and migrations are listed at most once, and only when needed."""

    def __init__(
        self,
        pods: Callable[[], Iterable[Any]],
        migrations: Callable[[], Iterable[Any]],
        lookup: Getter | None,
        eviction_strategy: str | None,
    ) -> None:
        self._pods = pods
        self._migrations = migrations
        self._lookup = lookup
        self._strategy = eviction_strategy
        self._launchers: dict[tuple[str, str, str], str] | None = None
        self._migration_names: dict[str, str] | None = None

    def _launcher(self, namespace: str, uid: str, node: str) -> str:
        if self._launchers is None:
            self._launchers = _running_launchers(self._pods())
        return self._launchers.get((namespace, uid, node), "")

    def _migration_name(self, uid: str) -> str:
        if self._migration_names is None:
            self._migration_names = _migration_names(self._migrations())
        return self._migration_names.get(uid, "")

    def samples(self, vmi: View) -> list[Sample]:
        meta, spec, status = vmi.object("metadata"), vmi.object("spec"), vmi.object("status")
        name, namespace = meta.string("name"), meta.string("namespace")
        node = status.string("nodeName")
        annotations = meta.string_map("annotations")
        evictable = _evictable(spec, status, self._strategy)
        samples: list[Sample] = [
            (VMI_INFO, self._info_labels(vmi, annotations, evictable), 1.0),
            (NON_EVICTABLE, (node, namespace, name), 0.0 if evictable else 1.0),
        ]
        for iface in status.items("interfaces"):
            address, vnic = iface.string("ipAddress"), iface.string("name")
            iface_name = iface.string("interfaceName")
            if not address and not vnic and not iface_name:
                continue  # nothing to tell it apart from another such interface
            kind = "ExternalInterface" if address else "SystemInterface"
            samples.append((ADDRESSES, (node, namespace, name, vnic, iface_name, address, kind), 1.0))
        samples.extend(self._migration_times(status, node, namespace, name))
        samples.extend((VNIC_INFO, labels, 1.0) for labels in vnic_labels(name, namespace, spec))
        if EPHEMERAL_HOTPLUG_ANNOTATION in annotations:
            volume = annotations[EPHEMERAL_HOTPLUG_ANNOTATION]
            samples.append((EPHEMERAL_HOTPLUG, (namespace, name, volume), 1.0))
        return samples

    def _info_labels(self, vmi: View, annotations: Mapping[str, str], evictable: bool) -> tuple[str, ...]:
        meta, status = vmi.object("metadata"), vmi.object("status")
        namespace = meta.string("namespace")
        node = status.string("nodeName")
        guest = status.object("guestOSInfo")
        lookup = self._lookup
        return (
            node,
            namespace,
            meta.string("name"),
            status.string("phase").lower(),
            *system_info(annotations),
            vmi_instancetype(annotations, namespace, lookup),
            vmi_preference(annotations, namespace, lookup),
            guest.string("kernelRelease"),
            status.object("machine").string("type"),
            guest.string("machine"),
            guest.string("name"),
            guest.string("versionId"),
            "true" if evictable else "false",
            "true" if OUTDATED_LAUNCHER_IMAGE_LABEL in meta.string_map("labels") else "false",
            self._launcher(namespace, meta.string("uid"), node),
        )

    def _migration_times(self, status: View, node: str, namespace: str, name: str) -> list[Sample]:
        state = status.optional_object("migrationState")
        if state is None:
            return []
        migration = self._migration_name(state.string("migrationUid"))
        samples: list[Sample] = []
        started = unix_seconds(state.get("startTimestamp"))
        if started is not None:
            samples.append((MIGRATION_START, (node, namespace, name, migration), float(started)))
        ended = unix_seconds(state.get("endTimestamp"))
        if ended is not None:
            outcome = ""
            if state.boolean("completed"):
                outcome = "failed" if state.boolean("failed") else "succeeded"
            samples.append((MIGRATION_END, (node, namespace, name, migration, outcome), float(ended)))
        return samples
