"""One density round: N objects (VMIs or VMs) created ``interval`` apart in a namespace of their own,
followed until Running, measured and, with faults, checked; the namespace is removed afterwards."""

from __future__ import annotations

import dataclasses
import os
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tenacity import retry, stop_after_delay, wait_exponential

from kubevirt.client import EVENTS, PODS, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES, KubeClient

from .. import metrics
from ..handle import Cluster
from . import apimetrics, faults, procs, timeline, workload

JSON = dict[str, Any]
Say = Callable[[str], None]
STEADY_SECONDS = 20.0
# Scrapes of each component's /metrics once everything runs (their median time is reported).
SCRAPE_ROUNDS = 3


@dataclass(frozen=True)
class Options:
    count: int
    kind: str = "vmi"  # or "vm"
    shape: workload.Shape = field(default_factory=workload.Shape)
    interval: float = 0.1
    timeout: float = 600.0
    faults: bool = False
    steady: float = STEADY_SECONDS


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summary(values: list[float]) -> JSON:
    if not values:
        return {"p50": None, "p95": None, "max": None}
    return {
        "p50": round(statistics.median(values), 2),
        "p95": round(percentile(values, 0.95), 2),
        "max": round(max(values), 2),
    }


class Round:
    def __init__(self, cluster: Cluster, options: Options, say: Say) -> None:
        self.cluster = cluster
        self.options = options
        self.say = say
        self.client = KubeClient.from_kubeconfig(str(cluster.kubeconfig), user_agent="bench-density")
        self.namespace = f"density-{options.kind}-{os.getpid()}"
        self.names = [f"{options.kind}-{i:03d}" for i in range(options.count)]
        self.recorder = timeline.Recorder(self.client, self.namespace)
        self.sampler = procs.Sampler()
        self.injected: list[faults.Injected] = []
        self.created = 0
        self.create_retries = 0
        self.began = 0.0
        self._faults_done = threading.Event()
        self._own: apimetrics.Requests = Counter()

    # -- creating ----------------------------------------------------------------------------------

    def _create(self, name: str) -> None:
        resource = VIRTUAL_MACHINES if self.options.kind == "vm" else VIRTUAL_MACHINE_INSTANCES
        make = workload.vm if self.options.kind == "vm" else workload.vmi
        body = make(name, self.options.shape, self.namespace)
        attempts = 0

        # virt-api may be down (killed by the fault run): its webhooks refuse until it is back.
        @retry(stop=stop_after_delay(120), wait=wait_exponential(multiplier=0.2, max=5), reraise=True)
        def create() -> None:
            nonlocal attempts
            attempts += 1
            self.client.create(resource, self.namespace, body)

        create()
        self.create_retries += attempts - 1

    def _create_all(self) -> None:
        for name in self.names:
            planned = self.began + self.created * self.options.interval
            time.sleep(max(0.0, planned - time.time()))
            marks = self.recorder.of(name)
            marks.mark("create_sent", time.time())
            self._create(name)
            marks.mark("create_returned", time.time())
            self.created += 1

    # -- faults --------------------------------------------------------------------------------------

    def _running(self) -> list[JSON]:
        vmis, _ = self.recorder.snapshot()
        return [v for _, v in sorted(vmis.items()) if v.get("status", {}).get("phase") == "Running"]

    def _inject_faults(self) -> None:
        n = self.options.count
        moments: list[tuple[str, str, Callable[[], bool]]] = [
            ("virt-controller", f"{max(1, n // 2)} created", lambda: self.created >= max(1, n // 2)),
            ("virt-handler", f"{max(1, n // 4)} Running", lambda: self.recorder.running() >= max(1, n // 4)),
            ("virt-api", f"{max(1, n // 2)} Running", lambda: self.recorder.running() >= max(1, n // 2)),
            (
                "virt-launcher",
                f"{max(1, 3 * n // 4)} Running",
                lambda: self.recorder.running() >= max(1, 3 * n // 4),
            ),
        ]
        try:
            for program, moment, ready in moments:
                while not ready():
                    if time.time() - self.began > self.options.timeout:
                        return
                    time.sleep(0.2)
                if program != "virt-launcher":
                    self.injected.append(faults.kill_component(self.sampler, program, moment, self.began))
                    continue
                victim = self._running()[0]
                pod = self._pod_of(victim["metadata"]["name"])
                if pod is not None:
                    self.injected.append(faults.kill_launcher(self.sampler, pod, victim, moment, self.began))
        finally:
            self._faults_done.set()

    def _pod_of(self, name: str) -> JSON | None:
        """The launcher pod of the VMI called ``name`` now."""
        vmis, pods = self.recorder.snapshot()
        vmi = vmis.get(name)
        uid = (vmi or {}).get("metadata", {}).get("uid")
        mine = [p for p in pods if p["metadata"].get("labels", {}).get("kubevirt.io/created-by") == uid]
        return mine[-1] if mine else None

    @property
    def killed(self) -> faults.Injected | None:
        return next((i for i in self.injected if i.program == "virt-launcher"), None)

    # -- waiting -------------------------------------------------------------------------------------

    def _settled(self) -> bool:
        if self.options.faults and not self._faults_done.is_set():
            return False
        vmis, _ = self.recorder.snapshot()
        return all(self._done(vmis.get(name, {"metadata": {}})) for name in self.names)

    def _failed(self) -> list[str]:
        """VMIs that failed though their launcher was not killed: they will not come to Running."""
        vmis, _ = self.recorder.snapshot()
        killed = self.killed
        spared = killed.vmi_uid if killed else None
        if self.options.faults and not self._faults_done.is_set():
            spared = "*"  # the launcher kill may be under way
        return sorted(
            name
            for name, vmi in vmis.items()
            if vmi.get("status", {}).get("phase") == "Failed" and spared not in ("*", vmi["metadata"]["uid"])
        )

    def _done(self, vmi: JSON) -> bool:
        """Running; for the VMI whose launcher was killed: Failed, or run again (a new UID) by its VM."""
        phase = vmi.get("status", {}).get("phase")
        killed = self.killed
        if killed is None or vmi["metadata"].get("name") != killed.vmi:
            return bool(phase == "Running")
        if self.options.kind == "vmi":
            return bool(phase == "Failed")
        return bool(phase == "Running" and vmi["metadata"]["uid"] != killed.vmi_uid)

    def _wait(self) -> None:
        seen = ""
        deadline = self.began + self.options.timeout
        while not self._settled():
            line = f"Running {self.recorder.running()}/{self.options.count}, created {self.created}"
            if self.injected:
                line += ", killed " + ", ".join(i.program for i in self.injected)
            if line != seen:
                self.say(f"  [{time.time() - self.began:6.1f} s] {line}")
                seen = line
            if time.time() > deadline:
                self.say(f"  not settled within {self.options.timeout:.0f} s")
                return
            if failed := self._failed():
                self.say(f"  given up: {', '.join(failed)} Failed, and no fault explains it")
                return
            time.sleep(0.5)
        self.say(
            f"  [{time.time() - self.began:6.1f} s] Running {self.recorder.running()}/{self.options.count}"
        )

    # -- the round -----------------------------------------------------------------------------------

    def run(self) -> JSON:
        self.cluster.fresh_namespace(self.namespace)
        finished = False
        try:
            result = self._measure()
            finished = True
            return result
        finally:
            self.recorder.stop()
            self.sampler.stop()
            if not finished:
                # Gone before anything else is torn down: virt-handler unmounts the containerDisks and
                # virt-controller drops the VMIs' finalizers, so neither may be uninstalled first.
                self._teardown()

    def _measure(self) -> JSON:
        memory_before = procs.available_memory_kib()
        self.sampler.start()
        self.recorder.start()
        Cluster.wait_until("the benchmark's watches", lambda: len(self.recorder.requests) == 4, timeout=60)
        own_before = Counter(self.recorder.requests)
        metrics_before = apimetrics.read(self.cluster)
        self.began = time.time()
        injector = threading.Thread(target=self._inject_faults, daemon=True) if self.options.faults else None
        if injector:
            injector.start()
        self._create_all()
        self._wait()
        metrics_after = apimetrics.read(self.cluster)
        before, after = apimetrics.parse(metrics_before), apimetrics.parse(metrics_after)
        failed = apimetrics.parse(metrics_after, failed=True) - apimetrics.parse(metrics_before, failed=True)
        self._own = self.recorder.requests - own_before
        events = self._events_by_source()
        memory_after = procs.available_memory_kib()
        running_at = time.time()
        self.sampler.sample()
        cpu_at_running = procs.component_usage(self.sampler)
        time.sleep(self.options.steady)
        self.sampler.sample()
        steady = procs.component_usage(self.sampler)
        result = self._result(before, after, memory_before - memory_after, cpu_at_running, steady)
        result["seconds_to_settle"] = round(running_at - self.began, 1)
        result["events_per_object"] = events
        # Conflicts and refused writes: each is a write that has to be made again.
        result["failed_requests"] = {f"{verb} {what}": n for (verb, what), n in sorted(failed.items())}
        result["metrics_scrapes"] = self._scrape_components()
        if self.options.faults:
            verdict = self._check()
            result["faults"] = {
                "injected": [dataclasses.asdict(i) for i in self.injected],
                "problems": verdict.problems,
                **verdict.facts,
            }
        result["left_after_delete"] = self._teardown()
        return result

    def _scrape_components(self) -> dict[str, JSON]:
        """Each component's /metrics read a few times with every VMI running, as Prometheus reads it: the
        slowest pod's median time and the samples it served (virt-handler's grow with its VMIs)."""
        result: dict[str, JSON] = {}
        for component in ("virt-handler", "virt-controller", "virt-api", "virt-operator"):
            rounds = [metrics.scrape_component(self.cluster, component) for _ in range(SCRAPE_ROUNDS)]
            result[component] = {
                "seconds_p50": round(statistics.median(r.seconds for r in rounds), 3),
                "samples": len(rounds[-1].samples),
            }
        return result

    def _events_by_source(self) -> dict[str, float]:
        """The namespace's events (what the POSTs of events were) per object, by who sent them and why."""
        items, _ = self.client.list(EVENTS, self.namespace)
        counted: Counter[str] = Counter()
        for event in items:
            source = (event.get("source") or {}).get("component") or event.get("reportingComponent") or "?"
            kind = (event.get("involvedObject") or {}).get("kind") or "?"
            counted[f"{source} {kind} {event.get('reason')}"] += int(event.get("count") or 1)
        return {key: round(n / self.options.count, 2) for key, n in sorted(counted.items())}

    def _own_requests(self) -> apimetrics.Requests:
        resource = "virtualmachines" if self.options.kind == "vm" else "virtualmachineinstances"
        own: apimetrics.Requests = Counter(self._own)  # the recorder's watches and lists since the reading
        own[("POST", resource)] += self.options.count + self.create_retries
        own[("GET", "")] += 1  # the first /metrics reading
        return own

    def _result(
        self,
        before: apimetrics.Requests,
        after: apimetrics.Requests,
        memory_kib: int,
        cpu_at_running: dict[str, dict[str, float]],
        steady: dict[str, dict[str, float]],
    ) -> JSON:
        marks = self.recorder.marks
        pod_uids: set[str] = set()
        logs: dict[str, str] = {}
        containers: dict[str, dict[str, float]] = {}
        for name in self.names:
            pod = self._pod_of(name)
            if pod is None:
                continue
            pod_uids.add(pod["metadata"]["uid"])
            containers[name] = timeline.container_starts(pod)
            if "compute" in containers[name]:
                marks[name].mark("compute_running", containers[name]["compute"])
            logs[name] = self.cluster.kubectl(
                "logs", "-n", self.namespace, pod["metadata"]["name"], "-c", "compute", check=False
            ).stdout
            for step, when in timeline.launcher_log_marks(logs[name]).items():
                marks[name].mark(step, when)
        latencies = [
            marks[n].at["running"] - marks[n].at["create_sent"]
            for n in self.names
            if "running" in marks[n].at
        ]
        median = timeline.median({n: marks[n] for n in self.names})
        running = self.recorder.running()
        killed = self.killed
        healthy = pod_uids - ({killed.pod} if killed and killed.pod else set())
        per_phase: dict[str, list[float]] = {}
        for name in self.names:
            for label, seconds in marks[name].phases().items():
                if seconds is not None:
                    per_phase.setdefault(label, []).append(seconds)
        control = {
            c: {
                "cpu_seconds_to_running": cpu_at_running[c]["cpu_seconds"],
                "cpu_seconds_per_vmi": round(cpu_at_running[c]["cpu_seconds"] / self.options.count, 3),
                "steady_cpu_seconds": round(steady[c]["cpu_seconds"] - cpu_at_running[c]["cpu_seconds"], 2),
                "peak_rss_mib": steady[c]["peak_rss_mib"],
                "processes": steady[c]["processes"],
            }
            for c in procs.CONTROL_PLANE
        }
        return {
            "kind": self.options.kind,
            "count": self.options.count,
            "running": running,
            "network": self.options.shape.network,
            "resources": {
                "cpu": self.options.shape.cpu,
                "memory": self.options.shape.memory,
                "cpu_limit": self.options.shape.cpu_limit,
            },
            "create_to_running_seconds": summary(latencies),
            "median_object": median,
            "median_phases_seconds": marks[median].phases() if median else {},
            # What the median pod's containers and launcher did, from its creation, to look closer.
            "median_pod": {
                "container_starts": {
                    c: round(t - marks[median].at["create_sent"], 2)
                    for c, t in containers.get(median, {}).items()
                },
                "vmi_versions": [
                    (round(t - marks[median].at["create_sent"], 2), fields)
                    for t, fields in self.recorder.writes.get(median, [])
                ],
                "launcher_log": [
                    (round(t - marks[median].at["create_sent"], 2), m)
                    for t, m in timeline.launcher_log_lines(logs.get(median, ""))
                ],
            }
            if median
            else {},
            "phase_p50_seconds": {k: round(statistics.median(v), 3) for k, v in per_phase.items()},
            "api_requests_per_object": apimetrics.per_object(
                before, after, self._own_requests(), self.options.count
            ),
            "create_retries": self.create_retries,
            "vmi_versions_per_object": round(
                sum(len(w) for n, w in self.recorder.writes.items() if n in self.names) / self.options.count,
                2,
            ),
            "writes_by_manager_per_object": {
                f"{kind} {who}": round(n / self.options.count, 2)
                for (kind, who), n in sorted(self.recorder.writers.items())
            },
            "control_plane": control,
            "control_plane_cpu_seconds_per_vmi": round(
                sum(c["cpu_seconds_to_running"] for c in control.values()) / self.options.count, 3
            ),
            "steady_seconds": self.options.steady,
            "launcher_pod_average": procs.launcher_pod_usage(self.sampler, healthy),
            "node_memory_mib_per_running_vmi": round(memory_kib / 1024 / max(1, running), 1),
            "objects": {n: {k: round(v, 3) for k, v in marks[n].at.items()} for n in self.names},
        }

    def _check(self) -> faults.Verdict:
        """The fault-run checks, again for a while if they fail: a killed launcher's processes and pod
        take a moment to go after its VMI is Failed."""
        deadline = time.time() + 60
        while not (verdict := self._check_once()).ok and time.time() < deadline:
            time.sleep(2.0)
        return verdict

    def _check_once(self) -> faults.Verdict:
        vmis = {
            v["metadata"]["name"]: v for v in self.client.list(VIRTUAL_MACHINE_INSTANCES, self.namespace)[0]
        }
        pods = [p for p in self.client.list(PODS, self.namespace)[0] if is_launcher(p)]
        seen_pods = (
            {p["metadata"]["uid"] for p in self.recorder.pods.values()}
            | {p["metadata"]["uid"] for p in pods}
            | {
                s.pod
                for s in self.sampler.seen.values()
                if s.pod and s.name in procs.LAUNCHER_PARTS and s.born_during_run
            }
        )
        killed = self.killed
        return faults.check(
            vmis=vmis,
            pods=pods,
            killed_vmi=killed.vmi if killed else None,
            killed_uid=killed.vmi_uid if killed else None,
            restarted_by_vm=self.options.kind == "vm",
            processes=faults.launcher_processes({p for p in seen_pods if p}),
        )

    def _teardown(self) -> list[str]:
        """Deletes the namespace and waits until it is gone; returns what of its launcher pods still runs
        on this host then (nothing, when nothing is orphaned)."""
        pod_uids = {s.pod for s in self.sampler.seen.values() if s.pod and s.born_during_run}
        pod_uids |= {p["metadata"]["uid"] for p in self.recorder.pods.values()}
        self.cluster.kubectl("delete", "namespace", self.namespace, "--wait=false", check=False)
        self.cluster.wait_until(
            f"namespace {self.namespace} deleted",
            lambda: self.cluster.find("namespace", self.namespace) is None,
            timeout=300,
        )
        deadline = time.time() + 60
        while (left := faults.launcher_processes({p for p in pod_uids if p})) and time.time() < deadline:
            time.sleep(1.0)
        return [f"pod {uid}: {dict(programs)}" for uid, programs in left.items()]


def is_launcher(pod: JSON) -> bool:
    return bool(pod["metadata"].get("labels", {}).get("kubevirt.io") == "virt-launcher")
