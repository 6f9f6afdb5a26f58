"""virt-handler's per-VMI series from a launcher's DomainStats: KubeVirt's names, types, labels and units,
no sample for an unset statistic, and the VMI's labels made label names."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric

from kubevirt.monitoring.virt_handler.domainstats import (
    dirty_rate_metrics,
    domain_metrics,
    merge_metrics,
    metric_descriptions,
    vmi_labels,
)

VMI: dict[str, Any] = {
    "metadata": {
        "name": "testvmi",
        "namespace": "ns1",
        "labels": {"kubevirt.io/domain": "testvmi", "app.kubernetes.io/part-of": "web-shop", "tier": "db"},
    },
    "status": {"nodeName": "node01"},
}
BASE = {
    "node": "node01",
    "namespace": "ns1",
    "name": "testvmi",
    "kubernetes_vmi_label_kubevirt_io_domain": "testvmi",
    "kubernetes_vmi_label_app_kubernetes_io_part_of": "web-shop",
    "kubernetes_vmi_label_tier": "db",
}


def _set(**values: Any) -> dict[str, Any]:
    """Go fields with their Set flags, all set."""
    out: dict[str, Any] = {}
    for field, value in values.items():
        out[field + "Set"], out[field] = True, value
    return out


# GetDomainStats' JSON for a running 2-vCPU guest with one NIC, a disk, a CD-ROM and a guest agent.
STATS: dict[str, Any] = {
    "Name": "ns1_testvmi",
    "UUID": "5b8a2e6c-0000-4000-8000-000000000001",
    "Cpu": _set(Time=12_500_000_000, User=3_000_000_000, System=1_500_000_000),
    "Memory": _set(
        Unused=60000,
        Cached=20000,
        Available=120000,
        ActualBalloon=131072,
        RSS=98304,
        SwapIn=10,
        SwapOut=20,
        MajorFault=300,
        MinorFault=80000,
        Usable=90000,
        Total=131072,
    ),
    "MigrateDomainJobInfo": None,
    "Vcpu": [
        _set(State=1, Time=5_000_000_000, Wait=250_000_000, Delay=1_000_000),
        {**_set(State=2, Time=4_000_000_000), "WaitSet": False, "Wait": 0, "DelaySet": False, "Delay": 0},
    ],
    "Net": [
        {
            **_set(Name="tap0", Alias="default"),
            **_set(RxBytes=1000, RxPkts=10, RxErrs=0, RxDrop=1, TxBytes=2000, TxPkts=20, TxErrs=2, TxDrop=0),
        }
    ],
    "Block": [
        {
            "NameSet": True,
            "Name": "vda",
            "Alias": "containerdisk",
            **_set(RdReqs=300, RdBytes=4_000_000, RdTimes=90_000_000, WrReqs=40, WrBytes=163_840),
            **_set(WrTimes=8_000_000, FlReqs=5, FlTimes=600_000, Capacity=4_194_304, Allocation=2_097_152),
        },
        {"NameSet": True, "Name": "sda", "Alias": "", **_set(RdReqs=2)},
    ],
    "CPUMapSet": True,
    "CPUMap": [[True, True, False, False], [False, False, True, False]],
    "NrVirtCpu": 2,
    "DirtyRate": _set(CalcStatus=2, MegabytesPerSecond=3),
    "Load": {**_set(Load1m=0.5, Load5m=1.25), "Load15mSet": False, "Load15m": 0},
    "State": 1,
}
FILESYSTEMS = [
    {
        "diskName": "vda1",
        "mountPoint": "/",
        "fileSystemType": "ext4",
        "usedBytes": 1_000_000,
        "totalBytes": 8_000_000,
    }
]

SECOND = 1e9  # Go divides float64(ns) by 1e9
KIB = 1024.0


def samples(metrics: Iterable[Metric]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Each sample's name and own labels (those besides the VMI's) -> value; no sample twice."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for metric in metrics:
        for sample in metric.samples:
            assert {k: sample.labels[k] for k in BASE} == BASE
            own = tuple(sorted((k, v) for k, v in sample.labels.items() if k not in BASE))
            key = (sample.name, own)
            assert key not in out
            out[key] = sample.value
    return out


def test_every_sample_of_a_full_report() -> None:
    got = samples(domain_metrics(VMI, "node01", STATS, filesystems=FILESYSTEMS))
    disk = (("drive", "containerdisk"),)
    nic = (("interface", "default"),)
    fs = (("disk_name", "vda1"), ("file_system_type", "ext4"), ("mount_point", "/"))
    assert got == {
        ("kubevirt_vmi_memory_resident_bytes", ()): 98304 * KIB,
        ("kubevirt_vmi_memory_available_bytes", ()): 120000 * KIB,
        ("kubevirt_vmi_memory_unused_bytes", ()): 60000 * KIB,
        ("kubevirt_vmi_memory_cached_bytes", ()): 20000 * KIB,
        ("kubevirt_vmi_memory_swap_in_traffic_bytes", ()): 10 * KIB,
        ("kubevirt_vmi_memory_swap_out_traffic_bytes", ()): 20 * KIB,
        ("kubevirt_vmi_memory_pgmajfault_total", ()): 300.0,
        ("kubevirt_vmi_memory_pgminfault_total", ()): 80000.0,
        ("kubevirt_vmi_memory_actual_balloon_bytes", ()): 131072 * KIB,
        ("kubevirt_vmi_memory_usable_bytes", ()): 90000 * KIB,
        ("kubevirt_vmi_memory_domain_bytes", ()): 131072 * KIB,
        ("kubevirt_vmi_cpu_usage_seconds_total", ()): 12.5,
        ("kubevirt_vmi_cpu_user_usage_seconds_total", ()): 3.0,
        ("kubevirt_vmi_cpu_system_usage_seconds_total", ()): 1.5,
        ("kubevirt_vmi_guest_load_1m", ()): 0.5,
        ("kubevirt_vmi_guest_load_5m", ()): 1.25,
        ("kubevirt_vmi_vcpu_seconds_total", (("id", "0"), ("state", "running"))): 5.0,
        ("kubevirt_vmi_vcpu_wait_seconds_total", (("id", "0"),)): 0.25,
        ("kubevirt_vmi_vcpu_delay_seconds_total", (("id", "0"),)): 0.001,
        ("kubevirt_vmi_vcpu_seconds_total", (("id", "1"), ("state", "blocked"))): 4.0,
        ("kubevirt_vmi_storage_iops_read_total", disk): 300.0,
        ("kubevirt_vmi_storage_iops_write_total", disk): 40.0,
        ("kubevirt_vmi_storage_read_traffic_bytes_total", disk): 4_000_000.0,
        ("kubevirt_vmi_storage_write_traffic_bytes_total", disk): 163_840.0,
        ("kubevirt_vmi_storage_read_times_seconds_total", disk): 90_000_000 / SECOND,
        ("kubevirt_vmi_storage_write_times_seconds_total", disk): 8_000_000 / SECOND,
        ("kubevirt_vmi_storage_flush_requests_total", disk): 5.0,
        ("kubevirt_vmi_storage_flush_times_seconds_total", disk): 600_000 / SECOND,
        # A disk without an alias is named by its target device.
        ("kubevirt_vmi_storage_iops_read_total", (("drive", "sda"),)): 2.0,
        ("kubevirt_vmi_network_traffic_bytes_total", (("interface", "default"), ("type", "rx"))): 1000.0,
        ("kubevirt_vmi_network_traffic_bytes_total", (("interface", "default"), ("type", "tx"))): 2000.0,
        ("kubevirt_vmi_network_receive_bytes_total", nic): 1000.0,
        ("kubevirt_vmi_network_transmit_bytes_total", nic): 2000.0,
        ("kubevirt_vmi_network_receive_packets_total", nic): 10.0,
        ("kubevirt_vmi_network_transmit_packets_total", nic): 20.0,
        ("kubevirt_vmi_network_receive_errors_total", nic): 0.0,
        ("kubevirt_vmi_network_transmit_errors_total", nic): 2.0,
        ("kubevirt_vmi_network_receive_packets_dropped_total", nic): 1.0,
        ("kubevirt_vmi_network_transmit_packets_dropped_total", nic): 0.0,
        ("kubevirt_vmi_node_cpu_affinity", ()): 3.0,
        ("kubevirt_vmi_filesystem_capacity_bytes", fs): 8_000_000.0,
        ("kubevirt_vmi_filesystem_used_bytes", fs): 1_000_000.0,
    }


def test_the_regular_report_leaves_the_dirty_rate_to_its_own_collector() -> None:
    names = {metric.name for metric in domain_metrics(VMI, "node01", STATS)}
    assert "kubevirt_vmi_dirty_rate_bytes_per_second" not in names
    assert not any(name.startswith("kubevirt_vmi_filesystem") for name in names)  # no agent report


def test_families_have_kubevirts_types_and_help() -> None:
    described = {name: (kind, help_text) for name, kind, help_text in metric_descriptions()}
    for metric in domain_metrics(VMI, "node01", STATS, filesystems=FILESYSTEMS):
        name = metric.samples[0].name
        kind, help_text = described[name]
        assert metric.type == kind.lower()
        assert metric.documentation == help_text
        assert {sample.name for sample in metric.samples} == {name}


def test_exposition_uses_kubevirts_names() -> None:
    registry = CollectorRegistry()

    class Collector:
        def collect(self) -> list[Metric]:
            return domain_metrics(VMI, "node01", STATS)

    registry.register(Collector())
    text = generate_latest(registry).decode()
    assert "# TYPE kubevirt_vmi_cpu_usage_seconds_total counter\n" in text
    assert "# HELP kubevirt_vmi_cpu_usage_seconds_total Total CPU time spent in all modes" in text
    assert "# TYPE kubevirt_vmi_memory_resident_bytes gauge\n" in text
    assert (
        'kubevirt_vmi_vcpu_seconds_total{id="0",kubernetes_vmi_label_app_kubernetes_io_part_of="web-shop",'
        'kubernetes_vmi_label_kubevirt_io_domain="testvmi",kubernetes_vmi_label_tier="db",name="testvmi",'
        'namespace="ns1",node="node01",state="running"} 5.0\n'
    ) in text


def test_unset_statistics_have_no_sample() -> None:
    stats = copy.deepcopy(STATS)
    stats["Cpu"]["UserSet"] = False
    stats["Memory"] = {**stats["Memory"], "RSSSet": False, "UsableSet": False, "TotalSet": False}
    stats["Vcpu"][0]["TimeSet"] = False
    stats["Net"][0]["RxBytesSet"] = False
    stats["Block"][0]["FlTimesSet"] = False
    stats["Load"]["Load1mSet"] = False
    stats["CPUMapSet"] = False
    got = samples(domain_metrics(VMI, "node01", stats))
    names = {name for name, _ in got}
    for gone in (
        "kubevirt_vmi_cpu_user_usage_seconds_total",
        "kubevirt_vmi_memory_resident_bytes",
        "kubevirt_vmi_memory_usable_bytes",
        "kubevirt_vmi_memory_domain_bytes",
        "kubevirt_vmi_network_receive_bytes_total",
        "kubevirt_vmi_storage_flush_times_seconds_total",
        "kubevirt_vmi_guest_load_1m",
        "kubevirt_vmi_node_cpu_affinity",
    ):
        assert gone not in names
    assert ("kubevirt_vmi_vcpu_seconds_total", (("id", "0"), ("state", "running"))) not in got
    assert ("kubevirt_vmi_vcpu_wait_seconds_total", (("id", "0"),)) in got  # its other fields stay
    rx_traffic = ("kubevirt_vmi_network_traffic_bytes_total", (("interface", "default"), ("type", "rx")))
    assert rx_traffic not in got
    assert ("kubevirt_vmi_network_traffic_bytes_total", (("interface", "default"), ("type", "tx"))) in got
    assert "kubevirt_vmi_cpu_usage_seconds_total" in names


def test_devices_without_a_name_and_missing_sections_are_skipped() -> None:
    stats = {
        "Name": "ns1_testvmi",
        "Cpu": None,
        "Memory": None,
        "Vcpu": None,
        "Net": [{"NameSet": False, "Name": "", **_set(RxBytes=5)}],
        "Block": [{"NameSet": False, "Name": "", "Alias": "", **_set(RdReqs=5)}],
        "Load": None,
    }
    assert domain_metrics(VMI, "node01", stats) == []


def test_interface_label_follows_the_alias_flag() -> None:
    stats = {
        "Net": [
            {"NameSet": True, "Name": "tap1", "AliasSet": False, "Alias": "", **_set(RxPkts=1)},
            # KubeVirt takes a set alias even when it is empty.
            {"NameSet": True, "Name": "tap2", "AliasSet": True, "Alias": "", **_set(TxPkts=2)},
        ]
    }
    got = samples(domain_metrics(VMI, "node01", stats))
    assert got == {
        ("kubevirt_vmi_network_receive_packets_total", (("interface", "tap1"),)): 1.0,
        ("kubevirt_vmi_network_transmit_packets_total", (("interface", ""),)): 2.0,
    }


def test_vcpu_states() -> None:
    vcpus = [_set(State=state, Time=1_000_000_000) for state in (0, 1, 2, 7)]
    got = samples(domain_metrics(VMI, "node01", {"Vcpu": vcpus}))
    assert {dict(labels)["state"] for _, labels in got} == {"offline", "running", "blocked", "unknown"}
    assert [dict(labels)["id"] for _, labels in sorted(got, key=lambda key: dict(key[1])["id"])] == [
        "0",
        "1",
        "2",
        "3",
    ]


def test_cpu_affinity_counts_every_pinned_pair_even_none() -> None:
    got = samples(domain_metrics(VMI, "node01", {"CPUMapSet": True, "CPUMap": [[False, False]]}))
    assert got == {("kubevirt_vmi_node_cpu_affinity", ()): 0.0}
    got = samples(domain_metrics(VMI, "node01", {"CPUMapSet": True, "CPUMap": [[True] * 4] * 3}))
    assert got == {("kubevirt_vmi_node_cpu_affinity", ()): 12.0}


def test_vmi_labels_become_sanitized_label_names() -> None:
    vmi = {
        "metadata": {
            "name": "a",
            "namespace": "b",
            "labels": {"vm.kubevirt.io/name": "x", "my-app": "y", "kubevirt.io/nodeName": "node01"},
        }
    }
    assert vmi_labels(vmi, "n1") == {
        "node": "n1",
        "namespace": "b",
        "name": "a",
        "kubernetes_vmi_label_vm_kubevirt_io_name": "x",
        "kubernetes_vmi_label_my_app": "y",
        "kubernetes_vmi_label_kubevirt_io_nodeName": "node01",
    }
    assert vmi_labels({"metadata": {"name": "a", "namespace": "b"}}, "n1") == {
        "node": "n1",
        "namespace": "b",
        "name": "a",
    }


def test_dirty_rate_in_bytes_per_second() -> None:
    metrics = dirty_rate_metrics(VMI, "node01", _set(CalcStatus=2, MegabytesPerSecond=3))
    assert samples(metrics) == {("kubevirt_vmi_dirty_rate_bytes_per_second", ()): 3.0 * 1024 * 1024}
    assert metrics[0].type == "gauge"
    assert dirty_rate_metrics(VMI, "node01", {"MegabytesPerSecondSet": False, "MegabytesPerSecond": 3}) == []
    assert dirty_rate_metrics(VMI, "node01", None) == []


def test_merge_makes_one_family_per_name_across_vmis() -> None:
    other = copy.deepcopy(VMI)
    other["metadata"]["name"] = "other"
    metrics = merge_metrics([*domain_metrics(VMI, "node01", STATS), *domain_metrics(other, "node01", STATS)])
    names = [metric.name for metric in metrics]
    assert len(names) == len(set(names))
    cpu = next(metric for metric in metrics if metric.name == "kubevirt_vmi_cpu_usage_seconds")
    assert cpu.type == "counter"
    assert sorted(sample.labels["name"] for sample in cpu.samples) == ["other", "testvmi"]
    registry = CollectorRegistry()

    class Collector:
        def collect(self) -> list[Metric]:
            return metrics

    registry.register(Collector())
    assert generate_latest(registry).decode().count("# TYPE kubevirt_vmi_cpu_usage_seconds_total ") == 1


def test_descriptions_list_each_family_once() -> None:
    described = metric_descriptions()
    names = [name for name, _, _ in described]
    assert len(names) == len(set(names)) == 41
    assert {kind for _, kind, _ in described} == {"Counter", "Gauge"}
    assert all(name.endswith("_total") for name, kind, _ in described if kind == "Counter")
    assert "kubevirt_vmi_launcher_memory_overhead_bytes" not in names  # virt-controller's
    emitted = {
        sample.name
        for metric in domain_metrics(VMI, "node01", STATS, filesystems=FILESYSTEMS)
        for sample in metric.samples
    }
    assert emitted <= set(names)
