"""CPU seconds and resident memory of KubeVirt's processes, read from ``/proc`` on this host (the
cluster's containers are host processes here, each in its pod's cgroup), grouped by component and, for
launcher pods, by pod."""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

CONTROL_PLANE = ("virt-api", "virt-controller", "virt-handler")
# What runs in a launcher pod, by the part of it that is reported apart.
LAUNCHER_PARTS = {
    "virt-launcher": "launcher",
    "virt-launcher-monitor": "launcher",
    "virt-tail": "launcher",
    "container-disk": "launcher",
    "libvirtd": "libvirt",
    "virtqemud": "libvirt",
    "virtlogd": "libvirt",
    "qemu-system-x86_64": "qemu",
}
POD_UID = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def program(pid: int) -> str:
    """The program's name: the interpreter's script for Python entry points, else argv[0]'s base name."""
    argv = [
        Path(a.decode(errors="replace")).name for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    ]
    if not argv:
        return ""
    if argv[0].startswith("python"):
        script = next((a for a in argv[1:] if not a.startswith("-")), None)
        return script or argv[0]
    return argv[0]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (the peak) of a process, in KiB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values


def pod_uid(pid: int) -> str | None:
    match = POD_UID.search(Path(f"/proc/{pid}/cgroup").read_text())
    return match[1].replace("_", "-") if match else None


@dataclass
class Seen:
    """One process as sampled: its CPU seconds when first and last seen, its peak RSS."""

    name: str
    pod: str | None
    first_cpu: float
    last_cpu: float
    peak_kib: int
    born_during_run: bool


@dataclass
class Sampler:
    """Samples KubeVirt's processes every ``period`` seconds in a thread, so that processes that come and
    go (restarted components, launchers) are all counted."""

    period: float = 1.0
    seen: dict[tuple[int, float], Seen] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _first_scan: bool = True

    def start(self) -> None:
        self.sample()
        self._thread = threading.Thread(target=self._run, name="density-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.sample()

    def sample(self) -> None:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    self._sample(int(entry.name))
                except (OSError, ValueError, IndexError):
                    continue  # the process ended while it was read
        self._first_scan = False

    def _sample(self, pid: int) -> None:
        name = program(pid)
        if name not in CONTROL_PLANE and name not in LAUNCHER_PARTS:
            return
        # Only the cluster's: tests on this host may run the same programs outside any pod.
        pod = pod_uid(pid)
        if pod is None:
            return
        # A pid is reused only after its process ended: its start time tells the two apart.
        started = float(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        cpu = cpu_seconds(pid)
        peak = memory_kib(pid).get("VmHWM", 0)
        key = (pid, started)
        found = self.seen.get(key)
        if found is None:
            born = not self._first_scan
            self.seen[key] = Seen(name, pod, 0.0 if born else cpu, cpu, peak, born)
        else:
            found.last_cpu = cpu
            found.peak_kib = max(found.peak_kib, peak)

    def pids(self, name: str) -> list[int]:
        """The live processes of one program now."""
        return [
            pid for (pid, _), seen in self.seen.items() if seen.name == name and Path(f"/proc/{pid}").exists()
        ]


def component_usage(sampler: Sampler) -> dict[str, dict[str, float]]:
    """Per control-plane component: CPU seconds used during the run (all its processes, restarted ones
    too) and the peak RSS of its largest process."""
    usage = {}
    for component in CONTROL_PLANE:
        processes = [s for s in sampler.seen.values() if s.name == component]
        usage[component] = {
            "cpu_seconds": round(sum(s.last_cpu - s.first_cpu for s in processes), 2),
            "peak_rss_mib": round(max((s.peak_kib for s in processes), default=0) / 1024, 1),
            "processes": len(processes),
        }
    return usage


def launcher_pod_usage(sampler: Sampler, pods: set[str]) -> dict[str, dict[str, float]]:
    """The average launcher pod among ``pods`` (UIDs): CPU seconds and peak RSS of its launcher processes,
    its libvirt daemon(s) and QEMU apart."""
    parts: dict[str, dict[str, list[float]]] = {}
    for pod in pods:
        for part in sorted(set(LAUNCHER_PARTS.values())):
            processes = [
                s for s in sampler.seen.values() if s.pod == pod and LAUNCHER_PARTS.get(s.name) == part
            ]
            entry = parts.setdefault(part, {"cpu": [], "rss": []})
            entry["cpu"].append(sum(s.last_cpu - s.first_cpu for s in processes))
            entry["rss"].append(sum(s.peak_kib for s in processes) / 1024)
    return {
        part: {
            "cpu_seconds": round(sum(v["cpu"]) / len(v["cpu"]), 2),
            "peak_rss_mib": round(sum(v["rss"]) / len(v["rss"]), 1),
        }
        for part, v in parts.items()
    }


def available_memory_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    raise RuntimeError("/proc/meminfo has no MemAvailable")
