"""Benchmark: what VM networking adds to a VMI's start, and the pod -> guest data path under TCG.

Run with ``hack/bench-network`` (phase 1 and phase 2, then a real guest) or as a test (the phases only).

* Phase 1 (virt-handler, in the pod's network namespace): bridge, tap and NAT rules for masquerade; the
  pod link moved onto the bridge for the bridge binding. Measured from the call to its return.
* Phase 2 (virt-launcher, in the pod): reading the pod's links and starting the DHCP server until it listens.
* The guest: one real TCG guest on the masquerade binding; ICMP round trips from the "cluster" side to
  the pod's IP (DNATed to the guest) and an HTTP download of 16 MiB from the guest through the NAT.
"""

from __future__ import annotations

import importlib.util
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from kubevirt.log import configure as configure_logging
from kubevirt.network.launcher import LauncherNetwork
from kubevirt.network.setup.pod import PodNetworkSetup
from kubevirt.podroot import PodRoot
from kubevirt_testing.pod_netns import BUSYBOX, POD_IP, Topology

ROUNDS = 10


def _vmi(binding: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "bench", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {
            "domain": {"devices": {"interfaces": [{"name": "default", binding: {}}]}},
            "networks": [{"name": "default", "pod": {}}],
        },
        "status": {"runtimeUser": 0, "migrationTransport": "Unix"},
    }


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"median {statistics.median(ordered) * 1000:6.1f} ms  p90 {p90 * 1000:6.1f} ms"


def measure_phases(rounds: int = ROUNDS) -> dict[str, dict[str, list[float]]]:
    results: dict[str, dict[str, list[float]]] = {}
    for binding in ("masquerade", "bridge"):
        phase1: list[float] = []
        phase2: list[float] = []
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as tmp_dir:
                tmp = Path(tmp_dir)
                resolv = tmp / "resolv.conf"
                resolv.write_text("nameserver 10.96.0.10\nsearch default.svc.cluster.local\n")
                topology = Topology(tmp)
                launcher = LauncherNetwork(root=PodRoot(tmp), resolv_conf=resolv)
                try:
                    vmi = _vmi(binding)
                    setup = PodNetworkSetup(private_dir=tmp / "handler")
                    started = time.perf_counter()
                    setup.setup(vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp))
                    phase1.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    topology.run(topology.pod, lambda vmi=vmi, launcher=launcher: launcher.prepare(vmi))
                    phase2.append(time.perf_counter() - started)
                finally:
                    launcher.stop()
                    topology.close()
        results[binding] = {"phase 1": phase1, "phase 2": phase2}
    return results


def _launcher_harness() -> Any:
    """The launcher tests' harness (the test guest, launchers in pod-like namespaces), loaded by path."""
    path = Path(__file__).parents[1] / "integration" / "launcher" / "conftest.py"
    spec = importlib.util.spec_from_file_location("launcher_harness", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def measure_guest() -> dict[str, float]:
    harness = _launcher_harness()
    guest = harness.build_network_initrd(harness.build_test_guest())
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        topology = Topology(tmp)
        vmi = harness.kernel_boot_vmi("netbench")
        vmi["spec"]["domain"]["firmware"]["kernelBoot"]["container"]["initrdPath"] = (
            f"/boot/{harness.NET_INITRD}"
        )
        vmi["spec"]["domain"]["devices"] = {"interfaces": [{"name": "default", "masquerade": {}}]}
        vmi["spec"]["networks"] = [{"name": "default", "pod": {}}]
        vmi["status"]["migrationTransport"] = "Unix"
        pod = None
        try:
            PodNetworkSetup(private_dir=tmp / "handler").setup(
                vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp)
            )
            (tmp / "pod").mkdir()
            pod = topology.run(topology.pod, lambda: harness.start_launcher_pod(tmp / "pod", guest, vmi))
            started = time.perf_counter()
            pod.client.sync_vmi(vmi)
            sync = time.perf_counter() - started
            pod.wait_for_serial(harness.NET_LEASE_MARKER, 120)
            lease = time.perf_counter() - started

            def ping() -> str:
                command = [BUSYBOX, "ping", "-c", "20", "-i", "0.2", POD_IP]
                return subprocess.run(command, capture_output=True, text=True, timeout=60, check=True).stdout

            def download() -> tuple[int, float]:
                deadline = time.monotonic() + 30
                while True:
                    try:
                        began = time.perf_counter()
                        with urllib.request.urlopen(f"http://{POD_IP}/blob", timeout=60) as response:
                            size = len(response.read())
                        return size, time.perf_counter() - began
                    except OSError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.5)

            size, seconds = topology.run(topology.client, download)
            rtt = re.search(r"min/avg/max = ([\d.]+)/([\d.]+)/([\d.]+)", topology.run(topology.client, ping))
            assert rtt is not None
            return {
                "sync (phase 2, define, start) s": sync,
                "lease after sync s": lease,
                "ping avg ms": float(rtt.group(2)),
                "ping max ms": float(rtt.group(3)),
                "HTTP download MiB/s": size / seconds / (1 << 20),
            }
        finally:
            if pod is not None:
                harness.stop_launcher_pod(pod)
            topology.close()


def report(*, guest: bool) -> str:
    lines = [f"VM networking, {ROUNDS} rounds per binding (stand-in namespaces, DHCP until listening):"]
    for binding, phases in measure_phases().items():
        for phase, samples in phases.items():
            lines.append(f"  {binding:10s} {phase}: {_summary(samples)}")
    if guest:
        lines.append("One TCG guest on the masquerade binding, from the cluster side to the pod IP:")
        lines += [f"  {name}: {value:.2f}" for name, value in measure_guest().items()]
    return "\n".join(lines)


def test_network_benchmark() -> None:
    configure_logging("bench", verbosity=0)
    print(report(guest=False))


if __name__ == "__main__":
    configure_logging("bench", verbosity=0)
    print(report(guest="--no-guest" not in sys.argv))
