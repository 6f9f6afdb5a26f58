"""The cluster's numbers: cluster-up time, idle memory of its processes, cluster-down time, image sizes."""

from __future__ import annotations

import json
import time
from pathlib import Path

from . import cluster, processes
from .layout import Layout

SETTLE_SECONDS = 30.0


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def run(layout: Layout) -> int:
    if cluster.running(layout):
        print("a cluster is running: run hack/cluster-down first, the benchmark measures a fresh start")
        return 2
    began = time.monotonic()
    cluster.up(layout)
    up_seconds = time.monotonic() - began
    time.sleep(SETTLE_SECONDS)
    print(f"\nidle resident memory {SETTLE_SECONDS:.0f} s after cluster-up:")
    total = 0
    for record in processes.recorded(layout.pids):
        kib = rss_kib(record.pid)
        total += kib
        print(f"  {record.name:<26} {kib / 1024:8.1f} MiB")
    print(f"  {'total':<26} {total / 1024:8.1f} MiB")
    began = time.monotonic()
    left = cluster.down(layout)
    down_seconds = time.monotonic() - began
    print("\nimages (OCI archives, uncompressed layers):")
    for meta in sorted((layout.cache / "images" / "archives").glob("*.json")):
        name = json.loads(meta.read_text())["name"]
        print(f"  {name:<44} {meta.with_suffix('.tar').stat().st_size / 1e6:8.1f} MB")
    print("\nKubernetes binaries:")
    for binary in sorted(layout.kubernetes_bin.iterdir()):
        print(f"  {binary.name:<26} {binary.stat().st_size / 1e6:8.1f} MB")
    print(f"\ncluster-up {up_seconds:.1f} s, cluster-down {down_seconds:.1f} s, left over: {len(left)}")
    return 1 if left else 0
