"""GetDomainStats' answer from libvirt's bulk stats, memory stats, info, vCPU pinning and domain XML, with
KubeVirt's field names, Set flags and the NIC/disk aliases of the domain XML."""

from __future__ import annotations

import json
from typing import Any

import libvirt
import pytest

from kubevirt.virt_launcher.virtwrap.agent.model import GuestLoad
from kubevirt.virt_launcher.virtwrap.stats import STATS_FLAGS, STATS_TYPES, device_aliases, domain_stats

# What QEMU's driver reports for a running 2-of-4-vCPU guest with one NIC, a disk and an empty CD-ROM
# (the hot-pluggable vCPUs 2 and 3 have no parameters: offline).
BULK: dict[str, Any] = {
    "state.state": 1,
    "state.reason": 1,
    "cpu.time": 12_500_000_000,
    "cpu.user": 3_000_000_000,
    "cpu.system": 1_500_000_000,
    "cpu.haltpoll.success.time": 17,
    "cpu.haltpoll.fail.time": 3,
    "balloon.current": 131072,
    "balloon.maximum": 131072,
    "balloon.rss": 98304,
    "vcpu.current": 2,
    "vcpu.maximum": 4,
    "vcpu.0.state": 1,
    "vcpu.0.time": 5_000_000_000,
    "vcpu.0.wait": 0,
    "vcpu.0.delay": 1_000_000,
    "vcpu.1.state": 2,
    "vcpu.1.time": 4_000_000_000,
    "vcpu.1.wait": 7,
    "net.count": 1,
    "net.0.name": "tap0",
    "net.0.rx.bytes": 1000,
    "net.0.rx.pkts": 10,
    "net.0.rx.errs": 0,
    "net.0.rx.drop": 1,
    "net.0.tx.bytes": 2000,
    "net.0.tx.pkts": 20,
    "net.0.tx.errs": 2,
    "net.0.tx.drop": 0,
    "block.count": 2,
    "block.0.name": "vda",
    "block.0.path": "/var/run/kubevirt-ephemeral-disks/disk-data/containerdisk/disk.qcow2",
    "block.0.rd.reqs": 300,
    "block.0.rd.bytes": 4_000_000,
    "block.0.rd.times": 90_000_000,
    "block.0.wr.reqs": 40,
    "block.0.wr.bytes": 163_840,
    "block.0.wr.times": 8_000_000,
    "block.0.fl.reqs": 5,
    "block.0.fl.times": 600_000,
    "block.0.allocation": 2_097_152,
    "block.0.capacity": 4_194_304,
    "block.0.physical": 2_162_688,
    "block.1.name": "sda",
    "dirtyrate.calc_status": 2,
    "dirtyrate.calc_start_time": 1_700_000_000,
    "dirtyrate.calc_period": 1,
    "dirtyrate.megabytes_per_second": 3,
}
MEMORY = {
    "actual": 131072,
    "swap_in": 0,
    "swap_out": 0,
    "major_fault": 300,
    "minor_fault": 80000,
    "unused": 60000,
    "available": 120000,
    "usable": 90000,
    "last_update": 1_700_000_000,
    "disk_caches": 20000,
    "rss": 98304,
}
XML = """<domain type='kvm'><name>default_testvmi</name><devices>
  <disk type='file' device='disk'><target dev='vda' bus='virtio'/><alias name='ua-containerdisk'/></disk>
  <disk type='file' device='cdrom'><target dev='sda' bus='sata'/><alias name='sata0-0-0'/></disk>
  <interface type='ethernet'><target dev='tap0' managed='no'/><alias name='ua-default'/></interface>
  <interface type='ethernet'><alias name='ua-secondary'/></interface>
</devices></domain>"""
UUID = "5b8a2e6c-0000-4000-8000-000000000001"


def libvirt_error(code: int) -> libvirt.libvirtError:
    err = libvirt.libvirtError("refused")
    err.err = (code, libvirt.VIR_FROM_QEMU, "refused", libvirt.VIR_ERR_ERROR, None, None, None, 0, 0)
    return err


class FakeDomain:
    def __init__(self, state: int = libvirt.VIR_DOMAIN_RUNNING) -> None:
        self.state = state
        self.memory: dict[str, int] | libvirt.libvirtError = dict(MEMORY)
        self.xml = XML

    def info(self) -> list[int]:
        return [self.state, 262144, 131072, 2, 12_500_000_000]

    def name(self) -> str:
        return "default_testvmi"

    def UUIDString(self) -> str:  # noqa: N802 - libvirt-python's name
        return UUID

    def XMLDesc(self, flags: int = 0) -> str:  # noqa: N802
        return self.xml

    def memoryStats(self) -> dict[str, int]:  # noqa: N802
        if isinstance(self.memory, libvirt.libvirtError):
            raise self.memory
        return self.memory

    def vcpuPinInfo(self, flags: int) -> tuple[tuple[bool, ...], ...]:  # noqa: N802
        assert flags == libvirt.VIR_DOMAIN_AFFECT_CURRENT
        return ((True, True, False, False), (False, False, True, True))


class FakeConn:
    """Bulk stats for the domains libvirt's state filter keeps (running or paused, as asked)."""

    def __init__(self, bulk: dict[str, Any] | libvirt.libvirtError = BULK) -> None:
        self.bulk = bulk
        self.asked: list[tuple[int, int]] = []

    def domainListGetStats(self, doms: list[FakeDomain], stats: int, flags: int) -> list[Any]:  # noqa: N802
        self.asked.append((stats, flags))
        if isinstance(self.bulk, libvirt.libvirtError):
            raise self.bulk
        kept = {libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_PAUSED}
        return [(dom, dict(self.bulk)) for dom in doms if dom.state in kept]


def stats_of(dom: FakeDomain, conn: FakeConn | None = None, **options: Any) -> dict[str, Any] | None:
    return domain_stats(conn or FakeConn(), dom, **options)


def test_asks_for_kubevirts_stats_groups_of_running_and_paused_domains() -> None:
    conn = FakeConn()
    stats_of(FakeDomain(), conn)
    assert conn.asked == [(STATS_TYPES, STATS_FLAGS)]
    assert STATS_TYPES == (
        libvirt.VIR_DOMAIN_STATS_BALLOON
        | libvirt.VIR_DOMAIN_STATS_CPU_TOTAL
        | libvirt.VIR_DOMAIN_STATS_VCPU
        | libvirt.VIR_DOMAIN_STATS_INTERFACE
        | libvirt.VIR_DOMAIN_STATS_BLOCK
        | libvirt.VIR_DOMAIN_STATS_DIRTYRATE
    )
    assert STATS_FLAGS == (
        libvirt.VIR_CONNECT_GET_ALL_DOMAINS_STATS_RUNNING | libvirt.VIR_CONNECT_GET_ALL_DOMAINS_STATS_PAUSED
    )


def test_identity_cpu_and_counts() -> None:
    stats = stats_of(FakeDomain())
    assert stats is not None
    assert (stats["Name"], stats["UUID"], stats["NrVirtCpu"], stats["State"]) == (
        "default_testvmi",
        UUID,
        2,
        libvirt.VIR_DOMAIN_RUNNING,
    )
    assert stats["Cpu"] == {
        "TimeSet": True,
        "Time": 12_500_000_000,
        "UserSet": True,
        "User": 3_000_000_000,
        "SystemSet": True,
        "System": 1_500_000_000,
    }
    assert stats["CPUMapSet"] is True
    assert stats["CPUMap"] == [[True, True, False, False], [False, False, True, True]]
    assert stats["MigrateDomainJobInfo"] is None
    assert stats["Load"] is None


def test_memory_from_memory_stats_and_the_domain_info() -> None:
    stats = stats_of(FakeDomain())
    assert stats is not None
    assert stats["Memory"] == {
        "UnusedSet": True,
        "Unused": 60000,
        "CachedSet": True,
        "Cached": 20000,
        "AvailableSet": True,
        "Available": 120000,
        "ActualBalloonSet": True,
        "ActualBalloon": 131072,
        "RSSSet": True,
        "RSS": 98304,
        "SwapInSet": True,
        "SwapIn": 0,
        "SwapOutSet": True,
        "SwapOut": 0,
        "MajorFaultSet": True,
        "MajorFault": 300,
        "MinorFaultSet": True,
        "MinorFault": 80000,
        "UsableSet": True,
        "Usable": 90000,
        "TotalSet": True,
        "Total": 131072,  # the domain's current memory (virDomainInfo.memory)
    }


def test_memory_without_a_balloon_reports_only_what_qemu_has() -> None:
    dom = FakeDomain()
    dom.memory = {"rss": 4096}
    stats = stats_of(dom)
    assert stats is not None
    memory = stats["Memory"]
    assert {field for field in memory if field.endswith("Set") and memory[field]} == {"RSSSet", "TotalSet"}
    assert memory["ActualBalloon"] == 0


def test_vcpus_up_to_the_maximum_the_missing_ones_offline() -> None:
    stats = stats_of(FakeDomain())
    assert stats is not None
    assert stats["Vcpu"] == [
        {
            "StateSet": True,
            "State": 1,
            "TimeSet": True,
            "Time": 5_000_000_000,
            "WaitSet": True,
            "Wait": 0,
            "DelaySet": True,
            "Delay": 1_000_000,
        },
        {
            "StateSet": True,
            "State": 2,
            "TimeSet": True,
            "Time": 4_000_000_000,
            "WaitSet": True,
            "Wait": 7,
            "DelaySet": False,
            "Delay": 0,
        },
        *[
            {
                "StateSet": True,
                "State": libvirt.VIR_VCPU_OFFLINE,
                "TimeSet": False,
                "Time": 0,
                "WaitSet": False,
                "Wait": 0,
                "DelaySet": False,
                "Delay": 0,
            }
        ]
        * 2,
    ]


def test_vcpu_count_falls_back_to_the_current_count() -> None:
    bulk = {key: value for key, value in BULK.items() if key != "vcpu.maximum"}
    stats = stats_of(FakeDomain(), FakeConn(bulk))
    assert stats is not None
    assert len(stats["Vcpu"]) == 2


def test_nics_named_after_the_vmis_interfaces() -> None:
    stats = stats_of(FakeDomain())
    assert stats is not None
    assert stats["Net"] == [
        {
            "NameSet": True,
            "Name": "tap0",
            "AliasSet": True,
            "Alias": "default",
            "RxBytesSet": True,
            "RxBytes": 1000,
            "RxPktsSet": True,
            "RxPkts": 10,
            "RxErrsSet": True,
            "RxErrs": 0,
            "RxDropSet": True,
            "RxDrop": 1,
            "TxBytesSet": True,
            "TxBytes": 2000,
            "TxPktsSet": True,
            "TxPkts": 20,
            "TxErrsSet": True,
            "TxErrs": 2,
            "TxDropSet": True,
            "TxDrop": 0,
        }
    ]


def test_a_nic_the_domain_xml_does_not_name_has_no_alias() -> None:
    dom = FakeDomain()
    dom.xml = "<domain><devices/></domain>"
    stats = stats_of(dom)
    assert stats is not None
    assert (stats["Net"][0]["AliasSet"], stats["Net"][0]["Alias"]) == (False, "")
    assert stats["Block"][0]["Alias"] == ""


def test_disks_named_after_the_vmis_disks() -> None:
    stats = stats_of(FakeDomain())
    assert stats is not None
    disk, cdrom = stats["Block"]
    assert disk == {
        "NameSet": True,
        "Name": "vda",
        "Alias": "containerdisk",
        "BackingIndexSet": False,
        "BackingIndex": 0,
        "PathSet": True,
        "Path": "/var/run/kubevirt-ephemeral-disks/disk-data/containerdisk/disk.qcow2",
        "RdReqsSet": True,
        "RdReqs": 300,
        "RdBytesSet": True,
        "RdBytes": 4_000_000,
        "RdTimesSet": True,
        "RdTimes": 90_000_000,
        "WrReqsSet": True,
        "WrReqs": 40,
        "WrBytesSet": True,
        "WrBytes": 163_840,
        "WrTimesSet": True,
        "WrTimes": 8_000_000,
        "FlReqsSet": True,
        "FlReqs": 5,
        "FlTimesSet": True,
        "FlTimes": 600_000,
        "ErrorsSet": False,
        "Errors": 0,
        "AllocationSet": True,
        "Allocation": 2_097_152,
        "CapacitySet": True,
        "Capacity": 4_194_304,
        "PhysicalSet": True,
        "Physical": 2_162_688,
    }
    # libvirt's own alias stays as it is; an empty CD-ROM has only its name.
    assert cdrom["Alias"] == "sata0-0-0"
    assert [field for field in cdrom if field.endswith("Set") and cdrom[field]] == ["NameSet"]


def test_dirty_rate_from_the_bulk_stats() -> None:
    stats = stats_of(FakeDomain())
    assert stats is not None
    assert stats["DirtyRate"] == {
        "CalcStatusSet": True,
        "CalcStatus": 2,
        "CalcStartTimeSet": True,
        "CalcStartTime": 1_700_000_000,
        "CalcPeriodSet": True,
        "CalcPeriod": 1,
        "MegabytesPerSecondSet": True,
        "MegabytesPerSecond": 3,
    }


def test_guest_load_and_migration_job_info_passed_through() -> None:
    job = {"DataTotalSet": True, "DataTotal": 1024}
    stats = stats_of(FakeDomain(), load=GuestLoad(load1m=0.5, load5m=1.0), migrate_job_info=job)
    assert stats is not None
    assert stats["Load"] == {
        "Load1mSet": True,
        "Load1m": 0.5,
        "Load5mSet": True,
        "Load5m": 1,  # a whole float64 as Go writes it
        "Load15mSet": False,
        "Load15m": 0,
    }
    assert stats["MigrateDomainJobInfo"] == job


@pytest.mark.parametrize("state", [libvirt.VIR_DOMAIN_SHUTOFF, libvirt.VIR_DOMAIN_CRASHED])
def test_no_stats_for_a_domain_neither_running_nor_paused(state: int) -> None:
    assert stats_of(FakeDomain(state)) is None


def test_paused_domain_has_stats() -> None:
    assert stats_of(FakeDomain(libvirt.VIR_DOMAIN_PAUSED)) is not None


def test_a_driver_without_bulk_stats_still_answers_for_a_running_domain() -> None:
    conn = FakeConn(libvirt_error(libvirt.VIR_ERR_NO_SUPPORT))
    stats = stats_of(FakeDomain(), conn)
    assert stats is not None
    assert stats["Cpu"]["TimeSet"] is False
    assert (stats["Vcpu"], stats["Net"], stats["Block"]) == ([], [], [])
    assert stats["Memory"]["ActualBalloon"] == 131072
    assert stats_of(FakeDomain(libvirt.VIR_DOMAIN_SHUTOFF), conn) is None


def test_a_driver_without_memory_stats_reports_the_domain_memory_only() -> None:
    dom = FakeDomain()
    dom.memory = libvirt_error(libvirt.VIR_ERR_NO_SUPPORT)
    stats = stats_of(dom)
    assert stats is not None
    assert (stats["Memory"]["TotalSet"], stats["Memory"]["RSSSet"]) == (True, False)


def test_other_libvirt_errors_propagate() -> None:
    with pytest.raises(libvirt.libvirtError):
        stats_of(FakeDomain(), FakeConn(libvirt_error(libvirt.VIR_ERR_OPERATION_FAILED)))
    dom = FakeDomain()
    dom.memory = libvirt_error(libvirt.VIR_ERR_OPERATION_TIMEOUT)
    with pytest.raises(libvirt.libvirtError):
        stats_of(dom)


def test_the_answer_is_json() -> None:
    stats = stats_of(FakeDomain(), load=GuestLoad(load1m=0.25))
    assert json.loads(json.dumps(stats)) == stats


def test_device_aliases_strip_the_user_prefix_and_skip_devices_without_target_or_alias() -> None:
    xml = """<domain><devices>
      <disk><target dev='vdb'/></disk>
      <disk><target dev='vdc'/><alias name='ua-data-volume'/></disk>
      <interface><target dev='tap1'/><alias name='net1'/></interface>
      <interface><alias name='ua-nic'/></interface>
    </devices></domain>"""
    assert device_aliases(xml) == {"vdc": "data-volume", "tap1": "net1"}
