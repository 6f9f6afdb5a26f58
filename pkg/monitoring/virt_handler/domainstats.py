"""virt-handler's per-VMI series from a launcher's domain statistics, as KubeVirt's domainstats collector
makes them: names, types, help texts, labels and units are KubeVirt's.

:func:`domain_metrics` turns one VMI's ``DomainStats`` (GetDomainStats' JSON, Go field names) and its
guest file systems (GetFilesystems) into metric families; :func:`dirty_rate_metrics` does the same for
the dirty-rate measurement, which KubeVirt collects apart. A statistic whose ``<Field>Set`` flag is
false yields no sample. Every sample is labelled with the node, the VMI's namespace and name and each of
the VMI's labels as ``kubernetes_vmi_label_<key>`` (``.``, ``/`` and ``-`` of the key made ``_``).

The functions are pure; one family per name comes out per VMI, so a collector that reports several VMIs
merges them with :func:`merge_metrics` before exposing them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

__all__ = [
    "MetricDescription",
    "dirty_rate_metrics",
    "domain_metrics",
    "merge_metrics",
    "metric_descriptions",
    "vmi_labels",
]

# (name, type, help) as KubeVirt's metrics documentation lists them.
MetricDescription = tuple[str, str, str]

LABEL_PREFIX = "kubernetes_vmi_label_"
_LABEL_KEY_CHARS = str.maketrans(".-/", "___")
_NS_PER_SECOND = 1_000_000_000
_VCPU_STATES = {0: "offline", 1: "running", 2: "blocked"}


@dataclass(frozen=True)
class _Family:
    name: str
    type: str
    help: str


def _counter(name: str, help_text: str) -> _Family:
    return _Family(name, "Counter", help_text)


def _gauge(name: str, help_text: str) -> _Family:
    return _Family(name, "Gauge", help_text)


# -- the families, in KubeVirt's order of collection ------------------------------------------------

MEMORY_RESIDENT = _gauge(
    "kubevirt_vmi_memory_resident_bytes", "Resident set size of the process running the domain."
)
MEMORY_AVAILABLE = _gauge(
    "kubevirt_vmi_memory_available_bytes",
    "Amount of usable memory as seen by the domain. This value may not be accurate if a balloon driver "
    "is in use or if the guest OS does not initialize all assigned pages",
)
MEMORY_UNUSED = _gauge(
    "kubevirt_vmi_memory_unused_bytes",
    "The amount of memory left completely unused by the system. Memory that is available but used for "
    "reclaimable caches should NOT be reported as free.",
)
MEMORY_CACHED = _gauge(
    "kubevirt_vmi_memory_cached_bytes",
    "The amount of memory that is being used to cache I/O and is available to be reclaimed, corresponds "
    "to the sum of `Buffers` + `Cached` + `SwapCached` in `/proc/meminfo`.",
)
MEMORY_SWAP_IN = _gauge(
    "kubevirt_vmi_memory_swap_in_traffic_bytes",
    "The total amount of data read from swap space of the guest in bytes.",
)
MEMORY_SWAP_OUT = _gauge(
    "kubevirt_vmi_memory_swap_out_traffic_bytes",
    "The total amount of memory written out to swap space of the guest in bytes.",
)
MEMORY_PGMAJFAULT = _counter(
    "kubevirt_vmi_memory_pgmajfault_total",
    "The number of page faults when disk IO was required. Page faults occur when a process makes a valid "
    "access to virtual memory that is not available. When servicing the page fault, if disk IO is "
    "required, it is considered as major fault.",
)
MEMORY_PGMINFAULT = _counter(
    "kubevirt_vmi_memory_pgminfault_total",
    "The number of other page faults, when disk IO was not required. Page faults occur when a process "
    "makes a valid access to virtual memory that is not available. When servicing the page fault, if "
    "disk IO is NOT required, it is considered as minor fault.",
)
MEMORY_ACTUAL_BALLOON = _gauge("kubevirt_vmi_memory_actual_balloon_bytes", "Current balloon size in bytes.")
MEMORY_USABLE = _gauge(
    "kubevirt_vmi_memory_usable_bytes",
    "The amount of memory which can be reclaimed by balloon without pushing the guest system to swap, "
    "corresponds to 'Available' in /proc/meminfo.",
)
MEMORY_DOMAIN = _gauge(
    "kubevirt_vmi_memory_domain_bytes",
    "The amount of memory in bytes allocated to the domain. The `memory` value in domain xml file.",
)

CPU_USAGE = _counter(
    "kubevirt_vmi_cpu_usage_seconds_total",
    "Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).",
)
CPU_USER_USAGE = _counter("kubevirt_vmi_cpu_user_usage_seconds_total", "Total CPU time spent in user mode.")
CPU_SYSTEM_USAGE = _counter(
    "kubevirt_vmi_cpu_system_usage_seconds_total", "Total CPU time spent in system mode."
)
_LOAD_HELP = (
    "Guest system load average over {} as reported by the guest agent. Load is defined as the number of "
    "processes in the runqueue or waiting for disk I/O. Requires qemu-guest-agent version 10.0.0 or above."
)
GUEST_LOAD_1M = _gauge("kubevirt_vmi_guest_load_1m", _LOAD_HELP.format("1 minute"))
GUEST_LOAD_5M = _gauge("kubevirt_vmi_guest_load_5m", _LOAD_HELP.format("5 minutes"))
GUEST_LOAD_15M = _gauge("kubevirt_vmi_guest_load_15m", _LOAD_HELP.format("15 minutes"))

VCPU_SECONDS = _counter(
    "kubevirt_vmi_vcpu_seconds_total",
    "Total amount of time spent in each state by each vcpu (cpu_time excluding hypervisor time). Where "
    "`id` is the vcpu identifier and `state` can be one of the following: [`OFFLINE`, `RUNNING`, "
    "`BLOCKED`].",
)
VCPU_WAIT_SECONDS = _counter(
    "kubevirt_vmi_vcpu_wait_seconds_total", "Amount of time spent by each vcpu while waiting on I/O."
)
VCPU_DELAY_SECONDS = _counter(
    "kubevirt_vmi_vcpu_delay_seconds_total",
    "Amount of time spent by each vcpu waiting in the queue instead of running.",
)

STORAGE_IOPS_READ = _counter("kubevirt_vmi_storage_iops_read_total", "Total number of I/O read operations.")
STORAGE_IOPS_WRITE = _counter(
    "kubevirt_vmi_storage_iops_write_total", "Total number of I/O write operations."
)
STORAGE_READ_BYTES = _counter(
    "kubevirt_vmi_storage_read_traffic_bytes_total", "Total number of bytes read from storage."
)
STORAGE_WRITE_BYTES = _counter(
    "kubevirt_vmi_storage_write_traffic_bytes_total", "Total number of written bytes."
)
STORAGE_READ_TIMES = _counter(
    "kubevirt_vmi_storage_read_times_seconds_total", "Total time spent on read operations."
)
STORAGE_WRITE_TIMES = _counter(
    "kubevirt_vmi_storage_write_times_seconds_total", "Total time spent on write operations."
)
STORAGE_FLUSH_REQUESTS = _counter(
    "kubevirt_vmi_storage_flush_requests_total", "Total storage flush requests."
)
STORAGE_FLUSH_TIMES = _counter(
    "kubevirt_vmi_storage_flush_times_seconds_total", "Total time spent on cache flushing."
)

NETWORK_TRAFFIC_BYTES = _counter(
    "kubevirt_vmi_network_traffic_bytes_total", "[Deprecated] Total number of bytes sent and received."
)
NETWORK_RECEIVE_BYTES = _counter(
    "kubevirt_vmi_network_receive_bytes_total", "Total network traffic received in bytes."
)
NETWORK_TRANSMIT_BYTES = _counter(
    "kubevirt_vmi_network_transmit_bytes_total", "Total network traffic transmitted in bytes."
)
NETWORK_RECEIVE_PACKETS = _counter(
    "kubevirt_vmi_network_receive_packets_total", "Total network traffic received packets."
)
NETWORK_TRANSMIT_PACKETS = _counter(
    "kubevirt_vmi_network_transmit_packets_total", "Total network traffic transmitted packets."
)
NETWORK_RECEIVE_ERRORS = _counter(
    "kubevirt_vmi_network_receive_errors_total", "Total network received error packets."
)
NETWORK_TRANSMIT_ERRORS = _counter(
    "kubevirt_vmi_network_transmit_errors_total", "Total network transmitted error packets."
)
NETWORK_RECEIVE_DROPPED = _counter(
    "kubevirt_vmi_network_receive_packets_dropped_total",
    "The total number of rx packets dropped on vNIC interfaces.",
)
NETWORK_TRANSMIT_DROPPED = _counter(
    "kubevirt_vmi_network_transmit_packets_dropped_total",
    "The total number of tx packets dropped on vNIC interfaces.",
)

NODE_CPU_AFFINITY = _gauge(
    "kubevirt_vmi_node_cpu_affinity", "Number of VMI CPU affinities to node physical cores."
)

FILESYSTEM_CAPACITY = _gauge(
    "kubevirt_vmi_filesystem_capacity_bytes", "Total VM filesystem capacity in bytes."
)
FILESYSTEM_USED = _gauge("kubevirt_vmi_filesystem_used_bytes", "Used VM filesystem capacity in bytes.")

DIRTY_RATE = _gauge("kubevirt_vmi_dirty_rate_bytes_per_second", "Guest dirty-rate in bytes per second.")

_FAMILIES: tuple[_Family, ...] = (
    MEMORY_RESIDENT,
    MEMORY_AVAILABLE,
    MEMORY_UNUSED,
    MEMORY_CACHED,
    MEMORY_SWAP_IN,
    MEMORY_SWAP_OUT,
    MEMORY_PGMAJFAULT,
    MEMORY_PGMINFAULT,
    MEMORY_ACTUAL_BALLOON,
    MEMORY_USABLE,
    MEMORY_DOMAIN,
    CPU_USAGE,
    CPU_USER_USAGE,
    CPU_SYSTEM_USAGE,
    GUEST_LOAD_1M,
    GUEST_LOAD_5M,
    GUEST_LOAD_15M,
    VCPU_SECONDS,
    VCPU_WAIT_SECONDS,
    VCPU_DELAY_SECONDS,
    STORAGE_IOPS_READ,
    STORAGE_IOPS_WRITE,
    STORAGE_READ_BYTES,
    STORAGE_WRITE_BYTES,
    STORAGE_READ_TIMES,
    STORAGE_WRITE_TIMES,
    STORAGE_FLUSH_REQUESTS,
    STORAGE_FLUSH_TIMES,
    NETWORK_TRAFFIC_BYTES,
    NETWORK_RECEIVE_BYTES,
    NETWORK_TRANSMIT_BYTES,
    NETWORK_RECEIVE_PACKETS,
    NETWORK_TRANSMIT_PACKETS,
    NETWORK_RECEIVE_ERRORS,
    NETWORK_TRANSMIT_ERRORS,
    NETWORK_RECEIVE_DROPPED,
    NETWORK_TRANSMIT_DROPPED,
    NODE_CPU_AFFINITY,
    FILESYSTEM_CAPACITY,
    FILESYSTEM_USED,
    DIRTY_RATE,
)

# A sample before the VMI's labels join: its family, value and own labels.
_Point = tuple[_Family, float, Mapping[str, str]]
_NO_LABELS: Mapping[str, str] = {}


def metric_descriptions() -> list[MetricDescription]:
    """Every family this module can emit, as (name, type, help)."""
    return [(family.name, family.type, family.help) for family in _FAMILIES]


def domain_metrics(
    vmi: Mapping[str, Any],
    node: str,
    stats: Mapping[str, Any],
    *,
    filesystems: Sequence[Mapping[str, Any]] = (),
) -> list[Metric]:
    """The families of one VMI's domain ``stats`` and guest ``filesystems`` (``node`` names its node)."""
    points = [
        *_memory_points(stats.get("Memory")),
        *_cpu_points(stats.get("Cpu"), stats.get("Load")),
        *_vcpu_points(stats.get("Vcpu") or ()),
        *_block_points(stats.get("Block") or ()),
        *_network_points(stats.get("Net") or ()),
        *_affinity_points(stats),
        *_filesystem_points(filesystems),
    ]
    return _families(vmi_labels(vmi, node), points)


def dirty_rate_metrics(
    vmi: Mapping[str, Any], node: str, dirty_rate: Mapping[str, Any] | None
) -> list[Metric]:
    """The dirty-rate family from a ``DomainStatsDirtyRate`` (GetDomainDirtyRateStats' answer)."""
    if not dirty_rate or not dirty_rate.get("MegabytesPerSecondSet"):
        return []
    value = float(int(dirty_rate.get("MegabytesPerSecond", 0)) * 1024 * 1024)
    return _families(vmi_labels(vmi, node), [(DIRTY_RATE, value, _NO_LABELS)])


def vmi_labels(vmi: Mapping[str, Any], node: str) -> dict[str, str]:
    """The labels every series of ``vmi`` carries: node, namespace, name and the VMI's own labels."""
    metadata = vmi.get("metadata") or {}
    labels = {
        LABEL_PREFIX + str(key).translate(_LABEL_KEY_CHARS): str(value)
        for key, value in sorted((metadata.get("labels") or {}).items())
    }
    return {
        "node": node,
        "namespace": str(metadata.get("namespace", "")),
        "name": str(metadata.get("name", "")),
        **labels,
    }


def merge_metrics(metrics: Iterable[Metric]) -> list[Metric]:
    """One family per name, with the samples of every family of that name (e.g. from several VMIs)."""
    merged: dict[str, Metric] = {}
    for metric in metrics:
        target = merged.get(metric.name)
        if target is None:
            target = merged[metric.name] = Metric(metric.name, metric.documentation, metric.type)
        target.samples.extend(metric.samples)
    return list(merged.values())


# -- the statistics, as KubeVirt reads them ---------------------------------------------------------


def _seconds(nanoseconds: Any) -> float:
    return float(nanoseconds) / _NS_PER_SECOND


def _bytes_of_kib(kibibytes: Any) -> float:
    return float(kibibytes) * 1024


def _if_set(section: Mapping[str, Any], field: str) -> bool:
    return bool(section.get(field + "Set"))


_MEMORY = (
    (MEMORY_RESIDENT, "RSS", _bytes_of_kib),
    (MEMORY_AVAILABLE, "Available", _bytes_of_kib),
    (MEMORY_UNUSED, "Unused", _bytes_of_kib),
    (MEMORY_CACHED, "Cached", _bytes_of_kib),
    (MEMORY_SWAP_IN, "SwapIn", _bytes_of_kib),
    (MEMORY_SWAP_OUT, "SwapOut", _bytes_of_kib),
    (MEMORY_PGMAJFAULT, "MajorFault", float),
    (MEMORY_PGMINFAULT, "MinorFault", float),
    (MEMORY_ACTUAL_BALLOON, "ActualBalloon", _bytes_of_kib),
    (MEMORY_USABLE, "Usable", _bytes_of_kib),
    (MEMORY_DOMAIN, "Total", _bytes_of_kib),
)


def _memory_points(memory: Mapping[str, Any] | None) -> Iterator[_Point]:
    if not memory:
        return
    for family, field, convert in _MEMORY:
        if _if_set(memory, field):
            yield family, convert(memory.get(field, 0)), _NO_LABELS


def _cpu_points(cpu: Mapping[str, Any] | None, load: Mapping[str, Any] | None) -> Iterator[_Point]:
    for family, field in ((CPU_USAGE, "Time"), (CPU_USER_USAGE, "User"), (CPU_SYSTEM_USAGE, "System")):
        if cpu and _if_set(cpu, field):
            yield family, _seconds(cpu.get(field, 0)), _NO_LABELS
    for family, field in ((GUEST_LOAD_1M, "Load1m"), (GUEST_LOAD_5M, "Load5m"), (GUEST_LOAD_15M, "Load15m")):
        if load and _if_set(load, field):
            yield family, float(load.get(field, 0)), _NO_LABELS


def _vcpu_points(vcpus: Iterable[Mapping[str, Any]]) -> Iterator[_Point]:
    for index, vcpu in enumerate(vcpus):
        vcpu_id = str(index)
        if _if_set(vcpu, "Time"):
            state = _VCPU_STATES.get(int(vcpu.get("State", 0)), "unknown")
            yield VCPU_SECONDS, _seconds(vcpu.get("Time", 0)), {"id": vcpu_id, "state": state}
        if _if_set(vcpu, "Wait"):
            yield VCPU_WAIT_SECONDS, _seconds(vcpu.get("Wait", 0)), {"id": vcpu_id}
        if _if_set(vcpu, "Delay"):
            yield VCPU_DELAY_SECONDS, _seconds(vcpu.get("Delay", 0)), {"id": vcpu_id}


_BLOCK = (
    (STORAGE_IOPS_READ, "RdReqs", float),
    (STORAGE_IOPS_WRITE, "WrReqs", float),
    (STORAGE_READ_BYTES, "RdBytes", float),
    (STORAGE_WRITE_BYTES, "WrBytes", float),
    (STORAGE_READ_TIMES, "RdTimes", _seconds),
    (STORAGE_WRITE_TIMES, "WrTimes", _seconds),
    (STORAGE_FLUSH_REQUESTS, "FlReqs", float),
    (STORAGE_FLUSH_TIMES, "FlTimes", _seconds),
)


def _block_points(blocks: Iterable[Mapping[str, Any]]) -> Iterator[_Point]:
    for block in blocks:
        if not block.get("NameSet"):
            continue
        # The VMI's disk name where the domain XML gave one, else libvirt's target device.
        labels = {"drive": str(block.get("Alias") or block.get("Name", ""))}
        for family, field, convert in _BLOCK:
            if _if_set(block, field):
                yield family, convert(block.get(field, 0)), labels


_NET = (
    (NETWORK_RECEIVE_PACKETS, "RxPkts"),
    (NETWORK_TRANSMIT_PACKETS, "TxPkts"),
    (NETWORK_RECEIVE_ERRORS, "RxErrs"),
    (NETWORK_TRANSMIT_ERRORS, "TxErrs"),
    (NETWORK_RECEIVE_DROPPED, "RxDrop"),
    (NETWORK_TRANSMIT_DROPPED, "TxDrop"),
)


def _network_points(nets: Iterable[Mapping[str, Any]]) -> Iterator[_Point]:
    for net in nets:
        if not net.get("NameSet"):
            continue
        interface = str(net.get("Alias", "") if net.get("AliasSet") else net.get("Name", ""))
        labels = {"interface": interface}
        for direction, family, field in (
            ("rx", NETWORK_RECEIVE_BYTES, "RxBytes"),
            ("tx", NETWORK_TRANSMIT_BYTES, "TxBytes"),
        ):
            if _if_set(net, field):
                value = float(net.get(field, 0))
                yield NETWORK_TRAFFIC_BYTES, value, {"interface": interface, "type": direction}
                yield family, value, labels
        for family, field in _NET:
            if _if_set(net, field):
                yield family, float(net.get(field, 0)), labels


def _affinity_points(stats: Mapping[str, Any]) -> Iterator[_Point]:
    if stats.get("CPUMapSet"):
        pinned = sum(1 for row in stats.get("CPUMap") or () for allowed in row if allowed)
        yield NODE_CPU_AFFINITY, float(pinned), _NO_LABELS


def _filesystem_points(filesystems: Iterable[Mapping[str, Any]]) -> Iterator[_Point]:
    for filesystem in filesystems:
        labels = {
            "disk_name": str(filesystem.get("diskName", "")),
            "mount_point": str(filesystem.get("mountPoint", "")),
            "file_system_type": str(filesystem.get("fileSystemType", "")),
        }
        yield FILESYSTEM_CAPACITY, float(filesystem.get("totalBytes", 0)), labels
        yield FILESYSTEM_USED, float(filesystem.get("usedBytes", 0)), labels


def _families(vmi: Mapping[str, str], points: Iterable[_Point]) -> list[Metric]:
    built: dict[_Family, Metric] = {}
    for family, value, labels in points:
        metric = built.get(family)
        if metric is None:
            maker = CounterMetricFamily if family.type == "Counter" else GaugeMetricFamily
            metric = built[family] = maker(family.name, family.help)
        metric.add_sample(family.name, {**vmi, **labels}, value)
    return list(built.values())
