"""hack/bench-migration [N]: live-migrates one 128 MiB test guest (TCG) N times between two nodes of the
running local cluster and reports, per migration and as medians:

* wall time: the VMIM created to Succeeded, and the phases' order;
* downtime as libvirt reports it (the source launcher's completed-job ``downtime``), with libvirt's own
  migration time and bytes sent;
* downtime as the guest's clients see it: the longest time the guest's HTTP port answered no TCP
  connection (probed every 5 ms at each of its launcher pods' addresses) around the migration;
* whether the guest's serial counter went on from where it was (no reboot, nothing lost);
* CPU hotplug (``--hotplug K``, default 1): K times one more socket for the running VM, the wall time from the
  VM edit to the workload update migration's end and to the guest reporting the vCPU online.

The guest is the module's counting VM of ``localcluster.migration``; KubeVirt is installed through
virt-operator if it is not (and removed again afterwards). Results are saved as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from . import cluster as localcluster
from . import install
from . import migration as mig
from .handle import Cluster
from .layout import Layout
from .timing import say

JSON = dict[str, Any]
VM = "bench-migration"
GOAL_DOWNTIME_MS = 150.0
# After Succeeded, how long the probe keeps going so that a target slow to answer counts as downtime.
SETTLE_SECONDS = 3.0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hack/bench-migration", description=__doc__)
    p.add_argument("count", nargs="?", type=int, default=5, help="migrations (default 5)")
    p.add_argument("--memory", default="128Mi", help="guest memory (default 128Mi)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds for one migration")
    p.add_argument("--hotplug", type=int, default=1, help="sockets plugged in one by one (default 1)")
    p.add_argument(
        "--json", type=Path, default=Path("bench-migration.json"), help="where to save the results"
    )
    return p


def _pod_addresses(cluster: Cluster, namespace: str, uid: str) -> list[str]:
    return [
        str(p["status"]["podIP"])
        for p in mig.launcher_pods(cluster, namespace, uid)
        if p["status"].get("phase") == "Running" and p["status"].get("podIP")
    ]


def migrate_once(cluster: Cluster, namespace: str, probe: mig.ReachabilityProbe, timeout: float) -> JSON:
    vmi = mig.wait_running(cluster, namespace, VM)
    source_node = vmi["status"]["nodeName"]
    uid = vmi["metadata"]["uid"]
    source_pod = mig.pod_on(cluster, namespace, uid, source_node)["metadata"]["name"]
    tick_before = max(mig.console_ticks(cluster, namespace, source_pod) or [0])
    began = time.monotonic()
    name = mig.create_migration(cluster, namespace, VM)
    done = mig.wait_phase(cluster, namespace, name, mig.FINAL_PHASES, timeout)
    succeeded_at = time.monotonic()
    time.sleep(SETTLE_SECONDS)
    result: JSON = {
        "migration": name,
        "phase": mig.phase(done),
        "from": source_node,
        "wall_seconds": round(succeeded_at - began, 3),
        "phases": [p["phase"] for p in done["status"].get("phaseTransitionTimestamps") or []],
        "client_downtime_ms": round(probe.longest_gap(began, succeeded_at + SETTLE_SECONDS) * 1000, 1),
    }
    if result["phase"] != "Succeeded":
        return result
    target_node = mig.vmi(cluster, namespace, VM)["status"]["nodeName"]
    result["to"] = target_node
    timings = mig.poll(
        "the source launcher's migration timings",
        lambda: mig.libvirt_timings(cluster, namespace, source_pod),
        30.0,
    )
    for key in ("downtime_ms", "elapsed_ms", "memory_bytes"):
        if key in timings:
            result[f"libvirt_{key}"] = timings[key]
    target_pod = mig.pod_on(cluster, namespace, uid, target_node)["metadata"]["name"]
    on_source = mig.console_ticks(cluster, namespace, source_pod)
    on_target = mig.console_ticks(cluster, namespace, target_pod)
    result["ticks"] = {"before": tick_before, "source_last": max(on_source or [0]), "target": on_target[:1]}
    if not on_target:
        result["counter_went_on"] = False
    elif on_source:  # where the source's console stopped, the target's goes on (a few bytes may repeat)
        result["counter_went_on"] = max(on_source) - 5 <= on_target[0] <= max(on_source) + 100
    else:  # the finished source's log is gone with its sidecar: the tick before the migration bounds it
        result["counter_went_on"] = tick_before < on_target[0] and 1 not in on_target
    return result


def hotplug_once(cluster: Cluster, namespace: str, timeout: float) -> JSON:
    """One more socket for the running VM: the edit, the workload update migration, the guest's vCPU."""
    known = {m["metadata"]["name"] for m in mig.migrations_of(cluster, namespace, VM)}
    vm = cluster.find("vm", VM, namespace) or {}
    sockets = int(vm["spec"]["template"]["spec"]["domain"]["cpu"]["sockets"]) + 1
    ops = [{"op": "replace", "path": "/spec/template/spec/domain/cpu/sockets", "value": sockets}]
    began = time.monotonic()
    cluster.kubectl("patch", "vm", VM, "-n", namespace, "--type=json", "-p", json.dumps(ops))
    (migration,) = mig.poll(
        "the workload update migration",
        lambda: [m for m in mig.migrations_of(cluster, namespace, VM) if m["metadata"]["name"] not in known],
        timeout,
        0.2,
    )
    done = mig.wait_phase(cluster, namespace, migration["metadata"]["name"], mig.FINAL_PHASES, timeout)
    migrated = time.monotonic()
    result: JSON = {
        "sockets": sockets,
        "phase": mig.phase(done),
        "edit_to_migrated_seconds": round(migrated - began, 3),
    }
    if result["phase"] != "Succeeded":
        return result
    vmi = mig.vmi(cluster, namespace, VM)
    pod = mig.pod_on(cluster, namespace, vmi["metadata"]["uid"], vmi["status"]["nodeName"])["metadata"][
        "name"
    ]
    mig.poll(
        f"the guest with {sockets} vCPUs online",
        lambda: any(cpus == sockets for _, cpus, _ in mig.guest_reports(cluster, namespace, pod)),
        timeout,
        0.2,
    )
    result["edit_to_guest_seconds"] = round(time.monotonic() - began, 3)
    return result


def summary(results: list[JSON]) -> JSON:
    done = [r for r in results if r["phase"] == "Succeeded"]

    def median(key: str) -> float | None:
        return _median(done, key)

    return {
        "migrations": len(results),
        "succeeded": len(done),
        "median_wall_seconds": median("wall_seconds"),
        "median_libvirt_downtime_ms": median("libvirt_downtime_ms"),
        "max_libvirt_downtime_ms": max(
            (r["libvirt_downtime_ms"] for r in done if "libvirt_downtime_ms" in r), default=None
        ),
        "median_client_downtime_ms": median("client_downtime_ms"),
        "max_client_downtime_ms": max((r["client_downtime_ms"] for r in done), default=None),
        "median_libvirt_elapsed_ms": median("libvirt_elapsed_ms"),
        "counter_went_on": all(r.get("counter_went_on") for r in done),
        "goal_downtime_ms": GOAL_DOWNTIME_MS,
    }


def hotplug_summary(results: list[JSON]) -> JSON:
    done = [r for r in results if "edit_to_guest_seconds" in r]
    return {
        "hotplugs": len(results),
        "succeeded": len(done),
        "median_edit_to_migrated_seconds": _median(done, "edit_to_migrated_seconds"),
        "median_edit_to_guest_seconds": _median(done, "edit_to_guest_seconds"),
    }


def _median(results: list[JSON], key: str) -> float | None:
    values = [float(r[key]) for r in results if key in r]
    return round(statistics.median(values), 3) if values else None


def bench_vm(memory: str, hotplugs: int) -> JSON:
    """The counting guest, also reporting its vCPUs, with room for ``hotplugs`` more sockets."""
    vm = mig.counting_guest_vm(VM, memory=memory)
    spec = vm["spec"]["template"]["spec"]
    spec["domain"]["cpu"] = {"sockets": 1, "cores": 1, "threads": 1, "maxSockets": 1 + hotplugs}
    for volume in spec["volumes"]:
        if "cloudInitNoCloud" in volume:
            reporter = mig.REPORTER_USER_DATA.removeprefix("#!/bin/sh\n")
            volume["cloudInitNoCloud"]["userData"] = mig.COUNTER_USER_DATA + reporter
    return vm


def run(
    cluster: Cluster, count: int, memory: str, timeout: float, hotplugs: int
) -> tuple[list[JSON], list[JSON]]:
    nodes = mig.schedulable_nodes(cluster)
    if len(nodes) < 2:
        raise RuntimeError(f"live migration needs two schedulable nodes, the cluster has {nodes}")
    namespace = f"bench-migration-{os.getpid() % 100000}"
    cluster.fresh_namespace(namespace)
    results: list[JSON] = []
    plugged: list[JSON] = []
    try:
        cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(bench_vm(memory, hotplugs)))
        vmi = mig.wait_running(cluster, namespace, VM, 300.0)
        uid = vmi["metadata"]["uid"]
        say(f"guest {VM} ({memory}) Running on {vmi['status']['nodeName']}")
        mig.poll(
            "the guest answering on :80",
            lambda: _pod_addresses(cluster, namespace, uid),
            60.0,
        )
        with mig.ReachabilityProbe(lambda: _pod_addresses(cluster, namespace, uid)) as probe:
            mig.poll("the probe's first answer", lambda: probe.answered, 120.0)
            for index in range(count):
                result = migrate_once(cluster, namespace, probe, timeout)
                results.append(result)
                say(
                    f"  #{index + 1} {result['phase']} {result['from']} -> {result.get('to', '?')}: "
                    f"wall {result['wall_seconds']:.1f} s, "
                    f"libvirt downtime {result.get('libvirt_downtime_ms', '?')} ms "
                    f"(migration {result.get('libvirt_elapsed_ms', '?')} ms), client-side downtime "
                    f"{result['client_downtime_ms']:.0f} ms, counter went on: {result.get('counter_went_on')}"
                )
        for _ in range(hotplugs):
            plug = hotplug_once(cluster, namespace, timeout)
            plugged.append(plug)
            say(
                f"  socket {plug['sockets']} {plug['phase']}: edit -> migrated "
                f"{plug['edit_to_migrated_seconds']:.1f} s, edit -> vCPU online in the guest "
                f"{plug.get('edit_to_guest_seconds', '?')} s"
            )
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
    return results, plugged


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    layout = Layout.from_environment()
    if not localcluster.running(layout):
        print("no local cluster is running: start one with hack/cluster-up --nodes 2", file=sys.stderr)
        return 2
    cluster = Cluster(layout)
    try:
        with (
            install.present(cluster, say),
            install.spec_fields(cluster, workloadUpdateStrategy={"workloadUpdateMethods": ["LiveMigrate"]}),
        ):
            results, plugged = run(cluster, args.count, args.memory, args.timeout, args.hotplug)
    except (RuntimeError, AssertionError) as error:
        print(f"hack/bench-migration failed: {error}", file=sys.stderr)
        return 1
    totals = {**summary(results), "hotplug": hotplug_summary(plugged)}
    saved = {"results": results, "hotplugs": plugged, "summary": totals}
    args.json.write_text(json.dumps(saved, indent=2) + "\n")
    say(json.dumps(totals, indent=2))
    say(f"saved {args.json}")
    complete = totals["succeeded"] == len(results) and totals["hotplug"]["succeeded"] == len(plugged)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
