"""virt-handler's VM controller stopping VMIs, losing launchers and cleaning up after them.

A fake launcher that keeps its domain's grace-period metadata as virt-launcher does; the pods directory
is a real directory tree with a real (bound) unix socket.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES
from kubevirt.controller import RequeueAfter, Store
from kubevirt.handler_launcher_com.cmd.client import LauncherDisconnectedError
from kubevirt.virt_handler import shutdown
from kubevirt.virt_handler.launcher_sockets import is_marked_unresponsive, mark_unresponsive
from kubevirt.virt_handler.orphans import OrphanSweeper
from kubevirt.virt_handler.vm_controller import LAUNCHER_START_TIMEOUT_SECONDS, VMController
from kubevirt.virt_handler.watchdog import LauncherWatchdog, SocketWatchdog, socket_answers
from kubevirt_testing.fake_kube_api import FakeKubeApi
from kubevirt_testing.launcher_socket import launcher_socket

NODE = "node01"
POD_UID = "pod-1"
SOCKETS = Path("volumes/kubernetes.io~empty-dir/sockets")
JSON = dict[str, Any]


def _go_time(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeLauncher:
    """Acts on commands like virt-launcher; ``acpi`` says whether the guest obeys the power button."""

    def __init__(self, *, grace: int = 30, acpi: bool = False) -> None:
        self.grace = grace
        self.acpi = acpi
        self.domain: JSON | None = None
        self.calls: list[str] = []
        self.disconnected = False

    def _set(self, state: str, reason: str, **grace: Any) -> None:
        metadata = {"UID": "vmi-uid", "GracePeriod": {"DeletionGracePeriodSeconds": self.grace, **grace}}
        if self.domain is not None:
            metadata["GracePeriod"] = {**self.domain["Spec"]["Metadata"]["KubeVirt"]["GracePeriod"], **grace}
        self.domain = {
            "ObjectMeta": {"name": "tiny", "namespace": "default"},
            "Spec": {"Features": {"ACPI": {}}, "Metadata": {"KubeVirt": metadata}},
            "Status": {"Status": state, "Reason": reason},
        }

    def sync_vmi(self, vmi: JSON, options: Any = None) -> None:
        self.calls.append("SyncVirtualMachine")
        if self.domain is None or self.domain["Status"]["Status"] == "Shutoff":
            self._set("Running", "Booted")

    def vmi_command(self, command: str, vmi: JSON) -> None:
        if self.disconnected:
            raise LauncherDisconnectedError(command)
        self.calls.append(command)
        if command == "ShutdownVirtualMachine":
            assert self.domain is not None
            started = self.domain["Spec"]["Metadata"]["KubeVirt"]["GracePeriod"].get("DeletionTimestamp")
            stamp = started or _go_time(datetime.now(UTC))
            if self.acpi:
                self._set("Shutoff", "Shutdown", DeletionTimestamp=stamp)
            else:
                self._set("Running", "Booted", DeletionTimestamp=stamp)
        elif command == "KillVirtualMachine":
            self._set("Shutoff", "Destroyed")
        elif command == "DeleteVirtualMachine":
            self.domain = None

    def get_domain(self) -> JSON | None:
        if self.disconnected:
            raise LauncherDisconnectedError("GetDomain")
        return self.domain

    def close(self) -> None:
        pass

    def backdate_shutdown(self, seconds: int) -> None:
        assert self.domain is not None
        grace = self.domain["Spec"]["Metadata"]["KubeVirt"]["GracePeriod"]
        grace["DeletionTimestamp"] = _go_time(datetime.now(UTC) - timedelta(seconds=seconds))


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.seen.append((event_type, reason, message))


def _vmi(phase: str = "Running", grace: int | None = 30) -> JSON:
    spec: JSON = {"domain": {}}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {
            "name": "tiny",
            "namespace": "default",
            "uid": "vmi-uid",
            "labels": {"kubevirt.io/nodeName": NODE},
        },
        "spec": spec,
        "status": {"phase": phase, "activePods": {POD_UID: NODE}},
    }


@pytest.fixture
def pods_dir(tmp_path: Path) -> Iterator[Path]:
    with launcher_socket(tmp_path, POD_UID):
        yield tmp_path


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Harness:
    def __init__(self, pods_dir: Path, vmi: JSON, launcher: FakeLauncher | None = None) -> None:
        self.api = FakeKubeApi()
        self.store: Store[JSON] = Store()
        self.launcher = launcher or FakeLauncher()
        if vmi["status"]["phase"] == "Running" and self.launcher.domain is None:
            self.launcher._set("Running", "Booted")  # a Running VMI's guest is up (without it, it failed)
        self.events = Events()
        self.clock = Clock()
        self.store.upsert(self.api.add(VIRTUAL_MACHINE_INSTANCES, vmi))
        self.controller = VMController(
            api=self.api,
            events=self.events,
            vmi_store=self.store,
            node=NODE,
            pods_dir=pods_dir,
            connect=lambda _path: self.launcher,
            clock=self.clock,
        )

    def reconcile(self) -> tuple[JSON, float | None]:
        requeue = None
        try:
            self.controller.reconcile("default/tiny")
        except RequeueAfter as request:
            requeue = request.seconds
        current = self.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
        self.store.upsert(current)
        return current, requeue

    def delete(self) -> None:
        stamp = {"metadata": {"deletionTimestamp": _go_time(datetime.now(UTC))}}
        self.store.upsert(
            self.api.patch(VIRTUAL_MACHINE_INSTANCES, "default", "tiny", stamp, patch_type="merge")
        )

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.events.seen]


# -- writes -----------------------------------------------------------------------------------------


def test_scheduled_to_running_is_one_update_and_a_resync_writes_nothing(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi(phase="Scheduled"))
    harness.reconcile()  # the sync; the domain it starts is the next reconcile's to report
    before = len(harness.api.writes)
    vmi, _ = harness.reconcile()
    assert vmi["status"]["phase"] == "Running"
    # KubeVirt's handler writes the VMI (no status subresource) with an UPDATE, never a PATCH.
    assert harness.api.writes[before:] == [("update", "virtualmachineinstances", "default", "tiny")]
    assert vmi["spec"] == {"domain": {}, "terminationGracePeriodSeconds": 30}  # the spec went along as it was
    harness.reconcile()
    harness.reconcile()
    assert len(harness.api.writes) == before + 1


def test_a_reconcile_before_the_cache_has_our_write_does_not_write_it_again(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi(phase="Scheduled"))
    harness.reconcile()  # the sync
    before = len(harness.api.writes)
    with pytest.raises(RequeueAfter):
        harness.controller.reconcile("default/tiny")
    assert len(harness.api.writes) == before + 1
    # A domain event queues the VMI again before the watch brought our write back: the cache still
    # says Scheduled, and writing Running again from it would only be refused as stale.
    with pytest.raises(RequeueAfter) as requeued:
        harness.controller.reconcile("default/tiny")
    assert requeued.value.seconds != 0.1  # not a conflict's retry
    assert len(harness.api.writes) == before + 1
    vmi, _ = harness.reconcile()  # the cache catches up
    assert vmi["status"]["phase"] == "Running"
    assert len(harness.api.writes) == before + 1


# -- graceful shutdown ------------------------------------------------------------------------------


def test_a_deleted_vmi_gets_acpi_then_a_kill_after_its_grace_period(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi(grace=30))
    harness.reconcile()  # starts it
    harness.delete()
    _, requeue = harness.reconcile()
    assert harness.launcher.calls[-1] == "ShutdownVirtualMachine"
    assert harness.events.seen[-1] == ("Normal", "ShuttingDown", "Signaled Graceful Shutdown")
    assert requeue == 5  # ACPI is sent again while the grace period runs
    harness.launcher.backdate_shutdown(10)
    _, requeue = harness.reconcile()
    assert harness.launcher.calls[-1] == "ShutdownVirtualMachine"
    assert requeue == 5
    harness.launcher.backdate_shutdown(30)  # the busybox guest ignored it all
    harness.reconcile()
    assert harness.launcher.calls[-1] == "KillVirtualMachine"
    assert harness.events.seen[-1] == ("Normal", "Deleted", "VirtualMachineInstance stopping")
    vmi, _ = harness.reconcile()
    assert harness.launcher.calls[-1] == "DeleteVirtualMachine"
    assert vmi["status"]["phase"] == "Failed"
    assert harness.reasons()[-2:] == ["Deleted", "Stopped"]
    assert harness.events.seen[-1] == ("Warning", "Stopped", "The VirtualMachineInstance crashed.")


def test_a_guest_that_obeys_acpi_succeeds(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi(grace=30), FakeLauncher(acpi=True))
    harness.reconcile()
    harness.delete()
    harness.reconcile()
    vmi, _ = harness.reconcile()
    assert harness.launcher.calls == [
        "SyncVirtualMachine",
        "ShutdownVirtualMachine",
        "DeleteVirtualMachine",
    ]
    assert vmi["status"]["phase"] == "Succeeded"
    assert harness.events.seen[-1] == ("Normal", "Stopped", "The VirtualMachineInstance was shut down.")


def test_a_zero_grace_period_kills_at_once(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi(grace=0))
    harness.reconcile()
    harness.delete()
    harness.reconcile()
    assert harness.launcher.calls == ["SyncVirtualMachine", "KillVirtualMachine"]
    vmi, _ = harness.reconcile()
    assert vmi["status"]["phase"] == "Succeeded"  # destroyed on purpose: grace 0 means no ACPI


def test_a_launcher_told_to_stop_makes_the_handler_shut_down(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.reconcile()
    assert harness.launcher.domain is not None
    harness.launcher.domain["Spec"]["Metadata"]["KubeVirt"]["GracePeriod"]["MarkedForGracefulShutdown"] = True
    harness.reconcile()
    assert harness.launcher.calls == ["SyncVirtualMachine", "ShutdownVirtualMachine"]


def test_a_launcher_gone_while_stopping_is_no_error(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi(grace=0))
    harness.reconcile()
    harness.delete()
    harness.launcher.disconnected = True
    vmi, _ = harness.reconcile()
    assert not [c for c in vmi["status"].get("conditions") or [] if c["type"] == "Synchronized"]


@pytest.mark.parametrize(
    ("vmi_grace", "grace", "status", "started_ago", "expected", "requeue"),
    [
        (None, 0, "Running", None, shutdown.Action.KILL, None),  # no grace period in the metadata
        (None, "30", "Running", None, shutdown.Action.KILL, None),  # not what a launcher writes
        (0, 30, "Running", None, shutdown.Action.KILL, None),
        (None, 30, "Running", None, shutdown.Action.SHUTDOWN, 5),
        (3, 30, "Running", None, shutdown.Action.SHUTDOWN, 3),  # the VMI's grace wins
        (30, 30, "Running", 28, shutdown.Action.SHUTDOWN, 2),
        (30, 30, "ShuttingDown", 10, shutdown.Action.WAIT, 5),
        (30, 30, "Running", 30, shutdown.Action.KILL, None),
    ],
)
def test_next_shutdown_step(
    vmi_grace: int | None,
    grace: object,
    status: str,
    started_ago: int | None,
    expected: shutdown.Action,
    requeue: float | None,
) -> None:
    now = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
    metadata: JSON = {"DeletionGracePeriodSeconds": grace}
    if started_ago is not None:
        metadata["DeletionTimestamp"] = _go_time(now - timedelta(seconds=started_ago))
    domain = {"Spec": {"Metadata": {"KubeVirt": {"GracePeriod": metadata}}}, "Status": {"Status": status}}
    step = shutdown.next_step(vmi_grace, domain, now)
    assert (step.action, step.requeue_seconds) == (expected, requeue)


# -- launchers that are gone or unresponsive -------------------------------------------------------


def test_a_launcher_marked_unresponsive_fails_its_vmi(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.reconcile()
    mark_unresponsive(pods_dir, POD_UID)
    harness.launcher.calls.clear()
    vmi, _ = harness.reconcile()
    assert vmi["status"]["phase"] == "Failed"
    assert harness.launcher.calls == []
    assert harness.events.seen[-1] == ("Warning", "Stopped", "The VirtualMachineInstance crashed.")


def test_a_disconnected_launcher_leaves_the_phase_to_the_watchdog(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.reconcile()
    harness.launcher.disconnected = True
    vmi, requeue = harness.reconcile()
    assert vmi["status"]["phase"] == "Running"
    assert requeue == 1.0


def test_a_socket_that_vanished_fails_a_running_vmi(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.reconcile()
    (pods_dir / POD_UID / SOCKETS / "launcher-sock").unlink()
    vmi, _ = harness.reconcile()
    assert vmi["status"]["phase"] == "Failed"


def test_a_launcher_that_exits_after_a_clean_stop_is_no_crash(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.reconcile()
    stale = harness.store.get_by_key("default/tiny")
    harness.launcher._set("Shutoff", "Shutdown")  # the guest powered off
    vmi, _ = harness.reconcile()
    assert vmi["status"]["phase"] == "Succeeded"
    # A worker still holding the Running VMI finds the launcher gone: what it saw last decides. (The
    # Running VMI comes back under a version of its own: one the handler has not replaced already.)
    assert stale is not None
    stale = {**stale, "metadata": {**stale["metadata"], "resourceVersion": "999"}}
    harness.store.upsert(stale)
    (pods_dir / POD_UID / SOCKETS / "launcher-sock").unlink()
    harness.api.objects[("virtualmachineinstances", "default", "tiny")] = stale
    vmi, _ = harness.reconcile()
    assert vmi["status"]["phase"] == "Succeeded"


def test_a_launcher_without_a_socket_for_three_minutes_is_unresponsive(tmp_path: Path) -> None:
    (tmp_path / POD_UID).mkdir()
    harness = Harness(tmp_path, _vmi("Scheduled"))
    vmi, requeue = harness.reconcile()
    assert (vmi["status"]["phase"], requeue) == ("Scheduled", 1.0)
    harness.clock.now += LAUNCHER_START_TIMEOUT_SECONDS + 1
    vmi, _ = harness.reconcile()
    assert vmi["status"]["phase"] == "Failed"


def test_a_vmi_whose_pod_directory_is_gone_fails(tmp_path: Path) -> None:
    vmi, _ = Harness(tmp_path, _vmi("Scheduled")).reconcile()
    assert vmi["status"]["phase"] == "Failed"


def test_a_restarted_handler_picks_a_booting_vmi_back_up(pods_dir: Path) -> None:
    launcher = FakeLauncher()
    launcher._set("Running", "Booted")  # the previous handler had already synced it
    harness = Harness(pods_dir, _vmi("Scheduled"), launcher)
    vmi, _ = harness.reconcile()
    assert vmi["status"]["phase"] == "Running"
    assert harness.events.seen == [("Normal", "Started", "VirtualMachineInstance started.")]


# -- the watchdog ---------------------------------------------------------------------------------


def test_the_socket_watchdog_needs_silence_for_longer_than_the_timeout() -> None:
    clock = Clock()
    watchdog = SocketWatchdog(30, clock=clock)
    a, b = Path("a"), Path("b")
    assert watchdog.expired([a, b]) == []
    clock.now += 20
    assert watchdog.expired([a]) == []  # b answered again: forgiven
    clock.now += 11
    assert watchdog.expired([a, b]) == [a]


def test_the_watchdog_marks_a_killed_launchers_socket(tmp_path: Path) -> None:
    clock = Clock()
    queued: list[str] = []
    store: Store[JSON] = Store()
    store.upsert(_vmi())
    watchdog = LauncherWatchdog(
        vmi_store=store, node=NODE, pods_dir=tmp_path, enqueue=queued.append, timeout=30, clock=clock
    )
    assert watchdog.period == 11
    with launcher_socket(tmp_path, POD_UID, listening=False):
        assert socket_answers(tmp_path / POD_UID / SOCKETS / "launcher-sock") is False
        assert watchdog.check() == []
        clock.now += 31
        assert watchdog.check() == ["default/tiny"]
    assert queued == ["default/tiny"]
    assert is_marked_unresponsive(tmp_path, POD_UID)


def test_the_watchdog_leaves_a_live_launcher_alone(pods_dir: Path) -> None:
    clock = Clock()
    store: Store[JSON] = Store()
    store.upsert(_vmi())
    watchdog = LauncherWatchdog(
        vmi_store=store, node=NODE, pods_dir=pods_dir, enqueue=lambda _key: None, timeout=30, clock=clock
    )
    watchdog.check()
    clock.now += 100
    assert watchdog.check() == []
    assert not (pods_dir / POD_UID / SOCKETS / "launcher-unresponsive").exists()


def test_the_marker_is_not_written_through_a_link(tmp_path: Path) -> None:
    sockets = tmp_path / POD_UID / SOCKETS
    with launcher_socket(tmp_path, POD_UID):
        target = tmp_path / "elsewhere"
        (sockets / "launcher-unresponsive").symlink_to(target)
        with pytest.raises(OSError, match="Too many levels of symbolic links"):
            mark_unresponsive(tmp_path, POD_UID)
    assert not target.exists()


# -- orphans --------------------------------------------------------------------------------------


def _sweeper(pods_dir: Path, store: Store[JSON], launcher: FakeLauncher) -> OrphanSweeper:
    return OrphanSweeper(vmi_store=store, pods_dir=pods_dir, connect=lambda _path: launcher)


def test_the_domain_of_a_deleted_vmi_is_shut_down_then_undefined(pods_dir: Path) -> None:
    launcher = FakeLauncher(grace=30)
    launcher._set("Running", "Booted")
    sweeper = _sweeper(pods_dir, Store(), launcher)
    assert sweeper.sweep() == ["default/tiny"]
    assert launcher.calls == ["ShutdownVirtualMachine"]
    launcher.backdate_shutdown(31)
    sweeper.sweep()
    sweeper.sweep()
    assert launcher.calls == ["ShutdownVirtualMachine", "KillVirtualMachine", "DeleteVirtualMachine"]
    assert launcher.domain is None
    assert sweeper.sweep() == []


def test_a_domain_whose_vmi_was_replaced_is_an_orphan(pods_dir: Path) -> None:
    launcher = FakeLauncher(grace=0)
    launcher._set("Running", "Booted")
    store: Store[JSON] = Store()
    replacement = _vmi()
    replacement["metadata"]["uid"] = "new-uid"
    replacement["status"]["activePods"] = {"new-pod": NODE}
    store.upsert(replacement)
    _sweeper(pods_dir, store, launcher).sweep()
    assert launcher.calls == ["KillVirtualMachine"]


def test_the_incoming_domain_of_a_migration_to_this_node_is_not_an_orphan(pods_dir: Path) -> None:
    """The VMI still names the source node, so only the migration-target cache knows it here."""
    launcher = FakeLauncher()
    launcher._set("Paused", "Migration")
    migrating = _vmi()
    migrating["status"]["activePods"] = {}  # the target pod not listed yet: its domain is looked at
    targets: Store[JSON] = Store()
    targets.upsert(migrating)
    sweeper = OrphanSweeper(
        vmi_store=Store(), target_store=targets, pods_dir=pods_dir, connect=lambda _path: launcher
    )
    assert sweeper.sweep() == []
    assert launcher.calls == []
    targets.remove("default/tiny")  # the migration is over and the VMI went elsewhere: now it is an orphan
    assert sweeper.sweep() == ["default/tiny"]


def test_launchers_of_known_vmis_are_not_visited(pods_dir: Path) -> None:
    launcher = FakeLauncher()
    launcher._set("Running", "Booted")
    store: Store[JSON] = Store()
    store.upsert(_vmi())
    assert _sweeper(pods_dir, store, launcher).sweep() == []
    assert launcher.calls == []


def test_a_poke_sweeps_at_once(pods_dir: Path) -> None:
    launcher = FakeLauncher(grace=0)
    sweeper = _sweeper(pods_dir, Store(), launcher)
    stop = threading.Event()
    runner = threading.Thread(target=sweeper.run, args=(stop, 3600.0))
    runner.start()
    try:
        time.sleep(0.2)  # the first pass found no domain
        launcher._set("Running", "Booted")
        sweeper.poke()
        deadline = time.monotonic() + 5
        while launcher.calls != ["KillVirtualMachine"]:
            assert time.monotonic() < deadline, launcher.calls
            time.sleep(0.05)
    finally:
        stop.set()
        runner.join(5)
