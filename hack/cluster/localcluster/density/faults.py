"""The fault run: ``kill -9`` of virt-controller, virt-handler, virt-api and one virt-launcher at set
moments of a density run, and the checks afterwards that nothing was lost, doubled or orphaned."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import procs

JSON = dict[str, Any]


@dataclass(frozen=True)
class Fault:
    """Kill every process of ``program`` once ``ready`` says the moment has come."""

    program: str
    moment: str
    ready: Callable[[], bool]


@dataclass
class Injected:
    program: str
    moment: str
    at: float
    pids: list[int]
    pod: str | None = None  # the launcher pod's UID, for a launcher kill
    vmi: str | None = None
    vmi_uid: str | None = None


def kill(pids: list[int]) -> list[int]:
    killed = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except ProcessLookupError:
            continue
    return killed


def kill_component(sampler: procs.Sampler, program: str, moment: str, began: float) -> Injected:
    pids = kill(sampler.pids(program))
    return Injected(program, moment, round(time.time() - began, 1), pids)


def kill_launcher(sampler: procs.Sampler, pod: JSON, vmi: JSON, moment: str, began: float) -> Injected:
    """Kills the virt-launcher process (not its monitor) of one pod."""
    sampler.sample()
    pod_uid = pod["metadata"]["uid"]
    pids = [
        pid
        for (pid, _), seen in list(sampler.seen.items())
        if seen.name == "virt-launcher" and seen.pod == pod_uid and os.path.exists(f"/proc/{pid}")
    ]
    return Injected(
        "virt-launcher",
        moment,
        round(time.time() - began, 1),
        kill(pids),
        pod_uid,
        vmi["metadata"]["name"],
        vmi["metadata"]["uid"],
    )


@dataclass
class Verdict:
    """What the checks after a fault run found; ``ok`` when nothing is wrong."""

    problems: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def active(pod: JSON) -> bool:
    return pod.get("status", {}).get("phase") not in ("Succeeded", "Failed") and not pod["metadata"].get(
        "deletionTimestamp"
    )


def check(
    *,
    vmis: dict[str, JSON],
    pods: list[JSON],
    killed_vmi: str | None,
    killed_uid: str | None,
    restarted_by_vm: bool,
    processes: dict[str, Counter[str]],
) -> Verdict:
    """``vmis`` by name, every launcher pod of the namespace, the VMI whose launcher was killed (and its
    UID then), whether VMs restart it, and the launcher processes on this host by pod UID and program."""
    verdict = Verdict()
    for name, vmi in sorted(vmis.items()):
        phase = vmi.get("status", {}).get("phase")
        if name == killed_vmi:
            uid = vmi["metadata"]["uid"]
            if restarted_by_vm and not (uid != killed_uid and phase == "Running"):
                verdict.problems.append(f"{name}: its launcher was killed and its VM did not restart it")
            if not restarted_by_vm and phase != "Failed":
                verdict.problems.append(f"{name}: its launcher was killed but the VMI is {phase}, not Failed")
        elif phase != "Running":
            verdict.problems.append(f"{name}: {phase}, not Running")
        transitions = [t["phase"] for t in vmi.get("status", {}).get("phaseTransitionTimestamps", [])]
        doubled = [p for p, n in Counter(transitions).items() if n > 1]
        if doubled:
            verdict.problems.append(f"{name}: phase transitions recorded twice: {doubled}")
        if transitions and transitions[-1] != phase:
            verdict.problems.append(
                f"{name}: status.phase {phase} but the last transition is {transitions[-1]}"
            )
    per_vmi = Counter(p["metadata"]["labels"].get("kubevirt.io/created-by", "?") for p in pods if active(p))
    duplicates = {uid: n for uid, n in per_vmi.items() if n > 1}
    if duplicates:
        verdict.problems.append(f"VMIs with more than one active launcher pod: {duplicates}")
    live_pods = {p["metadata"]["uid"] for p in pods if active(p)}
    running_pods = {
        p["metadata"]["uid"]
        for p in pods
        if active(p)
        and vmis.get(p["metadata"]["labels"].get("vm.kubevirt.io/name", ""), {})
        .get("metadata", {})
        .get("uid")
        == p["metadata"]["labels"].get("kubevirt.io/created-by")
        and vmis[p["metadata"]["labels"]["vm.kubevirt.io/name"]].get("status", {}).get("phase") == "Running"
    }
    for pod_uid, programs in sorted(processes.items()):
        if programs["qemu-system-x86_64"] and pod_uid not in running_pods:
            verdict.problems.append(f"pod {pod_uid}: a QEMU process outlives its VMI (orphaned domain)")
        if programs["qemu-system-x86_64"] > 1:
            verdict.problems.append(f"pod {pod_uid}: {programs['qemu-system-x86_64']} QEMU processes")
        if pod_uid not in live_pods and programs.total():
            verdict.problems.append(f"pod {pod_uid} is gone or finished but runs {dict(programs)}")
    missing = sorted(uid for uid in running_pods if not processes.get(uid, Counter())["qemu-system-x86_64"])
    if missing:
        verdict.problems.append(f"Running VMIs without a QEMU process in their pod: {missing}")
    verdict.facts = {
        "vmis": len(vmis),
        "running": sum(1 for v in vmis.values() if v.get("status", {}).get("phase") == "Running"),
        "active_pods": len(live_pods),
        "qemu_processes": sum(p["qemu-system-x86_64"] for p in processes.values()),
    }
    return verdict


def launcher_processes(pod_uids: set[str]) -> dict[str, Counter[str]]:
    """The launcher-pod processes alive now on this host among ``pod_uids``, counted by program."""
    found: dict[str, Counter[str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            name = procs.program(pid)
            if name not in procs.LAUNCHER_PARTS:
                continue
            pod = procs.pod_uid(pid)
        except OSError:
            continue
        if pod in pod_uids:
            found.setdefault(pod, Counter())[name] += 1
    return found
