"""Benchmark: virt-launcher's SyncVirtualMachine latency (libvirt test driver) and its own memory.

Run with ``hack/bench-launcher`` (or ``hack/test tests/perf/test_launcher_bench.py -s``) to see the numbers.

* Sync latency goes through the real gRPC server on a unix socket with the real converter. ``define``
  is the first sync of a VMI (convert, define, start); ``steady`` is a repeated sync of a running
  domain, what virt-handler sends on every reconcile.
* CPU is the launcher's start-up and first sync in CPU-seconds (its conversion worker included), what
  costs wall time under a launcher pod's CPU limit (100m: ten seconds per CPU-second).
* Memory is the launcher process's own (not its libvirtd's nor QEMU's), read from ``/proc/<pid>`` after it
  served one running domain for a while: the test driver runs the domain inside the launcher process,
  so nothing is left out. KubeVirt budgets 100 MiB for its launcher; our target is 40 MiB.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import libvirt

from kubevirt.handler_launcher_com.cmd.client import LauncherClient
from kubevirt.handler_launcher_com.sockets import cmd_socket_path
from kubevirt.log import configure as configure_logging
from kubevirt.virt_launcher.virtwrap.cmd_server.server import CommandServer, serve
from kubevirt.virt_launcher.virtwrap.domain_pipeline import convert_in_process
from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.migration import Migrator
from kubevirt.virt_launcher.virtwrap.node import NodeFacts, accepts_slotless_max_memory

CASE = Path(__file__).parents[1] / "testdata" / "conformance" / "vmi" / "valid"
VMI_FILE = CASE / "080-kernelboot-kernel-initrd-args.defaults.nohotplug.json"
DEFINE_ROUNDS = 100
STEADY_ROUNDS = 500


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": statistics.median(ordered) * 1e3,
        "p99_ms": ordered[int(len(ordered) * 0.99) - 1] * 1e3,
        "mean_ms": statistics.fmean(ordered) * 1e3,
    }


def measure_sync_latency() -> dict[str, dict[str, float]]:
    vmi: dict[str, Any] = json.loads(VMI_FILE.read_text())
    configure_logging("virt-launcher", stream=open(os.devnull, "w"))  # noqa: SIM115 - for the whole run
    libvirt.registerErrorHandler(lambda *_: None, None)
    with tempfile.TemporaryDirectory() as tmp:
        node = Path(tmp) / "node.xml"
        node.write_text("<node/>")
        conn = libvirt.open(f"test://{node}")
        node_facts = NodeFacts(
            emulation=True, slotless_max_memory=accepts_slotless_max_memory(conn.getLibVersion())
        )
        manager = DomainManager(conn, convert_in_process, node=node_facts)
        server = serve(cmd_socket_path(Path(tmp)), CommandServer(manager, Migrator(manager, Path(tmp))))
        client = LauncherClient(cmd_socket_path(Path(tmp)))
        try:
            define: list[float] = []
            for _ in range(DEFINE_ROUNDS):
                start = time.perf_counter()
                client.sync_vmi(vmi)
                define.append(time.perf_counter() - start)
                client.vmi_command("KillVirtualMachine", vmi)
                client.vmi_command("DeleteVirtualMachine", vmi)
            client.sync_vmi(vmi)
            steady: list[float] = []
            for _ in range(STEADY_ROUNDS):
                start = time.perf_counter()
                client.sync_vmi(vmi)
                steady.append(time.perf_counter() - start)
        finally:
            client.close()
            server.stop(grace=0)
            conn.close()
    return {"define": _percentiles(define), "steady": _percentiles(steady)}


def _memory_kib(pid: int) -> dict[str, int]:
    status = {
        line.split(":")[0]: int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith(("VmRSS", "RssAnon", "RssFile"))
    }
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    pss = next(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
    return {**status, "Pss": pss}


def _tree_cpu_seconds(pid: int) -> float:
    """CPU-seconds of a process, its live children and its reaped ones."""
    ticks = os.sysconf("SC_CLK_TCK")

    def fields(of: int) -> list[str]:
        return Path(f"/proc/{of}/stat").read_text().rsplit(")", 1)[1].split()

    own = fields(pid)
    total = sum(int(value) for value in own[11:15])  # utime, stime, cutime, cstime
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            total += sum(int(value) for value in fields(int(child))[11:13])
        except FileNotFoundError:  # it just ended
            continue
    return total / ticks


def measure_launcher_memory() -> dict[str, float]:
    """Start the virt-launcher binary on the test driver, have it run one domain, read its memory."""
    vmi: dict[str, Any] = json.loads(VMI_FILE.read_text())
    launcher = Path(sys.executable).parent / "virt-launcher"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        node = root / "node.xml"
        node.write_text("<node/>")
        share = root / "share"
        process = subprocess.Popen(
            [
                str(launcher),
                "--name",
                vmi["metadata"]["name"],
                "--namespace",
                vmi["metadata"]["namespace"],
                "--uid",
                vmi["metadata"]["uid"],
                "--kubevirt-share-dir",
                str(share),
                "--kubevirt-private-dir",
                str(root / "private"),
                "--libvirt-uri",
                f"test://{node}",
                "--force-emulation",
                "--grace-period-seconds",
                "1",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while not cmd_socket_path(share).exists():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("virt-launcher did not become ready")
                time.sleep(0.05)
            ready = _memory_kib(process.pid)
            ready_cpu = _tree_cpu_seconds(process.pid)
            with LauncherClient(cmd_socket_path(share)) as client:
                started = time.perf_counter()
                client.sync_vmi(vmi)  # built by the launcher's worker process, warmed up at start
                first_sync = time.perf_counter() - started
                synced_cpu = _tree_cpu_seconds(process.pid)
                for _ in range(200):  # what virt-handler does while the VMI runs
                    client.sync_vmi(vmi)
                    client.get_domain()
                    client.get_domain_stats()
                serving = _memory_kib(process.pid)
        finally:
            process.terminate()
            process.wait(30)
    return {
        "ready_rss_mib": ready["VmRSS"] / 1024,
        "first_sync_ms": first_sync * 1e3,
        "ready_cpu_s": ready_cpu,
        "first_sync_cpu_s": synced_cpu - ready_cpu,
        "serving_rss_mib": serving["VmRSS"] / 1024,
        "serving_anon_mib": serving["RssAnon"] / 1024,
        "serving_file_mib": serving["RssFile"] / 1024,
        "serving_pss_mib": serving["Pss"] / 1024,
    }


def report() -> str:
    lines = []
    for kind, numbers in measure_sync_latency().items():
        lines.append(
            f"SyncVirtualMachine {kind:6s} (test driver, gRPC): p50 {numbers['p50_ms']:.2f} ms, "
            f"p99 {numbers['p99_ms']:.2f} ms, mean {numbers['mean_ms']:.2f} ms"
        )
    memory = measure_launcher_memory()
    lines.append(
        f"virt-launcher memory serving one domain: RSS {memory['serving_rss_mib']:.1f} MiB "
        f"(anonymous {memory['serving_anon_mib']:.1f}, file-backed {memory['serving_file_mib']:.1f}, "
        f"PSS {memory['serving_pss_mib']:.1f}); at ready: RSS {memory['ready_rss_mib']:.1f} MiB"
    )
    lines.append(
        f"virt-launcher binary, first SyncVirtualMachine (worker converts): {memory['first_sync_ms']:.1f} ms"
    )
    lines.append(
        f"virt-launcher binary, CPU: {memory['ready_cpu_s']:.2f} s to ready, "
        f"{memory['first_sync_cpu_s']:.2f} s more for the first SyncVirtualMachine"
    )
    return "\n".join(lines)


def test_launcher_benchmark() -> None:
    print()
    print(report())


if __name__ == "__main__":
    print(report())
