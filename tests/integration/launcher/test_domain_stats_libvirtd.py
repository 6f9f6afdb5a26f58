"""GetDomainStats from a real launcher's libvirtd and QEMU (TCG): the answer carries KubeVirt's fields for a
running guest, names its disk after the VMI's, and turns into virt-handler's per-VMI series."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kubevirt.monitoring.virt_handler.domainstats import domain_metrics

pytestmark = pytest.mark.timeout(180)

BOOT_BUDGET = 45.0
MEMORY_KIB = 128 * 1024  # the test VMI's 128Mi


def sample_values(metrics: list[Any], name: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for m in metrics for s in m.samples if s.name == name]


def test_stats_of_a_running_guest_and_its_series(
    launcher_pods: Any, make_vmi: Any, guest_marker: str
) -> None:
    vmi = make_vmi("stats")
    vmi["metadata"]["labels"] = {"kubevirt.io/domain": "stats"}
    vmi["spec"]["volumes"] = [{"name": "scratch", "emptyDisk": {"capacity": "16Mi"}}]
    vmi["spec"]["domain"]["devices"]["disks"] = [{"name": "scratch", "disk": {"bus": "virtio"}}]
    vmi["status"]["volumeStatus"] = [{"name": "scratch", "target": ""}]
    pod = launcher_pods(vmi)
    assert pod.client.get_domain_stats() is None  # no domain yet

    pod.client.sync_vmi(vmi)
    pod.wait_for_serial(guest_marker, BOOT_BUDGET)
    stats = pod.client.get_domain_stats()
    assert stats is not None
    assert stats["Name"] == "default_stats"
    assert stats["UUID"] == vmi["spec"]["domain"]["firmware"]["uuid"]
    cpu, memory = stats["Cpu"], stats["Memory"]
    assert (cpu["TimeSet"], cpu["Time"] > 0) == (True, True)
    assert (memory["TotalSet"], memory["Total"]) == (True, MEMORY_KIB)
    assert (memory["RSSSet"], memory["RSS"] > 0) == (True, True)
    # One vCPU online of the four sockets the VMI may grow to.
    assert stats["NrVirtCpu"] == 1
    assert len(stats["Vcpu"]) == 4
    assert stats["Vcpu"][0]["TimeSet"] is True
    assert stats["Vcpu"][0]["State"] in (1, 2)  # running, or blocked while the guest idles
    assert [vcpu["State"] for vcpu in stats["Vcpu"][1:]] == [0, 0, 0]
    assert stats["CPUMapSet"] is True
    assert len(stats["CPUMap"]) >= 1
    disk = next(block for block in stats["Block"] if block["Alias"] == "scratch")
    assert (disk["NameSet"], disk["Name"][:2]) == (True, "vd")
    assert (disk["RdReqsSet"], disk["CapacitySet"], disk["Capacity"]) == (True, True, 16 << 20)
    assert stats["Net"] == []  # no interface on this VMI

    metrics = domain_metrics(vmi, "node01", stats)
    [(labels, cpu_seconds)] = sample_values(metrics, "kubevirt_vmi_cpu_usage_seconds_total")
    assert cpu_seconds == stats["Cpu"]["Time"] / 1e9
    assert labels == {
        "node": "node01",
        "namespace": "default",
        "name": "stats",
        "kubernetes_vmi_label_kubevirt_io_domain": "stats",
    }
    [(_, domain_bytes)] = sample_values(metrics, "kubevirt_vmi_memory_domain_bytes")
    assert domain_bytes == MEMORY_KIB * 1024
    drives = {labels["drive"] for labels, _ in sample_values(metrics, "kubevirt_vmi_storage_iops_read_total")}
    assert "scratch" in drives
    vcpu_ids = {labels["id"] for labels, _ in sample_values(metrics, "kubevirt_vmi_vcpu_seconds_total")}
    assert "0" in vcpu_ids

    # A paused domain still has statistics; a stopped one has none.
    pod.client.vmi_command("PauseVirtualMachine", vmi)
    paused = pod.client.get_domain_stats()
    assert paused is not None
    assert paused["Cpu"]["Time"] >= stats["Cpu"]["Time"]
    pod.client.vmi_command("KillVirtualMachine", vmi)
    deadline = time.monotonic() + 15
    while pod.client.get_domain_stats() is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pod.client.get_domain_stats() is None
