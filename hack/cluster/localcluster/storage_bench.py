"""hack/bench-storage: what persistent storage costs on the running local cluster, as medians over
``--rounds`` rounds where it is repeated:

* provisioning: a claim of each volume mode created with its node chosen (as the scheduler marks a
  WaitForFirstConsumer claim) until it is Bound;
* time to Running: the CirrOS-compatible guest's VM from its containerDisk image against the same guest
  from a filesystem claim filled by examples/pvc-root-disk-import.yaml (the import Job's time is printed
  apart);
* guest sequential throughput: the PVC VM's cloud-init writes and then reads ``--mib`` MiB on a filesystem
  claim's disk.img and on a block claim (page cache dropped in between; QEMU opens both with O_DIRECT,
  KubeVirt's cache=none), and the same bytes of the same files are read (and a file of that size is
  written) on the host with O_DIRECT. The guest's MiB/s over the host's is the figure: what virtio under
  TCG keeps of the disk.

KubeVirt is installed through virt-operator if it is not (and removed again afterwards). Results are saved
as JSON.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import install
from .benchmain import run_and_save
from .handle import Cluster
from .pvc_vms import (
    DataDisk,
    bound_volume,
    claim,
    container_disk_vm,
    import_root_claim,
    pvc_root_vm,
    volume_path,
)
from .timing import median, poll_seconds, say
from .vmis import wait_vmi_phase

JSON = dict[str, Any]
CONTAINER_DISK_VM = "bench-storage-container-disk"
PVC_VM = "bench-storage-pvc"
DISKS = (DataDisk("benchfs", "bench-fs", "BENCHFS"), DataDisk("benchblock", "bench-block", "BENCHBLOCK"))
BLOCK_CLAIMS = {"bench-block"}
RESULT = re.compile(r"storage-bench (\w+) (\d+) write ([\d.]+) ([\d.]+) read ([\d.]+) ([\d.]+)")
CHUNK = 1 << 20


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hack/bench-storage", description=__doc__)
    p.add_argument("--rounds", type=int, default=3, help="provisioning and boot rounds (default 3)")
    p.add_argument("--mib", type=int, default=128, help="MiB the guest writes and reads (default 128)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds for one VM to be Running")
    p.add_argument("--json", type=Path, default=Path("bench-storage.json"), help="where to save the results")
    return p


def provisioning(cluster: Cluster, namespace: str, rounds: int) -> JSON:
    node = cluster.layout.node_name
    seconds: dict[str, list[float]] = {"Filesystem": [], "Block": []}
    for index in range(rounds):
        for mode in seconds:
            name = f"provision-{mode.lower()}-{index}"
            manifest = claim(name, "64Mi", block=mode == "Block", node=node)
            began = time.monotonic()
            cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(manifest))
            poll_seconds(f"claim {name} Bound", _bound(cluster, namespace, name), 120)
            seconds[mode].append(time.monotonic() - began)
            cluster.kubectl("delete", "pvc", name, "-n", namespace, "--wait=true")
    result = {mode: median(values) for mode, values in seconds.items()}
    say(f"provisioning (created to Bound, median of {rounds}): {result} s")
    return result


def _bound(cluster: Cluster, namespace: str, name: str) -> Callable[[], bool]:
    def bound() -> bool:
        found = cluster.find("pvc", name, namespace) or {}
        return bool(found.get("status", {}).get("phase") == "Bound")

    return bound


def _time_to_running(cluster: Cluster, namespace: str, vm: JSON, timeout: float) -> float:
    name = vm["metadata"]["name"]
    began = time.monotonic()
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(vm))
    wait_vmi_phase(cluster, name, namespace, timeout=timeout, interval=0.2)
    took = time.monotonic() - began
    cluster.kubectl("delete", "vm", name, "-n", namespace, "--wait=true", "--timeout=120s")
    poll_seconds(f"VMI {name} gone", lambda: cluster.find("vmi", name, namespace) is None, 120, 0.5)
    return took


def time_to_running(cluster: Cluster, namespace: str, rounds: int, timeout: float) -> JSON:
    began = time.monotonic()
    import_root_claim(cluster, namespace)
    imported = time.monotonic() - began
    container_disk, pvc = [], []
    for _ in range(rounds):
        container_disk.append(
            _time_to_running(cluster, namespace, container_disk_vm(CONTAINER_DISK_VM), timeout)
        )
        pvc.append(_time_to_running(cluster, namespace, pvc_root_vm(PVC_VM), timeout))
    result = {
        "import_job_seconds": round(imported, 2),
        "container_disk_seconds": median(container_disk),
        "pvc_root_seconds": median(pvc),
    }
    say(
        f"VM created to Running (median of {rounds}): containerDisk {result['container_disk_seconds']} s, "
        f"PVC root {result['pvc_root_seconds']} s (the import Job took {result['import_job_seconds']} s)"
    )
    return result


def _guest_script(mib: int) -> str:
    """Cloud-init user data: for each bench disk, write then read ``mib`` MiB, timed by /proc/uptime."""
    serials = " ".join(d.serial for d in DISKS)
    return f"""#!/bin/sh
now() {{ cut -d' ' -f1 /proc/uptime; }}
for serial in {serials}; do
  for d in /sys/block/vd*; do [ "$(cat $d/serial 2>/dev/null)" = "$serial" ] && dev=/dev/${{d##*/}}; done
  w0=$(now); dd if=/dev/zero of=$dev bs=1M count={mib} conv=fsync 2>/dev/null; w1=$(now)
  sync; echo 3 > /proc/sys/vm/drop_caches
  r0=$(now); dd if=$dev of=/dev/null bs=1M count={mib} 2>/dev/null; r1=$(now)
  echo "storage-bench $serial {mib} write $w0 $w1 read $r0 $r1"
done
"""


def _guest_results(cluster: Cluster, namespace: str, timeout: float) -> dict[str, JSON]:
    found: dict[str, JSON] = {}

    def complete() -> bool:
        logs = cluster.kubectl(
            "logs", "-n", namespace, "-l", f"kubevirt.io/vm={PVC_VM}", "-c", "guest-console-log", check=False
        ).stdout
        for match in RESULT.finditer(logs):
            serial, mib = match.group(1), int(match.group(2))
            w0, w1, r0, r1 = (float(match.group(i)) for i in range(3, 7))
            found[serial] = {
                "write_mib_s": round(mib / max(w1 - w0, 0.01), 1),
                "read_mib_s": round(mib / max(r1 - r0, 0.01), 1),
            }
        return len(found) == len(DISKS)

    poll_seconds("the guest's storage results on its console", complete, timeout, 2.0)
    return found


def _host_read_mib_s(path: Path, mib: int) -> float:
    """Reads the first ``mib`` MiB of ``path`` with O_DIRECT (past the page cache, as QEMU's cache=none)."""
    buffer = mmap.mmap(-1, CHUNK)  # page-aligned, as O_DIRECT needs
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        began = time.monotonic()
        for _ in range(mib):
            if os.readv(descriptor, [buffer]) < CHUNK:
                raise AssertionError(f"{path} is shorter than {mib} MiB")
        return round(mib / (time.monotonic() - began), 1)
    finally:
        os.close(descriptor)


def _host_write_mib_s(folder: Path, mib: int) -> float:
    """Writes ``mib`` MiB with O_DIRECT to a scratch file in ``folder`` (removed again), then fsyncs."""
    buffer = mmap.mmap(-1, CHUNK)
    scratch = folder / f".bench-storage-{os.getpid()}"
    descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_DIRECT, 0o600)
    try:
        began = time.monotonic()
        for _ in range(mib):
            os.writev(descriptor, [buffer])
        os.fsync(descriptor)
        return round(mib / (time.monotonic() - began), 1)
    finally:
        os.close(descriptor)
        scratch.unlink()


def throughput(cluster: Cluster, namespace: str, mib: int, timeout: float) -> JSON:
    size = f"{mib + 64}Mi"  # room for disk.img's filesystem overhead and KubeVirt's space toleration
    items = [claim(d.claim, size, block=d.claim in BLOCK_CLAIMS) for d in DISKS]
    cluster.kubectl(
        "create",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=json.dumps({"kind": "List", "apiVersion": "v1", "items": items}),
    )
    vm = pvc_root_vm(PVC_VM, DISKS, user_data=_guest_script(mib))
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(vm))
    wait_vmi_phase(cluster, PVC_VM, namespace, timeout=timeout)
    guest = _guest_results(cluster, namespace, timeout)
    result: JSON = {}
    for disk in DISKS:
        path = volume_path(cluster, bound_volume(cluster, namespace, disk.claim))
        image = path / "disk.img" if path.is_dir() else path
        # The scratch file goes beside the volumes, not into the user's volume.
        host = {
            "read_mib_s": _host_read_mib_s(image, mib),
            "write_mib_s": _host_write_mib_s(path.parent, mib),
        }
        measured = guest[disk.serial]
        result[disk.claim] = {
            "guest": measured,
            "host": host,
            "read_ratio": round(measured["read_mib_s"] / host["read_mib_s"], 3),
            "write_ratio": round(measured["write_mib_s"] / host["write_mib_s"], 3),
        }
        say(
            f"{disk.claim}: guest write {measured['write_mib_s']} MiB/s, "
            f"read {measured['read_mib_s']} MiB/s; "
            f"host (O_DIRECT) write {host['write_mib_s']} MiB/s, read {host['read_mib_s']} MiB/s; "
            f"guest/host read {result[disk.claim]['read_ratio']}, write {result[disk.claim]['write_ratio']}"
        )
    return result


def run(cluster: Cluster, rounds: int, mib: int, timeout: float) -> JSON:
    namespace = f"bench-storage-{os.getpid() % 100000}"
    cluster.fresh_namespace(namespace)
    try:
        return {
            "provisioning_seconds": provisioning(cluster, namespace, rounds),
            "time_to_running": time_to_running(cluster, namespace, rounds, timeout),
            "throughput": throughput(cluster, namespace, mib, timeout),
        }
    finally:
        cluster.kubectl(
            "delete", "vm", "--all", "-n", namespace, "--wait=true", "--timeout=120s", check=False
        )
        cluster.kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=120s", check=False)


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)

    def measure(cluster: Cluster) -> object:
        with install.present(cluster, say):
            return run(cluster, args.rounds, args.mib, args.timeout)

    return run_and_save("hack/bench-storage", args.json, measure)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
