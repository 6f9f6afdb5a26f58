"""Benchmark: a launcher run as root (libvirt's system mode) against one run as KubeVirt's non-root pod
runs it (uid 107, libvirt's session mode), on a real TCG guest.

Run with ``PYTHONPATH=tests/lib .venv/bin/python tests/perf/test_launcher_modes_bench.py [ROUNDS]`` (needs
root; the rounds alternate the modes, five each by default) or as a test (one round each). Per mode,
medians of:

* ``ready``: the launcher's start until its command socket is ready (libvirtd started, connected);
* ``running``: its start until the domain is Running after the first SyncVirtualMachine;
* ``marker``: its start until the guest's serial marker (the guest booted);
* the resident memory (RSS, and PSS for the launcher) of the launcher process, its libvirtd and QEMU,
  read once the guest booted.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

MODES = ("root", "non-root")


def _launcher_harness() -> ModuleType:
    """The launcher integration tests' harness (launchers started like in their pods)."""
    path = Path(__file__).parents[1] / "integration" / "launcher" / "conftest.py"
    spec = importlib.util.spec_from_file_location("launcher_harness", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _memory_mib(pid: int) -> dict[str, float]:
    rss = next(
        int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmRSS:")
    )
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    pss = next(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
    return {"rss": rss / 1024, "pss": pss / 1024}


def measure_once(harness: ModuleType, mode: str, guest: Path, tmp: Path) -> dict[str, float]:
    non_root = mode == "non-root"
    vmi = harness.kernel_boot_vmi(f"bench-{mode}")
    if non_root:
        vmi["status"]["runtimeUser"] = harness.NON_ROOT_UID
    started = time.monotonic()
    pod = harness.start_launcher_pod(tmp, guest, vmi, non_root=non_root)
    try:
        ready = time.monotonic() - started
        pod.client.sync_vmi(vmi)
        while pod.status()[0] != "Running":
            time.sleep(0.02)
        running = time.monotonic() - started
        pod.wait_for_serial(harness.MARKER, 60)
        marker = time.monotonic() - started
        name = f"{vmi['metadata']['namespace']}_{vmi['metadata']['name']}"
        libvirtd = int(pod.in_pod("/var/run/kubevirt-private/libvirt/libvirtd.pid").read_text())
        [qemu] = harness.guest_pids(f"guest={name},")
        launcher = _memory_mib(pod.process.pid)
        return {
            "ready_s": ready,
            "running_s": running,
            "marker_s": marker,
            "launcher_rss_mib": launcher["rss"],
            "launcher_pss_mib": launcher["pss"],
            "libvirtd_rss_mib": _memory_mib(libvirtd)["rss"],
            "qemu_rss_mib": _memory_mib(qemu)["rss"],
        }
    finally:
        harness.stop_launcher_pod(pod)


def measure(rounds: int) -> dict[str, dict[str, float]]:
    harness = _launcher_harness()
    guest = harness.build_test_guest()
    samples: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as tmp_dir:
        for round_ in range(rounds):
            for mode in MODES:  # alternating, so that a noisy stretch of the machine hits both
                directory = Path(tmp_dir) / f"{mode}-{round_}"
                directory.mkdir()
                samples[mode].append(measure_once(harness, mode, guest, directory))
    return {
        mode: {key: statistics.median(sample[key] for sample in runs) for key in runs[0]}
        for mode, runs in samples.items()
    }


def report(rounds: int) -> str:
    lines = [f"virt-launcher on a real TCG guest, medians of {rounds} round(s) per mode:"]
    for mode, numbers in measure(rounds).items():
        lines.append(
            f"  {mode:8s} ready {numbers['ready_s']:.2f} s, Running {numbers['running_s']:.2f} s, "
            f"guest marker {numbers['marker_s']:.2f} s; launcher RSS {numbers['launcher_rss_mib']:.1f} MiB "
            f"(PSS {numbers['launcher_pss_mib']:.1f}), libvirtd RSS {numbers['libvirtd_rss_mib']:.1f} MiB, "
            f"QEMU RSS {numbers['qemu_rss_mib']:.1f} MiB"
        )
    return "\n".join(lines)


def test_launcher_modes_benchmark() -> None:
    print()
    print(report(1))


if __name__ == "__main__":
    print(report(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
