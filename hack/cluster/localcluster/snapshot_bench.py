"""hack/bench-snapshot: how long VM snapshots and restores take on the running local cluster, as medians
over ``--rounds`` rounds.

The CirrOS-compatible guest runs from its containerDisk with a ``--gib`` GiB block claim as a data disk,
filled with data on the host before the first boot (the CSI driver copies what a volume holds, so an
empty sparse volume would measure nothing). Each round:

* snapshot: a VirtualMachineSnapshot of the running VM, created until ``readyToUse``;
* restore: the VM stopped, a VirtualMachineRestore created until ``complete`` (a new claim from the
  VolumeSnapshot, the VM's spec rewritten), then the VM started: restore created until the VMI is Running.

KubeVirt is installed through virt-operator if it is not (and removed again afterwards), with the
``Snapshot`` feature gate on for the run. Results are saved as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from . import install
from .benchmain import run_and_save
from .handle import Cluster
from .pvc_vms import DataDisk, bound_volume, claim, container_disk_vm, volume_path
from .timing import median, poll_seconds, say
from .vmis import wait_vmi_phase

JSON = dict[str, Any]
VM = "bench-snapshot"
DATA = DataDisk("data", "bench-snapshot-data", "BENCHSNAP")
SNAPSHOT_API = "snapshot.kubevirt.io/v1beta1"
VM_REF = {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": VM}
CHUNK = 1 << 20


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hack/bench-snapshot", description=__doc__)
    p.add_argument("--rounds", type=int, default=3, help="snapshot and restore rounds (default 3)")
    p.add_argument("--gib", type=int, default=1, help="GiB of the data claim, all written (default 1)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for any one step")
    p.add_argument("--json", type=Path, default=Path("bench-snapshot.json"), help="where to save the results")
    return p


def _create(cluster: Cluster, namespace: str, obj: JSON) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(obj))


def _field_true(cluster: Cluster, kind: str, name: str, namespace: str, field: str) -> bool:
    found = cluster.find(kind, name, namespace) or {}
    return found.get("status", {}).get(field) is True


def _run_strategy(cluster: Cluster, namespace: str, strategy: str) -> None:
    patch = json.dumps({"spec": {"runStrategy": strategy}})
    cluster.kubectl("patch", "vm", VM, "-n", namespace, "--type=merge", "-p", patch)


def _fill(path: Path, gib: int) -> None:
    """Writes data (not zeros: a sparse copy would skip those) over the whole volume file."""
    block = bytes(range(256)) * (CHUNK // 256)
    with path.open("r+b") as volume:
        for _ in range(gib * 1024):
            volume.write(block)
        volume.flush()
        os.fsync(volume.fileno())


def prepare(cluster: Cluster, namespace: str, gib: int, timeout: float) -> None:
    node = cluster.layout.node_name
    _create(cluster, namespace, claim(DATA.claim, f"{gib}Gi", block=True, node=node))
    poll_seconds(
        "the data claim Bound",
        lambda: (cluster.find("pvc", DATA.claim, namespace) or {}).get("status", {}).get("phase") == "Bound",
        120,
    )
    began = time.monotonic()
    _fill(volume_path(cluster, bound_volume(cluster, namespace, DATA.claim)), gib)
    say(f"wrote {gib} GiB into the claim in {time.monotonic() - began:.1f} s")
    _create(cluster, namespace, container_disk_vm(VM, (DATA,)))
    wait_vmi_phase(cluster, VM, namespace, timeout=timeout, interval=0.5)


def one_round(cluster: Cluster, namespace: str, index: int, timeout: float) -> tuple[float, float, float]:
    """(snapshot created → readyToUse, restore created → complete, restore created → Running)."""
    snapshot_name, restore_name = f"snap-{index}", f"restore-{index}"
    snapshot = {
        "apiVersion": SNAPSHOT_API,
        "kind": "VirtualMachineSnapshot",
        "metadata": {"name": snapshot_name},
        "spec": {"source": VM_REF},
    }
    began = time.monotonic()
    _create(cluster, namespace, snapshot)
    poll_seconds(
        f"snapshot {snapshot_name} readyToUse",
        lambda: _field_true(cluster, "vmsnapshot", snapshot_name, namespace, "readyToUse"),
        timeout,
    )
    snapshot_seconds = time.monotonic() - began

    vmi = cluster.find("vmi", VM, namespace) or {}
    _run_strategy(cluster, namespace, "Halted")
    poll_seconds("the VMI gone", lambda: cluster.find("vmi", VM, namespace) is None, timeout, 0.5)
    restore = {
        "apiVersion": SNAPSHOT_API,
        "kind": "VirtualMachineRestore",
        "metadata": {"name": restore_name},
        "spec": {"target": VM_REF, "virtualMachineSnapshotName": snapshot_name},
    }
    began = time.monotonic()
    _create(cluster, namespace, restore)
    poll_seconds(
        f"restore {restore_name} complete",
        lambda: _field_true(cluster, "vmrestore", restore_name, namespace, "complete"),
        timeout,
    )
    restore_seconds = time.monotonic() - began
    _run_strategy(cluster, namespace, "Always")
    old_uid = vmi.get("metadata", {}).get("uid")
    wait_vmi_phase(cluster, VM, namespace, timeout=timeout, other_than_uid=old_uid, interval=0.5)
    running_seconds = time.monotonic() - began
    say(
        f"round {index + 1}: snapshot → readyToUse {snapshot_seconds:.1f} s, restore → complete "
        f"{restore_seconds:.1f} s, restore → Running {running_seconds:.1f} s"
    )
    cluster.kubectl("delete", "vmrestore", restore_name, "-n", namespace, "--wait=true")
    cluster.kubectl("delete", "vmsnapshot", snapshot_name, "-n", namespace, "--wait=true", "--timeout=120s")
    return snapshot_seconds, restore_seconds, running_seconds


def run(cluster: Cluster, rounds: int, gib: int, timeout: float) -> JSON:
    namespace = f"bench-snapshot-{os.getpid() % 100000}"
    cluster.fresh_namespace(namespace)
    try:
        prepare(cluster, namespace, gib, timeout)
        measured = [one_round(cluster, namespace, index, timeout) for index in range(rounds)]
        result = {
            "gib": gib,
            "rounds": rounds,
            "snapshot_to_ready_seconds": median([m[0] for m in measured]),
            "restore_to_complete_seconds": median([m[1] for m in measured]),
            "restore_to_running_seconds": median([m[2] for m in measured]),
        }
        say(
            f"{gib} GiB claim, median of {rounds}: "
            f"snapshot → readyToUse {result['snapshot_to_ready_seconds']} s, "
            f"restore → complete {result['restore_to_complete_seconds']} s, "
            f"restore → Running {result['restore_to_running_seconds']} s"
        )
        return result
    finally:
        cluster.kubectl(
            "delete", "vm", "--all", "-n", namespace, "--wait=true", "--timeout=120s", check=False
        )
        cluster.kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=180s", check=False)


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)

    def measure(cluster: Cluster) -> object:
        with install.present(cluster, say), install.feature_gates(cluster, "Snapshot"):
            return run(cluster, args.rounds, args.gib, args.timeout)

    return run_and_save("hack/bench-snapshot", args.json, measure)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
