"""Live migration on the cluster, for the functional tests and the migration benchmark: a test-guest VM
that counts on its serial console, migrations and where they end, the launcher's libvirt timings, and a
reachability probe that sees the guest's downtime from outside.

The guest's user data starts a loop printing ``tick N`` on ttyS0 about every 10 ms. Its serial log (the
launcher pod's ``guest-console-log`` container) shows the counter carrying on across a migration; the
probe connects to the guest's HTTP port (through the launcher pod's masquerade) every few milliseconds
at whichever pod address is current, and the longest stretch without an answer is the downtime a client
of the guest sees.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from .handle import Cluster

JSON = dict[str, Any]
GUEST_IMAGE = "localhost/kubevirt/test-guest-container-disk:devel"
TICK = re.compile(r"tick (\d+)")
FINISHED = "migration finished"
FINAL_PHASES = ("Succeeded", "Failed")

ADDRESS = re.compile(r"address (inet [0-9./]+)")
# Counts on the serial console, and every 500 ticks prints eth0's address (DHCP ran before user data);
# the guest's httpd on :80 is started by the boot script after this.
COUNTER_USER_DATA = """#!/bin/sh
(
  i=0
  while :; do
    i=$((i+1))
    echo "tick $i"
    [ $((i % 500)) -eq 1 ] && echo "address $(ip -4 addr show eth0 | grep -o 'inet [0-9./]*')"
    sleep 0.01
  done
) > /dev/ttyS0 2>&1 &
"""

# Reports every second what the guest sees: a counter, its online vCPUs and MemTotal (KiB) (forks but once a
# second); a guest whose resources are plugged in live shows them here, and that it never rebooted.
SEEN = re.compile(r"seen (\d+) cpus (\d+) memtotal (\d+)")
REPORTER_USER_DATA = """#!/bin/sh
(
  i=0
  while :; do
    i=$((i+1))
    cpus=$(grep -c ^processor /proc/cpuinfo)
    echo "seen $i cpus $cpus memtotal $(awk '/^MemTotal/ {print $2}' /proc/meminfo)"
    sleep 1
  done
) > /dev/ttyS0 2>&1 &
"""


def guest_reports(cluster: Cluster, namespace: str, pod: str) -> list[tuple[int, int, int]]:
    """(counter, online vCPUs, MemTotal KiB) as the guest printed them while it ran in ``pod``."""
    found = SEEN.findall(console(cluster, namespace, pod))
    return [(int(n), int(cpus), int(kib)) for n, cpus, kib in found]


def guest_vmi_spec(user_data: str, *, memory: str = "128Mi") -> JSON:
    """A VMI spec of the test guest from its containerDisk, masquerade on the pod network, running
    ``user_data`` (NoCloud)."""
    return {
        "domain": {
            "resources": {"requests": {"memory": memory}},
            "devices": {
                "disks": [
                    {"name": "containerdisk", "disk": {"bus": "virtio"}},
                    {"name": "cloudinitdisk", "disk": {"bus": "virtio"}},
                ],
                "interfaces": [{"name": "default", "masquerade": {}}],
            },
        },
        "networks": [{"name": "default", "pod": {}}],
        "terminationGracePeriodSeconds": 0,
        "volumes": [
            {"name": "containerdisk", "containerDisk": {"image": GUEST_IMAGE}},
            {"name": "cloudinitdisk", "cloudInitNoCloud": {"userData": user_data}},
        ],
    }


def counting_guest_vm(name: str, *, memory: str = "128Mi", eviction_strategy: str = "LiveMigrate") -> JSON:
    """A VM (runStrategy Always) of the test guest on the pod network (masquerade), counting on ttyS0."""
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {
            "runStrategy": "Always",
            "template": {
                "metadata": {"labels": {"kubevirt.io/vm": name}},
                "spec": {
                    "evictionStrategy": eviction_strategy,
                    **guest_vmi_spec(COUNTER_USER_DATA, memory=memory),
                },
            },
        },
    }


def poll(what: str, check: Callable[[], Any], timeout: float, interval: float = 1.0) -> Any:
    """``check()``'s first truthy result, looked for every ``interval`` seconds for ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)


def vmi(cluster: Cluster, namespace: str, name: str) -> JSON:
    found = cluster.find("vmi", name, namespace)
    if found is None:
        raise AssertionError(f"VMI {namespace}/{name} does not exist")
    return found


def wait_running(cluster: Cluster, namespace: str, name: str, timeout: float = 180.0) -> JSON:
    """The VMI once Running, LiveMigratable and with its pod address reported."""

    def ready() -> JSON | None:
        found = cluster.find("vmi", name, namespace) or {}
        status = found.get("status") or {}
        if status.get("phase") == "Failed":
            raise AssertionError(f"VMI {name} failed: {json.dumps(status)}")
        migratable = any(
            c.get("type") == "LiveMigratable" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        return found if status.get("phase") == "Running" and migratable else None

    found: JSON = poll(f"VMI {name} Running and LiveMigratable", ready, timeout)
    return found


def launcher_pods(cluster: Cluster, namespace: str, vmi_uid: str) -> list[JSON]:
    listed = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", f"kubevirt.io/created-by={vmi_uid}")
    pods = listed["items"]
    assert isinstance(pods, list)
    return sorted(pods, key=lambda p: str(p["metadata"]["creationTimestamp"]))


def pod_on(cluster: Cluster, namespace: str, vmi_uid: str, node: str) -> JSON:
    """The VMI's launcher pod on ``node`` (the newest, should there be several)."""
    found = [p for p in launcher_pods(cluster, namespace, vmi_uid) if p["spec"].get("nodeName") == node]
    if not found:
        raise AssertionError(f"no launcher pod of VMI {vmi_uid} on {node}")
    return found[-1]


def schedulable_nodes(cluster: Cluster) -> list[str]:
    listed = cluster.kubectl_json("get", "nodes", "-l", "kubevirt.io/schedulable=true")
    items = listed["items"]
    assert isinstance(items, list)
    return sorted(str(n["metadata"]["name"]) for n in items if not n["spec"].get("unschedulable"))


def console(cluster: Cluster, namespace: str, pod: str) -> str:
    """The guest's serial console as the launcher pod ``pod`` logged it."""
    return cluster.kubectl("logs", "-n", namespace, pod, "-c", "guest-console-log", check=False).stdout


def console_ticks(cluster: Cluster, namespace: str, pod: str) -> list[int]:
    """The counter values the guest printed on its serial console while it ran in ``pod``."""
    return [int(n) for n in TICK.findall(console(cluster, namespace, pod))]


def console_addresses(cluster: Cluster, namespace: str, pod: str) -> set[str]:
    """The eth0 addresses the guest printed while it ran in ``pod``."""
    return set(ADDRESS.findall(console(cluster, namespace, pod)))


def create_migration(cluster: Cluster, namespace: str, vmi_name: str, **annotations: str) -> str:
    """Creates a VMIM for ``vmi_name``; returns its name."""
    body = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstanceMigration",
        "metadata": {"generateName": f"migrate-{vmi_name}-", "annotations": annotations},
        "spec": {"vmiName": vmi_name},
    }
    created = cluster.kubectl("create", "-n", namespace, "-o", "name", "-f", "-", stdin=json.dumps(body))
    return created.stdout.strip().rsplit("/", 1)[-1]


def migrations_of(cluster: Cluster, namespace: str, vmi_name: str) -> list[JSON]:
    listed = cluster.kubectl_json("get", "vmim", "-n", namespace)
    items = listed["items"]
    assert isinstance(items, list)
    return sorted(
        (m for m in items if m["spec"].get("vmiName") == vmi_name),
        key=lambda m: str(m["metadata"]["creationTimestamp"]),
    )


def phase(migration: JSON | None) -> str:
    return str(((migration or {}).get("status") or {}).get("phase") or "")


def wait_phase(
    cluster: Cluster, namespace: str, name: str, phases: tuple[str, ...], timeout: float = 180.0
) -> JSON:
    def reached() -> JSON | None:
        found = cluster.find("vmim", name, namespace)
        return found if phase(found) in phases else None

    found: JSON = poll(f"migration {name} in {'/'.join(phases)}", reached, timeout, 0.2)
    return found


def events_of(cluster: Cluster, namespace: str, name: str) -> list[tuple[str, str]]:
    """(reason, message) of the events about the object named ``name``."""
    listed = cluster.kubectl_json(
        "get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}"
    )
    items = listed["items"]
    assert isinstance(items, list)
    return [(str(e.get("reason")), str(e.get("message"))) for e in items]


def libvirt_timings(cluster: Cluster, namespace: str, pod: str) -> JSON:
    """What the source launcher logged when libvirt finished the migration (downtime_ms, elapsed_ms, ...)."""
    logs = cluster.kubectl("logs", "-n", namespace, pod, "-c", "compute", check=False).stdout
    for line in reversed(logs.splitlines()):
        if FINISHED in line:
            with contextlib.suppress(ValueError):
                record = json.loads(line[line.index("{") :])
                if isinstance(record, dict):
                    return record
    return {}


class ReachabilityProbe:
    """Connects to ``port`` at each address ``addresses()`` returns (looked at every ``refresh`` s), one
    thread per address so that a silent one does not delay the others, every ``interval`` s; keeps the
    times a connection was accepted."""

    def __init__(
        self,
        addresses: Callable[[], list[str]],
        *,
        port: int = 80,
        interval: float = 0.005,
        timeout: float = 0.1,
        refresh: float = 0.25,
    ) -> None:
        self._addresses = addresses
        self._port = port
        self._interval = interval
        self._timeout = timeout
        self._refresh = refresh
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._answered: list[float] = []
        self._threads: dict[str, threading.Thread] = {}
        self._watcher = threading.Thread(target=self._watch, name="probe-addresses", daemon=True)

    def __enter__(self) -> ReachabilityProbe:
        self._watcher.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        for thread in [self._watcher, *self._threads.values()]:
            thread.join(10)

    @property
    def answered(self) -> list[float]:
        with self._lock:
            return sorted(self._answered)

    def _watch(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # the API busy for a moment: keep the addresses known
                for address in self._addresses():
                    if address not in self._threads:
                        thread = threading.Thread(target=self._probe, args=(address,), daemon=True)
                        self._threads[address] = thread
                        thread.start()
            self._stop.wait(self._refresh)

    def _probe(self, address: str) -> None:
        while not self._stop.is_set():
            try:
                socket.create_connection((address, self._port), timeout=self._timeout).close()
            except OSError:
                pass
            else:
                with self._lock:
                    self._answered.append(time.monotonic())
            self._stop.wait(self._interval)

    def longest_gap(self, start: float, end: float) -> float:
        """The longest time between two answers (or the window's ends) within [start, end]."""
        points = [start, *(t for t in self.answered if start <= t <= end), end]
        return max(b - a for a, b in itertools.pairwise(points))
