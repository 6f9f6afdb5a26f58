"""When each VMI reached each step on its way to Running, from what the components already record: watch
events on VMIs and launcher pods (seen as they happen), the VMI's phase transitions, the pod's conditions
and the launcher's own structured log lines."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCES, KubeClient, Resource

JSON = dict[str, Any]
CREATED_BY = "kubevirt.io/created-by"

# The launcher's log lines that mark a step (virt-launcher's messages), by the step they end.
LAUNCHER_MARKS = {
    "Marked as ready": "launcher_ready",
    "preparing the domain": "sync_received",
    "domain defined": "defined",
    "domain started": "started",
}

# The steps of one VMI in order, each measured from the mark before it; the label says what it covers.
PHASES = (
    ("admission", "create_sent", "create_returned"),
    ("controller -> pod created", "create_returned", "pod_created"),
    ("scheduling", "pod_created", "pod_scheduled"),
    ("pod start (sandbox, init containers)", "pod_scheduled", "compute_running"),
    ("launcher start (to its first log line)", "compute_running", "first_log"),
    ("launcher ready", "first_log", "launcher_ready"),
    ("handler sync", "launcher_ready", "sync_received"),
    ("define (convert + defineXML)", "sync_received", "defined"),
    ("QEMU start", "defined", "started"),
    ("started -> Running (status write)", "started", "running"),
)


def parse_time(stamp: str) -> float:
    """An RFC 3339 timestamp as seconds since the epoch."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@dataclass
class Marks:
    """Wall-clock seconds at which one VMI reached each step."""

    at: dict[str, float] = field(default_factory=dict)

    def mark(self, step: str, when: float) -> None:
        self.at.setdefault(step, when)

    def phases(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for label, begin, end in PHASES:
            a, b = self.at.get(begin), self.at.get(end)
            out[label] = round(b - a, 3) if a is not None and b is not None else None
        return out


class Recorder:
    """Two watches (VMIs and launcher pods of one namespace) recording when each VMI, by name, was first
    seen in each state; VMI UIDs are kept to tell a VM's restarted VMI apart."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.marks: dict[str, Marks] = {}
        self.vmis: dict[str, JSON] = {}
        self.pods: dict[str, JSON] = {}
        # Every version of each VMI seen, as (when, what changed): which writes it took to get there.
        self.writes: dict[str, list[tuple[float, list[str]]]] = {}
        # Who wrote each version of a VMI or launcher pod after its creation, from managedFields:
        # (kind, "manager operation[/subresource]") -> versions.
        self.writers: Counter[tuple[str, str]] = Counter()
        # Its own requests, by (verb, resource), to take out of the apiserver's counts.
        self.requests: Counter[tuple[str, str]] = Counter()
        self._client = client
        self._namespace = namespace
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(
                target=self._follow, args=(VIRTUAL_MACHINE_INSTANCES, self._on_vmi), daemon=True
            ),
            threading.Thread(target=self._follow, args=(PODS, self._on_pod), daemon=True),
        ]

    def of(self, name: str) -> Marks:
        with self._lock:
            return self.marks.setdefault(name, Marks())

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()

    def snapshot(self) -> tuple[dict[str, JSON], list[JSON]]:
        """The VMIs by name and the launcher pods, as last seen."""
        with self._lock:
            return dict(self.vmis), list(self.pods.values())

    def running(self) -> int:
        vmis, _ = self.snapshot()
        return sum(1 for vmi in vmis.values() if vmi.get("status", {}).get("phase") == "Running")

    def _follow(self, resource: Resource, handle: Callable[[str, JSON, float], None]) -> None:
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    self.requests[("LIST", resource.plural)] += 1
                    items, version = self._client.list(resource, self._namespace)
                    for item in items:
                        handle("ADDED", item, time.time())
                self.requests[("WATCH", resource.plural)] += 1
                for event in self._client.watch(
                    resource, self._namespace, resource_version=version, timeout_seconds=60
                ):
                    if event["type"] == "ERROR":
                        version = ""  # 410 Gone: list again
                        break
                    obj = event["object"]
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if event["type"] != "BOOKMARK":
                        handle(event["type"], obj, time.time())
                    if self._stop.is_set():
                        return
            except Exception:  # the apiserver may be briefly unreachable (or restarting): watch again
                version = ""
                time.sleep(1.0)

    def _on_vmi(self, kind: str, vmi: JSON, now: float) -> None:
        name = vmi["metadata"]["name"]
        with self._lock:
            if kind == "DELETED":
                self.vmis.pop(name, None)
                return
            before = self.vmis.get(name)
            self.vmis[name] = vmi
            fields = changed(before, vmi)
            if before is not None:
                by = writers(before, vmi)
                self.writers.update(("vmi", w) for w in by)
                fields += [f"by {w}" for w in by]
            self.writes.setdefault(name, []).append((now, fields))
        if vmi.get("status", {}).get("phase") == "Running":
            self.of(name).mark("running", now)

    def _on_pod(self, kind: str, pod: JSON, now: float) -> None:
        name = pod["metadata"].get("labels", {}).get("vm.kubevirt.io/name")
        if not name:
            return
        with self._lock:
            if kind == "DELETED":
                self.pods.pop(pod["metadata"]["name"], None)
            else:
                before = self.pods.get(pod["metadata"]["name"])
                if before is not None:
                    self.writers.update(("pod", w) for w in writers(before, pod))
                self.pods[pod["metadata"]["name"]] = pod
        marks = self.of(name)
        marks.mark("pod_created", now)
        if pod["spec"].get("nodeName"):
            marks.mark("pod_scheduled", now)


def changed(before: JSON | None, after: JSON) -> list[str]:
    """The metadata and status fields (and spec, as a whole) that differ between two versions of an
    object; conditions by type."""
    if before is None:
        return ["(created)"]
    found = []
    for part in ("metadata", "status"):
        old, new = before.get(part) or {}, after.get(part) or {}
        for key in sorted(set(old) | set(new)):
            if key in ("resourceVersion", "managedFields", "generation"):
                continue
            if key == "conditions":
                olds = {c["type"]: c for c in old.get(key) or []}
                news = {c["type"]: c for c in new.get(key) or []}
                found += [
                    f"{part}.conditions[{t}]"
                    for t in sorted(set(olds) | set(news))
                    if olds.get(t) != news.get(t)
                ]
            elif old.get(key) != new.get(key):
                found.append(f"{part}.{key}")
    if before.get("spec") != after.get("spec"):
        found.append("spec")
    return found


def writers(before: JSON, after: JSON) -> list[str]:
    """Who made the write from ``before`` to ``after``, from managedFields as "manager
    Operation[/subresource]": the entry it added or whose time it moved. A write also shrinks the entries
    of managers whose fields it took over, so changed fields alone name a writer only when no time moved
    (two writes by one manager within a second)."""

    def entries(obj: JSON) -> dict[str, JSON]:
        found = {}
        for entry in obj.get("metadata", {}).get("managedFields") or []:
            key = " ".join(filter(None, (entry.get("manager"), entry.get("operation"))))
            found[key + (f"/{entry['subresource']}" if entry.get("subresource") else "")] = entry
        return found

    old, new = entries(before), entries(after)
    moved = [key for key, entry in new.items() if key not in old or old[key].get("time") != entry.get("time")]
    changed = [key for key, entry in new.items() if old.get(key) != entry]
    return moved or changed or ["(unattributed)"]


def container_starts(pod: JSON) -> dict[str, float]:
    """When each of a pod's containers (init containers too) started, by name, from its status (to the
    second)."""
    status = pod.get("status", {})
    found = {}
    for container in status.get("initContainerStatuses", []) + status.get("containerStatuses", []):
        state = container.get("state", {})
        started = (state.get("running") or state.get("terminated") or {}).get("startedAt")
        if started:
            found[container["name"]] = parse_time(started)
    return found


def launcher_log_lines(log: str) -> list[tuple[float, str]]:
    """The launcher's JSON log lines as (time, message)."""
    lines = []
    for line in log.splitlines():
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if "timestamp" in entry:
            lines.append((parse_time(str(entry["timestamp"])), str(entry.get("msg", ""))))
    return lines


def launcher_log_marks(log: str) -> dict[str, float]:
    """The steps a launcher's log records, with their times (the first line of each), and its first line."""
    found: dict[str, float] = {}
    for when, message in launcher_log_lines(log):
        for step in ("first_log", LAUNCHER_MARKS.get(message)):
            if step and step not in found:
                found[step] = when
    return found


def median(marks: dict[str, Marks]) -> str | None:
    """The name of the object whose creation → Running time is the median one."""
    timed = sorted(
        (m.at["running"] - m.at["create_sent"], name)
        for name, m in marks.items()
        if {"running", "create_sent"} <= m.at.keys()
    )
    return timed[(len(timed) - 1) // 2][1] if timed else None
