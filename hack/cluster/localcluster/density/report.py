"""The density results as a table, with the issue's targets beside the numbers they bound."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

JSON = dict[str, Any]
Say = Callable[[str], None]

# (label, the request rows it sums, the most allowed per object): half of KubeVirt's own writes per VMI.
WRITE_TARGETS = (
    # The pod's own PATCHes (virt-controller's); the kubelet's status patches are pods/status, listed below.
    ("pod PATCH", ("PATCH pods",), 1.1),
    ("VMI UPDATE", ("PUT virtualmachineinstances", "PUT virtualmachineinstances/status"), 2.7),
    ("VMI PATCH", ("PATCH virtualmachineinstances", "PATCH virtualmachineinstances/status"), 0.35),
)
P50_TARGET, P95_TARGET, CPU_TARGET = 30.0, 45.0, 0.3


def _verdict(ok: bool) -> str:
    return "ok" if ok else "OVER TARGET"


def writes(result: JSON) -> list[tuple[str, float, float]]:
    requests = result["api_requests_per_object"]
    return [
        (label, round(sum(requests.get(r, 0.0) for r in rows), 2), limit)
        for label, rows, limit in WRITE_TARGETS
    ]


def show(result: JSON, say: Say = print) -> None:
    kind = "VMs" if result["kind"] == "vm" else "VMIs"
    latency = result["create_to_running_seconds"]
    say(f"\n== {result['count']} {kind} (network: {result['network']}, resources {result['resources']}) ==")
    if result["network"] == "none":
        say("no pod network: --network masquerade measures it once masquerade VMIs run on this cluster")
    say(f"Running: {result['running']}/{result['count']}, settled after {result['seconds_to_settle']} s")
    if latency["p50"] is not None:
        ok = latency["p50"] <= P50_TARGET and latency["p95"] <= P95_TARGET
        say(
            f"creation -> Running   P50 {latency['p50']:6.2f} s   P95 {latency['p95']:6.2f} s   "
            f"max {latency['max']:6.2f} s   (targets {P50_TARGET:.0f}/{P95_TARGET:.0f} s: {_verdict(ok)})"
        )
    say(f"\nwhere the time goes for the median object ({result['median_object']}), and each step's P50:")
    for label, seconds in result["median_phases_seconds"].items():
        p50 = result["phase_p50_seconds"].get(label)
        shown = "-" if seconds is None else f"{seconds:7.2f} s"
        say(f"  {label:<40} {shown:>10}   (P50 {'-' if p50 is None else f'{p50:.2f} s'})")
    say("\nwrites per object against the targets (half of KubeVirt's):")
    for label, value, limit in writes(result):
        say(f"  {label:<14} {value:6.2f}  (<= {limit}: {_verdict(value <= limit)})")
    say(f"  VMI versions seen per object (its creation included): {result['vmi_versions_per_object']}")
    if result.get("writes_by_manager_per_object"):
        say("writes per object by who made them (from managedFields; pods' kubelet status included):")
        for key, value in result["writes_by_manager_per_object"].items():
            say(f"  {key:<60} {value:7.2f}")
    if result.get("events_per_object"):
        say("events per object (source, involved kind, reason; repeats counted):")
        for key, value in result["events_per_object"].items():
            say(f"  {key:<60} {value:7.2f}")
    say("API requests per object (verb resource), watch and list included:")
    for key, value in result["api_requests_per_object"].items():
        say(f"  {key:<60} {value:7.2f}")
    if result.get("failed_requests"):
        say("requests answered with an error during the run (all of them, not per object):")
        for key, value in result["failed_requests"].items():
            say(f"  {key:<60} {value:7d}")
    if result.get("metrics_scrapes"):
        say("/metrics scrape time with every VMI running (median of the pods' slowest, samples served):")
        for component, scraped in result["metrics_scrapes"].items():
            say(f"  {component:<18} {scraped['seconds_p50']:7.3f} s  {scraped['samples']:7d} samples")
    say(f"\nCPU and memory ({result['steady_seconds']:.0f} s steady window after all were Running):")
    header = ("CPU s to Running", "per VMI", "steady CPU s", "peak RSS MiB")
    say(f"  {'component':<18} {header[0]:>17} {header[1]:>8} {header[2]:>13} {header[3]:>13}")
    for name, usage in result["control_plane"].items():
        say(
            f"  {name:<18} {usage['cpu_seconds_to_running']:17.2f} {usage['cpu_seconds_per_vmi']:8.3f} "
            f"{usage['steady_cpu_seconds']:13.2f} {usage['peak_rss_mib']:13.1f}"
        )
    per_vmi = result["control_plane_cpu_seconds_per_vmi"]
    verdict = _verdict(per_vmi <= CPU_TARGET)
    say(f"  control plane CPU per VMI started: {per_vmi:.3f} s (<= {CPU_TARGET}: {verdict})")
    say("  average launcher pod:")
    for part, usage in result["launcher_pod_average"].items():
        say(f"    {part:<16} {usage['cpu_seconds']:8.2f} CPU s   peak RSS {usage['peak_rss_mib']:8.1f} MiB")
    say(f"  node memory per running VMI: {result['node_memory_mib_per_running_vmi']:.1f} MiB")
    if "faults" in result:
        fault = result["faults"]
        say("\nfault run:")
        for injected in fault["injected"]:
            target = f" ({injected['vmi']})" if injected.get("vmi") else ""
            when = f"at {injected['at']} s ({injected['moment']})"
            say(f"  kill -9 {injected['program']}{target} {when}: pids {injected['pids']}")
        say(
            f"  VMIs {fault['vmis']}, Running {fault['running']}, "
            f"active launcher pods {fault['active_pods']}, QEMU processes {fault['qemu_processes']}"
        )
        for problem in fault["problems"]:
            say(f"  PROBLEM: {problem}")
        if not fault["problems"]:
            say("  0 lost, 0 duplicates, 0 orphans")
    left = result["left_after_delete"]
    say(f"after deleting the namespace: {left or 'nothing left'}")
