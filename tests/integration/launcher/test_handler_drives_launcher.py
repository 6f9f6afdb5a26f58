"""virt-handler's VM controller, launcher watchdog and informers against a real kube-apiserver and a real
virt-launcher booting the busybox guest under TCG: kill -9 of the launcher fails the VMI, and deleting the
VMI shuts the guest down gracefully (which it ignores) and kills it when the grace period is over; with
the notify server, a pause made behind the handler's back reaches the VMI's status through the launcher's
domain event, not a poll.

The launcher's ``sockets`` directory is bind-mounted where the kubelet keeps a pod's emptyDir, under a
short stand-in for the kubelet's pods directory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import EVENTS, VIRTUAL_MACHINE_INSTANCES, EventRecorder, KubeClient
from kubevirt.controller import Controller, RateLimitingQueue, SharedInformerFactory, key_of
from kubevirt.virt_handler.domain_cache import DomainCache
from kubevirt.virt_handler.domain_notify import DomainNotify
from kubevirt.virt_handler.notify_pipes import NotifyPipes
from kubevirt.virt_handler.notify_server import NotifyServer, serve_notify
from kubevirt.virt_handler.orphans import OrphanSweeper
from kubevirt.virt_handler.pod_sockets import connect_launcher
from kubevirt.virt_handler.vm_controller import VMController
from kubevirt.virt_handler.watchdog import LauncherWatchdog
from kubevirt_testing.waiting import eventually

pytestmark = pytest.mark.timeout(240)

NODE = "handler-node"
POD_UID = "p1"
EMPTY_DIR = Path("volumes/kubernetes.io~empty-dir/sockets")
WATCHDOG_TIMEOUT = 3
BOOT_BUDGET = 60.0


class Handler:
    """virt-handler's VM controller, watchdog and orphan sweeper on their informers; started on demand."""

    def __init__(self, kube: KubeClient, namespace: str, pods_dir: Path, *, notify: bool = False) -> None:
        self.kube = kube
        self.notify = notify
        self.notified: list[str] = []  # the VMI keys domain events enqueued
        self.cache = DomainCache()
        self._notify_stop: list[Callable[[], None]] = []
        self.namespace = namespace
        self.pods_dir = pods_dir
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._factory: SharedInformerFactory | None = None
        self._events: EventRecorder | None = None

    def start(self) -> None:
        factory = SharedInformerFactory(self.kube)
        vmis = factory.informer(
            VIRTUAL_MACHINE_INSTANCES, namespace=self.namespace, label_selector=f"kubevirt.io/nodeName={NODE}"
        )
        queue = RateLimitingQueue(name="test-handler")
        self._events = EventRecorder(self.kube, "virt-handler", host=NODE)
        notify = self._start_notify(queue, vmis.store) if self.notify else None
        reconciler = VMController(
            api=self.kube,
            events=self._events,
            vmi_store=vmis.store,
            node=NODE,
            pods_dir=self.pods_dir,
            connect=connect_launcher,
            notify=notify,
        )
        orphans = OrphanSweeper(vmi_store=vmis.store, pods_dir=self.pods_dir, connect=connect_launcher)

        def deleted(obj: dict[str, Any]) -> None:
            queue.add(key_of(obj))
            orphans.poke()  # as virt-handler does: a deleted VMI may leave an orphan

        vmis.add_event_handler(
            lambda obj: queue.add(key_of(obj)), lambda _old, new: queue.add(key_of(new)), deleted
        )
        watchdog = LauncherWatchdog(
            vmi_store=vmis.store,
            node=NODE,
            pods_dir=self.pods_dir,
            enqueue=queue.add,
            timeout=WATCHDOG_TIMEOUT,
        )
        factory.start()
        assert factory.wait_for_cache_sync(30)
        self._factory = factory
        self._threads = [
            threading.Thread(
                target=Controller("test-handler", queue, reconciler, workers=2).run, args=(self._stop,)
            ),
            threading.Thread(target=watchdog.run, args=(self._stop,)),
            threading.Thread(target=orphans.run, args=(self._stop,)),  # KubeVirt's period, and pokes
        ]
        for thread in self._threads:
            thread.start()

    def _start_notify(self, queue: RateLimitingQueue, store: Any) -> DomainNotify:
        """virt-handler's Notify server on a socket of its own and the pipes into launcher pods."""
        socket = self.pods_dir / "notify.sock"

        def enqueue(key: str) -> None:
            self.notified.append(key)
            queue.add(key)

        servicer = NotifyServer(cache=self.cache, enqueue=enqueue, vmi_store=store, events=self._events)
        server = serve_notify(socket, servicer)
        pipes = NotifyPipes(socket)
        self._notify_stop = [pipes.shut_down, lambda: server.stop(grace=0)]
        return DomainNotify(self.cache, pipes)

    def stop(self) -> None:
        self._stop.set()
        for stop in self._notify_stop:
            stop()
        for thread in self._threads:
            thread.join(10)
        if self._factory is not None:
            self._factory.stop()
        if self._events is not None:
            self._events.stop()

    def vmi(self, name: str) -> dict[str, Any]:
        return self.kube.get(VIRTUAL_MACHINE_INSTANCES, self.namespace, name)

    def wait_for(self, name: str, check: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            vmi = self.vmi(name)
            if check(vmi):
                return vmi
            assert time.monotonic() < deadline, f"VMI {name} is still {vmi.get('status', {}).get('phase')}"
            time.sleep(0.2)

    def reasons(self, name: str) -> list[str]:
        items = self.kube.list(EVENTS, self.namespace)[0]
        found = [e for e in items if e["involvedObject"].get("name") == name]
        return [e["reason"] for e in sorted(found, key=lambda e: e["metadata"]["creationTimestamp"])]


@pytest.fixture(params=[False], ids=["polling"])
def handler(kube: KubeClient, namespace: str, request: pytest.FixtureRequest) -> Iterator[Handler]:
    pods_dir = Path(tempfile.mkdtemp(prefix="h", dir="/tmp"))  # short: socket paths have a size limit
    handler = Handler(kube, namespace, pods_dir, notify=request.param)
    yield handler
    handler.stop()
    mounted = pods_dir / POD_UID / EMPTY_DIR
    subprocess.run(["umount", "-l", str(mounted)], check=False, capture_output=True)
    with contextlib.suppress(OSError):
        (pods_dir / "notify.sock").unlink()
        for path in (mounted, mounted.parent, mounted.parent.parent, pods_dir / POD_UID, pods_dir):
            path.rmdir()


def _start(handler: Handler, launcher_pods: Any, make_vmi: Any, name: str, **extra: Any) -> Any:
    """The VMI in the API server as virt-controller leaves it once its pod runs, and its launcher."""
    vmi = make_vmi(name, **extra)
    vmi["metadata"].update(
        namespace=handler.namespace, labels={"kubevirt.io/nodeName": NODE}, finalizers=["test/hold"]
    )
    del vmi["metadata"]["uid"]
    created = handler.kube.create(
        VIRTUAL_MACHINE_INSTANCES, handler.namespace, {k: v for k, v in vmi.items() if k != "status"}
    )
    vmi["metadata"]["uid"] = created["metadata"]["uid"]
    pod = launcher_pods(vmi, name=name, grace_period=60, pod_uid=POD_UID)  # a process of that pod
    sockets = handler.pods_dir / POD_UID / EMPTY_DIR
    sockets.mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(pod.share_dir / "sockets"), str(sockets)], check=True)
    status = {"phase": "Scheduled", "nodeName": NODE, "activePods": {POD_UID: NODE}}
    handler.kube.patch(
        VIRTUAL_MACHINE_INSTANCES, handler.namespace, name, {"status": status}, patch_type="merge"
    )
    return pod


def _release(handler: Handler, name: str) -> None:
    handler.kube.patch(
        VIRTUAL_MACHINE_INSTANCES,
        handler.namespace,
        name,
        {"metadata": {"finalizers": []}},
        patch_type="merge",
    )


def test_kill_9_of_the_launcher_fails_the_vmi(
    handler: Handler, launcher_pods: Any, make_vmi: Any, guest_marker: str
) -> None:
    handler.start()
    pod = _start(handler, launcher_pods, make_vmi, "killed")
    handler.wait_for("killed", lambda v: v["status"].get("phase") == "Running", BOOT_BUDGET)
    pod.wait_for_serial(guest_marker, BOOT_BUDGET)

    os.kill(pod.process.pid, signal.SIGKILL)
    killed = time.monotonic()
    vmi = handler.wait_for("killed", lambda v: v["status"].get("phase") == "Failed", WATCHDOG_TIMEOUT + 15)
    took = time.monotonic() - killed
    print(f"VMI Failed {took:.1f}s after kill -9 of its launcher (watchdog timeout {WATCHDOG_TIMEOUT}s)")
    assert took >= WATCHDOG_TIMEOUT  # the socket stays; only the watchdog can tell
    assert (handler.pods_dir / POD_UID / EMPTY_DIR / "launcher-unresponsive").exists()
    assert [s["phase"] for s in vmi["status"]["phaseTransitionTimestamps"]] == ["Running", "Failed"]
    # The event follows the status write: an observer of the Failed VMI may list events before it lands.
    eventually(lambda: handler.reasons("killed")[-1] == "Stopped", timeout=10.0)
    _release(handler, "killed")


def test_deleting_the_vmi_shuts_it_down_then_kills_it_after_the_grace_period(
    handler: Handler, launcher_pods: Any, make_vmi: Any, guest_marker: str
) -> None:
    handler.start()
    pod = _start(handler, launcher_pods, make_vmi, "stopped", terminationGracePeriodSeconds=4)
    handler.wait_for("stopped", lambda v: v["status"].get("phase") == "Running", BOOT_BUDGET)
    pod.wait_for_serial(guest_marker, BOOT_BUDGET)

    handler.kube.delete(VIRTUAL_MACHINE_INSTANCES, handler.namespace, "stopped")
    deleted = time.monotonic()
    vmi = handler.wait_for("stopped", lambda v: v["status"].get("phase") == "Failed", 30)
    took = time.monotonic() - deleted
    print(f"VMI Failed {took:.1f}s after its deletion (grace period 4s, the guest ignores ACPI)")
    assert took >= 4
    eventually(lambda: handler.reasons("stopped")[-1] == "Stopped", timeout=10.0)  # it follows the write
    reasons = handler.reasons("stopped")
    assert sorted(reasons[:2]) == ["Created", "Started"]  # defined, then running (same second)
    assert "ShuttingDown" in reasons
    assert reasons.index("ShuttingDown") < reasons.index("Deleted")
    assert pod.wait_exit(30) == 0  # its domain undefined, the launcher is done
    assert vmi["status"]["phase"] == "Failed"  # ACPI was applicable and the guest did not stop by itself
    _release(handler, "stopped")


def test_a_restarted_handler_picks_up_a_booting_vmi_and_cleans_up_after_a_vanished_one(
    handler: Handler, launcher_pods: Any, make_vmi: Any, guest_marker: str
) -> None:
    pod = _start(handler, launcher_pods, make_vmi, "resumed", terminationGracePeriodSeconds=3)
    # The previous handler synced the VMI and died before it could report anything.
    vmi = handler.vmi("resumed")
    pod.client.sync_vmi(vmi)
    handler.start()
    vmi = handler.wait_for("resumed", lambda v: v["status"].get("phase") == "Running", BOOT_BUDGET)
    assert [s["phase"] for s in vmi["status"]["phaseTransitionTimestamps"]] == ["Running"]
    pod.wait_for_serial(guest_marker, BOOT_BUDGET)

    # The VMI vanishes from the API at once (no finalizer left): its launcher's domain is an orphan.
    _release(handler, "resumed")
    handler.kube.delete(VIRTUAL_MACHINE_INSTANCES, handler.namespace, "resumed")
    gone = time.monotonic()
    assert pod.wait_exit(60) == 0  # ACPI (ignored), the kill after 3 s, the undefine: the launcher is done
    took = time.monotonic() - gone
    print(f"orphaned domain stopped and undefined {took:.1f}s after its VMI vanished (grace 3s)")
    assert took >= 3
    assert "the domain is gone" in pod.logs()


def _paused(vmi: dict[str, Any]) -> bool:
    return any(c.get("type") == "Paused" for c in vmi["status"].get("conditions") or [])


@pytest.mark.parametrize("handler", [True], ids=["notify"], indirect=True)
def test_a_pause_behind_the_handlers_back_reaches_the_status_through_a_domain_event(
    handler: Handler, launcher_pods: Any, make_vmi: Any, guest_marker: str
) -> None:
    handler.start()
    pod = _start(handler, launcher_pods, make_vmi, "paused")
    handler.wait_for("paused", lambda v: v["status"].get("phase") == "Running", BOOT_BUDGET)
    pod.wait_for_serial(guest_marker, BOOT_BUDGET)
    pipe = pod.in_pod("/var/run/kubevirt/domain-notify-pipe.sock")
    assert pipe.is_socket()  # made by the handler inside the pod, where the launcher dials it
    assert handler.cache.get(f"{handler.namespace}/paused") is not None

    # The launcher pauses the guest on its own (no handler call, no VMI change): only its event tells.
    before = len(handler.notified)
    pod.client.vmi_command("PauseVirtualMachine", pod.vmi)
    paused_at = time.monotonic()
    vmi = handler.wait_for("paused", _paused, 2.0)
    took = time.monotonic() - paused_at
    print(f"Paused condition written {took:.2f}s after the launcher paused the domain")
    assert len(handler.notified) > before
    assert (handler.cache.get(f"{handler.namespace}/paused") or {})["Status"]["Status"] == "Paused"
    condition = next(c for c in vmi["status"]["conditions"] if c["type"] == "Paused")
    assert condition["reason"] == "PausedByUser"

    pod.client.vmi_command("UnpauseVirtualMachine", pod.vmi)
    handler.wait_for("paused", lambda v: not _paused(v), 2.0)
    _release(handler, "paused")
