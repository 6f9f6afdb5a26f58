"""Domain statistics for GetDomainStats, in the shape of KubeVirt's ``DomainStats`` (Go field names).

libvirt's bulk statistics are used where the driver has them; otherwise the basic ``virDomainGetInfo``.
"""

from __future__ import annotations

from typing import Any

import libvirt


def domain_stats(conn: libvirt.virConnect, dom: libvirt.virDomain) -> dict[str, Any]:
    try:
        records = conn.domainListGetStats([dom], 0, 0)
        raw: dict[str, Any] = records[0][1] if records else {}
    except libvirt.libvirtError as err:
        if err.get_error_code() not in (libvirt.VIR_ERR_NO_SUPPORT, libvirt.VIR_ERR_INVALID_ARG):
            raise
        raw = {}
    state, max_kib, mem_kib, vcpus, cpu_ns = dom.info()
    cpu_time = raw.get("cpu.time", cpu_ns)
    vcpu_count = raw.get("vcpu.current", vcpus)
    result: dict[str, Any] = {
        "Name": dom.name(),
        "UUID": dom.UUIDString(),
        "Cpu": {"TimeSet": True, "Time": cpu_time},
        "Memory": {
            "ActualBalloonSet": True,
            "ActualBalloon": raw.get("balloon.current", mem_kib),
            "AvailableSet": "balloon.maximum" in raw or max_kib > 0,
            "Available": raw.get("balloon.maximum", max_kib),
            "RSSSet": "balloon.rss" in raw,
            "RSS": raw.get("balloon.rss", 0),
        },
        "NrVirtCpu": vcpu_count,
        "Vcpu": [
            {
                "StateSet": f"vcpu.{i}.state" in raw,
                "State": raw.get(f"vcpu.{i}.state", 0),
                "TimeSet": f"vcpu.{i}.time" in raw,
                "Time": raw.get(f"vcpu.{i}.time", 0),
            }
            for i in range(vcpu_count)
        ],
        "Net": [],
        "Block": [],
    }
    for i in range(int(raw.get("net.count", 0))):
        result["Net"].append(
            {
                "NameSet": True,
                "Name": raw.get(f"net.{i}.name", ""),
                "RxBytes": raw.get(f"net.{i}.rx.bytes", 0),
                "TxBytes": raw.get(f"net.{i}.tx.bytes", 0),
            }
        )
    for i in range(int(raw.get("block.count", 0))):
        result["Block"].append(
            {
                "NameSet": True,
                "Name": raw.get(f"block.{i}.name", ""),
                "RdBytes": raw.get(f"block.{i}.rd.bytes", 0),
                "WrBytes": raw.get(f"block.{i}.wr.bytes", 0),
            }
        )
    result["State"] = state
    return result
