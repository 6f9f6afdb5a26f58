"""Domain statistics for GetDomainStats, in the shape of KubeVirt's ``stats.DomainStats`` (Go field names).

As KubeVirt's launcher does, the statistics of a running or paused domain come from libvirt's bulk stats
(balloon, CPU, vCPU, interface, block and dirty-rate groups) together with the domain's memory stats, its
info, its vCPU pinning and, from its XML, the aliases that name its NICs and disks after the VMI's
interfaces and disks. Every value carries a ``<Field>Set`` flag: a statistic the hypervisor did not report
is absent, never zero. The extra ``State`` key (the domain's libvirt state) is this project's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import libvirt
from lxml import etree

from kubevirt.virt_launcher.virtwrap.agent.model import GuestLoad, go_float
from kubevirt.virt_launcher.virtwrap.api.common import USER_ALIAS_PREFIX

# The stats groups KubeVirt asks for (dirty rate only where libvirt-python knows the group).
STATS_TYPES = (
    libvirt.VIR_DOMAIN_STATS_BALLOON
    | libvirt.VIR_DOMAIN_STATS_CPU_TOTAL
    | libvirt.VIR_DOMAIN_STATS_VCPU
    | libvirt.VIR_DOMAIN_STATS_INTERFACE
    | libvirt.VIR_DOMAIN_STATS_BLOCK
    | getattr(libvirt, "VIR_DOMAIN_STATS_DIRTYRATE", 0)
)
# Only a running or paused domain has statistics; for any other the answer is "no domain stats".
STATS_FLAGS = (
    libvirt.VIR_CONNECT_GET_ALL_DOMAINS_STATS_RUNNING | libvirt.VIR_CONNECT_GET_ALL_DOMAINS_STATS_PAUSED
)
_STATS_STATES = (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_PAUSED)
_UNSUPPORTED = (libvirt.VIR_ERR_NO_SUPPORT, libvirt.VIR_ERR_INVALID_ARG)

# DomainStatsMemory field -> libvirt-python's memoryStats() key.
_MEMORY_FIELDS = (
    ("Unused", "unused"),
    ("Cached", "disk_caches"),
    ("Available", "available"),
    ("ActualBalloon", "actual"),
    ("RSS", "rss"),
    ("SwapIn", "swap_in"),
    ("SwapOut", "swap_out"),
    ("MajorFault", "major_fault"),
    ("MinorFault", "minor_fault"),
    ("Usable", "usable"),
)
_CPU_FIELDS = (("Time", "cpu.time"), ("User", "cpu.user"), ("System", "cpu.system"))
_VCPU_FIELDS = (("State", "state"), ("Time", "time"), ("Wait", "wait"), ("Delay", "delay"))
# libvirt's own vCPU parameters: an index with none of them is an offline vCPU.
_VCPU_KNOWN = ("state", "time", "wait", "halted", "delay")
_NET_FIELDS = (
    ("Name", "name"),
    ("RxBytes", "rx.bytes"),
    ("RxPkts", "rx.pkts"),
    ("RxErrs", "rx.errs"),
    ("RxDrop", "rx.drop"),
    ("TxBytes", "tx.bytes"),
    ("TxPkts", "tx.pkts"),
    ("TxErrs", "tx.errs"),
    ("TxDrop", "tx.drop"),
)
_BLOCK_FIELDS = (
    ("Name", "name"),
    ("BackingIndex", "backingIndex"),
    ("Path", "path"),
    ("RdReqs", "rd.reqs"),
    ("RdBytes", "rd.bytes"),
    ("RdTimes", "rd.times"),
    ("WrReqs", "wr.reqs"),
    ("WrBytes", "wr.bytes"),
    ("WrTimes", "wr.times"),
    ("FlReqs", "fl.reqs"),
    ("FlTimes", "fl.times"),
    ("Errors", "errors"),
    ("Allocation", "allocation"),
    ("Capacity", "capacity"),
    ("Physical", "physical"),
)
_DIRTY_RATE_FIELDS = (
    ("CalcStatus", "dirtyrate.calc_status"),
    ("CalcStartTime", "dirtyrate.calc_start_time"),
    ("CalcPeriod", "dirtyrate.calc_period"),
    ("MegabytesPerSecond", "dirtyrate.megabytes_per_second"),
)
# DomainJobInfo field -> libvirt's job statistic, in the Go struct's order (the dirty rate comes last).
_JOB_FIELDS = (
    ("DataTotal", libvirt.VIR_DOMAIN_JOB_DATA_TOTAL),
    ("DataProcessed", libvirt.VIR_DOMAIN_JOB_DATA_PROCESSED),
    ("MemoryBps", libvirt.VIR_DOMAIN_JOB_MEMORY_BPS),
    ("DataRemaining", libvirt.VIR_DOMAIN_JOB_DATA_REMAINING),
)


def domain_stats(
    conn: libvirt.virConnect,
    dom: libvirt.virDomain,
    *,
    load: GuestLoad | None = None,
    migrate_job_info: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """``DomainStats`` of ``dom``, or None when it is neither running nor paused.

    ``load`` is the guest agent's last load report (``Load`` stays null without an agent poller) and
    ``migrate_job_info`` the migration monitor's ``DomainJobInfo``, passed through as KubeVirt does.
    """
    state, _max_kib, mem_kib, nr_virt_cpu, _cpu_ns = dom.info()
    raw = _bulk_stats(conn, dom, state)
    if raw is None:
        return None
    aliases = device_aliases(dom.XMLDesc(0))
    memory = _fields(_memory_stats(dom), _MEMORY_FIELDS)
    memory["TotalSet"], memory["Total"] = True, mem_kib
    return {
        "Name": dom.name(),
        "UUID": dom.UUIDString(),
        "Cpu": _fields(raw, _CPU_FIELDS),
        "Memory": memory,
        "MigrateDomainJobInfo": dict(migrate_job_info) if migrate_job_info is not None else None,
        "Vcpu": _vcpus(raw),
        "Net": [_net(raw, i, aliases) for i in range(int(raw.get("net.count", 0)))],
        "Block": [_block(raw, i, aliases) for i in range(int(raw.get("block.count", 0)))],
        "CPUMapSet": True,
        "CPUMap": [list(row) for row in dom.vcpuPinInfo(libvirt.VIR_DOMAIN_AFFECT_CURRENT)],
        "NrVirtCpu": nr_virt_cpu,
        "DirtyRate": _fields(raw, _DIRTY_RATE_FIELDS),
        "Load": _load(load) if load is not None else None,
        "State": state,
    }


def migration_job_info(dom: libvirt.virDomain) -> dict[str, Any]:
    """``DomainJobInfo`` of the outgoing migration ``dom`` is in, every flag false when there is none.

    Only a migration under way counts (an unbounded job migrating out), as KubeVirt's launcher records job
    statistics only while its source-side monitor sees one; a job libvirt cannot report is none.
    """
    try:
        job: Mapping[str, Any] = dom.jobStats()
    except libvirt.libvirtError:
        job = {}
    outgoing = job.get(libvirt.VIR_DOMAIN_JOB_OPERATION, libvirt.VIR_DOMAIN_JOB_OPERATION_MIGRATION_OUT)
    running = job.get("type") == libvirt.VIR_DOMAIN_JOB_UNBOUNDED
    return job_info(job if running and outgoing == libvirt.VIR_DOMAIN_JOB_OPERATION_MIGRATION_OUT else {})


def job_info(job: Mapping[str, Any]) -> dict[str, Any]:
    """libvirt's job statistics as ``DomainJobInfo``; the dirty rate is in bytes (pages x page size)."""
    info = _fields(job, _JOB_FIELDS)
    rate, page = libvirt.VIR_DOMAIN_JOB_MEMORY_DIRTY_RATE, libvirt.VIR_DOMAIN_JOB_MEMORY_PAGE_SIZE
    info["MemDirtyRateSet"] = rate in job and page in job
    info["MemDirtyRate"] = int(job[rate]) * int(job[page]) if info["MemDirtyRateSet"] else 0
    return info


def device_aliases(domain_xml: str) -> dict[str, str]:
    """Target device -> alias of the domain's NICs and disks, a user alias without its ``ua-`` prefix.

    These are the VMI's interface and disk names, which the metrics label libvirt's devices with.
    """
    root = etree.fromstring(domain_xml.encode())
    aliases: dict[str, str] = {}
    for device in (*root.iterfind("./devices/interface"), *root.iterfind("./devices/disk")):
        target, alias = device.find("target"), device.find("alias")
        if target is None or alias is None or not target.get("dev"):
            continue
        aliases[str(target.get("dev"))] = str(alias.get("name", "")).removeprefix(USER_ALIAS_PREFIX)
    return aliases


def _bulk_stats(conn: libvirt.virConnect, dom: libvirt.virDomain, state: int) -> dict[str, Any] | None:
    """libvirt's bulk stats of ``dom`` (None when filtered out); a driver without them gives none."""
    try:
        records = conn.domainListGetStats([dom], STATS_TYPES, STATS_FLAGS)
    except libvirt.libvirtError as err:
        if err.get_error_code() not in _UNSUPPORTED:
            raise
        return {} if state in _STATS_STATES else None
    return dict(records[0][1]) if records else None


def _memory_stats(dom: libvirt.virDomain) -> dict[str, int]:
    try:
        return dict(dom.memoryStats())
    except libvirt.libvirtError as err:
        if err.get_error_code() not in _UNSUPPORTED:
            raise
        return {}


def _fields(raw: Mapping[str, Any], fields: tuple[tuple[str, str], ...], prefix: str = "") -> dict[str, Any]:
    """Each Go field with its ``Set`` flag, from the parameters named ``prefix + key``."""
    out: dict[str, Any] = {}
    for field, key in fields:
        present = prefix + key in raw
        out[field + "Set"] = present
        out[field] = raw[prefix + key] if present else _zero(field)
    return out


def _zero(field: str) -> Any:
    return "" if field in ("Name", "Path") else 0


def _vcpus(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    count = int(raw.get("vcpu.maximum", raw.get("vcpu.current", 0)))
    vcpus = []
    for i in range(count):
        vcpu = _fields(raw, _VCPU_FIELDS, f"vcpu.{i}.")
        if not any(f"vcpu.{i}.{key}" in raw for key in _VCPU_KNOWN):
            vcpu["StateSet"], vcpu["State"] = True, libvirt.VIR_VCPU_OFFLINE
        vcpus.append(vcpu)
    return vcpus


def _net(raw: Mapping[str, Any], index: int, aliases: Mapping[str, str]) -> dict[str, Any]:
    net = _fields(raw, _NET_FIELDS, f"net.{index}.")
    # Alias sits after Name in the Go struct; the flag says whether the domain XML named the device.
    out = {"NameSet": net.pop("NameSet"), "Name": net.pop("Name"), "AliasSet": False, "Alias": ""}
    if out["NameSet"] and out["Name"] in aliases:
        out["AliasSet"], out["Alias"] = True, aliases[out["Name"]]
    out.update(net)
    return out


def _block(raw: Mapping[str, Any], index: int, aliases: Mapping[str, str]) -> dict[str, Any]:
    block = _fields(raw, _BLOCK_FIELDS, f"block.{index}.")
    out = {"NameSet": block.pop("NameSet"), "Name": block.pop("Name")}
    out["Alias"] = aliases.get(out["Name"], "") if out["NameSet"] else ""
    out.update(block)
    return out


def _load(load: GuestLoad) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, value in (("Load1m", load.load1m), ("Load5m", load.load5m), ("Load15m", load.load15m)):
        out[field + "Set"] = value is not None
        out[field] = go_float(value) if value is not None else 0
    return out
