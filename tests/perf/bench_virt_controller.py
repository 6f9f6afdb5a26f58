"""Benchmark: virt-controller on the local cluster, VM create → launcher pod scheduled.

Run with ``hack/bench-virt-controller [N]`` on a running local cluster (``hack/cluster-up``). It deploys
virt-controller (two replicas, from the image ``hack/build-images`` makes), equips the node as virt-handler
would, creates N VirtualMachines (runStrategy Always) 100 ms apart, and measures for each the time from its
creation to its launcher pod being bound to the node. It prints, and writes as JSON (``--json FILE``):

* P50, P95 and max of create → scheduled;
* the API requests per VM by verb and resource, from the apiserver's ``apiserver_request_total`` read
  before and after (the benchmark's own requests — its creates, its one watch, its metric reads — are
  taken out);
* the leading virt-controller's CPU seconds over the run and its resident memory (current and peak), read
  from ``/proc`` on this host, where the cluster's containers run.

The VMs ask for 10m CPU and 16Mi of memory without the launcher overhead so that N pods fit on one small
node; no guest boots: virt-handler is not deployed (N emulated guests would not fit on the machine), and the
node is given the device resources its device plugins would advertise. The kubelet zeroes those resources
once a real device plugin has registered them and gone, so run it on a cluster where virt-handler has not
run since the kubelet started (``hack/cluster-down && hack/cluster-up``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import cluster as localcluster  # noqa: E402
from localcluster import kubevirt  # noqa: E402
from localcluster.density import apimetrics, procs  # noqa: E402
from localcluster.density.run import percentile  # noqa: E402
from localcluster.handle import Cluster  # noqa: E402
from localcluster.layout import Layout  # noqa: E402

from kubevirt.client import PODS, VIRTUAL_MACHINES, KubeClient  # noqa: E402
from kubevirt.virt_operator.resource.rbac import controller_rbac  # noqa: E402

LAUNCHER = "localhost/kubevirt/virt-launcher:devel"


def _vm(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {
            "runStrategy": "Always",
            "template": {
                "metadata": {"labels": {"bench": "virt-controller"}},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "domain": {
                        "devices": {},
                        "resources": {
                            "requests": {"cpu": "10m", "memory": "16Mi"},
                            "overcommitGuestOverhead": True,
                        },
                    },
                },
            },
        },
    }


class ScheduledWatch:
    """Records when each VM's launcher pod is first seen bound to a node (one watch for all)."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.scheduled: dict[str, float] = {}
        self._client = client
        self._namespace = namespace
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        _, version = self._client.list(PODS, self._namespace)
        self._version = version
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for event in self._client.watch(
                PODS, self._namespace, resource_version=self._version, timeout_seconds=30
            ):
                pod = event["object"]
                self._version = pod["metadata"].get("resourceVersion", self._version)
                if event["type"] not in ("ADDED", "MODIFIED"):
                    continue
                name = pod["metadata"].get("labels", {}).get("vm.kubevirt.io/name")
                if name and pod["spec"].get("nodeName") and name not in self.scheduled:
                    self.scheduled[name] = time.monotonic()
                if self._stop.is_set():
                    return

    def stop(self) -> None:
        self._stop.set()


def _controller_processes() -> dict[str, int]:
    """virt-controller processes on this host, by pod name (their HOSTNAME)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            if not any(part.endswith(b"/virt-controller") for part in command[:2]):
                continue
            environ = dict(
                item.split(b"=", 1) for item in (entry / "environ").read_bytes().split(b"\0") if b"=" in item
            )
        except OSError:
            continue
        found[environ.get(b"HOSTNAME", b"?").decode()] = int(entry.name)
    return found


def run(count: int, interval: float, timeout: float) -> dict[str, Any]:
    layout = Layout.from_environment()
    if not localcluster.running(layout):
        raise SystemExit("no local cluster is running: start one with hack/cluster-up")
    subprocess.run(["bash", str(REPO / "hack" / "build-images"), "virt-controller"], check=True)
    cluster = Cluster(layout)
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", str(REPO / "manifests" / "generated")
    )
    node = kubevirt.node_name(cluster)
    kubevirt.equip_node(cluster, node, devices=max(110, count))
    kubevirt.deploy_virt_controller(
        cluster, rbac=controller_rbac(kubevirt.INSTALL_NAMESPACE), launcher_image=LAUNCHER
    )
    namespace = f"bench-vc-{os.getpid()}"
    cluster.kubectl("create", "namespace", namespace)
    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig), user_agent="bench-virt-controller")
    try:
        (leader,) = kubevirt.controller_leaders(cluster)
        pid = _controller_processes()[leader]
        watch = ScheduledWatch(client, namespace)
        watch.start()
        before = apimetrics.request_counts(cluster)
        cpu_before = procs.cpu_seconds(pid)
        created: dict[str, float] = {}
        for index in range(count):
            name = f"vm-{index:04d}"
            created[name] = time.monotonic()
            client.create(VIRTUAL_MACHINES, namespace, _vm(name))
            time.sleep(interval)
        deadline = time.monotonic() + timeout
        while len(watch.scheduled) < count and time.monotonic() < deadline:
            time.sleep(0.2)
        after = apimetrics.request_counts(cluster)
        cpu = procs.cpu_seconds(pid) - cpu_before
        memory = procs.memory_kib(pid)
        watch.stop()
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        kubevirt.remove_virt_controller(cluster)
        kubevirt.unequip_node(cluster, node)
    latencies = [watch.scheduled[name] - created[name] for name in created if name in watch.scheduled]
    requests = after - before
    # The benchmark's own: its VM creates, one list and one watch of pods, one metrics read.
    requests[("POST", "virtualmachines")] -= count
    requests[("LIST", "pods")] -= 1
    requests[("WATCH", "pods")] -= 1
    requests[("GET", "")] -= 1
    per_vm = {
        f"{verb} {resource or '(non-resource)'}": n / count
        for (verb, resource), n in requests.items()
        if n > 0
    }
    return {
        "vms": count,
        "scheduled": len(latencies),
        "create_to_scheduled_seconds": {
            "p50": statistics.median(latencies) if latencies else None,
            "p95": percentile(latencies, 0.95) if latencies else None,
            "max": max(latencies) if latencies else None,
        },
        "api_requests_per_vm": dict(sorted(per_vm.items())),
        "virt_controller": {
            "cpu_seconds": round(cpu, 2),
            "rss_mib": memory["VmRSS"] / 1024,
            "peak_rss_mib": memory["VmHWM"] / 1024,
        },
    }


def _print(result: dict[str, Any]) -> None:
    latency = result["create_to_scheduled_seconds"]
    print(f"VMs created: {result['vms']}, launcher pods scheduled: {result['scheduled']}")
    if latency["p50"] is not None:
        p50, p95, worst = latency["p50"], latency["p95"], latency["max"]
        print(f"create -> scheduled: P50 {p50:.2f} s, P95 {p95:.2f} s, max {worst:.2f} s")
    controller = result["virt_controller"]
    print(
        f"virt-controller (leader): {controller['cpu_seconds']:.2f} CPU s, "
        f"RSS {controller['rss_mib']:.1f} MiB (peak {controller['peak_rss_mib']:.1f} MiB)"
    )
    print("API requests per VM (verb resource):")
    for key, value in result["api_requests_per_vm"].items():
        print(f"  {key:<55} {value:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", nargs="?", type=int, default=100, help="VMs to create (default 100)")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between creates (default 0.1)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for scheduling")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args()
    result = run(args.count, args.interval, args.timeout)
    _print(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
