"""virt-handler's migration source and target roles against a fake API and fake launchers; the proxies
are real (unix sockets in a directory standing for the pod's root, TCP on loopback)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES
from kubevirt.controller import RequeueAfter, Store
from kubevirt.handler_launcher_com.cmd.client import CommandFailedError, LauncherDisconnectedError
from kubevirt.podroot import PodRoot
from kubevirt.virt_handler.hotplug_disk.layout import HotplugVolumeError
from kubevirt.virt_handler.hotplug_disk.mounter import LauncherPod, hotplug_volumes
from kubevirt.virt_handler.migration import MigrationSource, MigrationTarget
from kubevirt.virt_handler.migration_proxy import ProxyManager
from kubevirt.virt_handler.vm_controller import VMController
from kubevirt_api.resource import Quantity
from kubevirt_testing.fake_kube_api import FakeKubeApi
from kubevirt_testing.launcher_socket import launcher_socket

JSON = dict[str, Any]
SOURCE, TARGET = "node-a", "node-b"
SOURCE_POD, TARGET_POD = "pod-a", "pod-b"
UID = "11111111-2222-3333-4444-555555555555"


class FakeLauncher:
    def __init__(self) -> None:
        self.domain: JSON | None = None
        self.calls: list[str] = []
        self.options: list[JSON] = []
        self.failing: dict[str, Exception] = {}  # command -> what it raises

    def sync_vmi(self, vmi: JSON) -> None:
        self.calls.append("SyncVirtualMachine")

    def vmi_command(self, command: str, vmi: JSON) -> None:
        self.calls.append(command)
        if command in self.failing:
            raise self.failing[command]

    def migrate_vmi(self, vmi: JSON, options: JSON) -> None:
        self.calls.append("MigrateVirtualMachine")
        self.options.append(dict(options))

    def get_domain(self) -> JSON | None:
        return self.domain

    def close(self) -> None:
        pass


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.seen.append((reason, message))


def domain(state: str, reason: str, migration: JSON | None = None) -> JSON:
    return {
        "Spec": {"Metadata": {"KubeVirt": {"UID": UID, "Migration": migration}}},
        "Status": {"Status": state, "Reason": reason},
    }


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    world = World(tmp_path)
    yield world
    world.proxies.shut_down()
    world.sockets.close()


class World:
    def __init__(self, tmp: Path) -> None:
        self.api = FakeKubeApi()
        self.events = Events()
        self.proxies = ProxyManager(listen_address="127.0.0.1")
        self.pod_root = tmp / "root"
        (self.pod_root / "var/run/kubevirt/migrationproxy").mkdir(parents=True)
        self.pods_dir = tmp / "pods"
        self.sockets = contextlib.ExitStack()
        for pod in (SOURCE_POD, TARGET_POD):
            self.sockets.enter_context(launcher_socket(self.pods_dir, pod, listening=False))
        self.launcher = FakeLauncher()
        roles: dict[str, Any] = {
            "api": self.api,
            "events": self.events,
            "pods_dir": self.pods_dir,
            "connect": lambda _path: self.launcher,
            "proxies": self.proxies,
            "pod_root": lambda _socket: PodRoot(self.pod_root),
            "clock": lambda: self.now,
        }
        self.now = datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)
        self.source = MigrationSource(node=SOURCE, **roles)
        self.store: Store[JSON] = Store()
        self.target = MigrationTarget(node=TARGET, vmi_store=self.store, address="127.0.0.1", **roles)
        self.api.add(
            VIRTUAL_MACHINE_INSTANCES,
            {
                "metadata": {
                    "name": "vm",
                    "namespace": "default",
                    "labels": {"kubevirt.io/nodeName": SOURCE, "kubevirt.io/migrationTargetNodeName": TARGET},
                },
                "spec": {},
                "status": {
                    "phase": "Running",
                    "nodeName": SOURCE,
                    "activePods": {SOURCE_POD: SOURCE, TARGET_POD: TARGET},
                    "migrationState": {
                        "migrationUid": "mig-1",
                        "sourceNode": SOURCE,
                        "targetNode": TARGET,
                        "targetPod": "virt-launcher-vm-b",
                        "migrationConfiguration": {"bandwidthPerMigration": "64Mi", "allowPostCopy": True},
                    },
                },
            },
        )

        self.uid = self.vmi()["metadata"]["uid"]  # the API's, as on a real server

    def vmi(self) -> JSON:
        return self.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "vm")

    def state(self) -> JSON:
        return dict(self.vmi()["status"]["migrationState"])

    def report(self, **fields: Any) -> None:
        patch = {"status": {"migrationState": fields}}
        self.api.patch(VIRTUAL_MACHINE_INSTANCES, "default", "vm", patch, patch_type="merge")

    def run_source(self) -> None:
        with contextlib.suppress(RequeueAfter):
            self.source.reconcile(self.vmi())

    def run_target(self) -> None:
        self.store.upsert(self.vmi())
        with contextlib.suppress(RequeueAfter):
            self.target.reconcile("default/vm")


def test_the_source_migrates_once_the_target_listens_and_undefines_its_copy_after(world: World) -> None:
    world.launcher.domain = domain("Running", "Unknown")
    world.run_source()
    assert "MigrateVirtualMachine" not in world.launcher.calls  # the target has not published yet

    world.report(targetNodeAddress="127.0.0.1", targetDirectMigrationNodePorts={"40001": 0, "40002": 49152})
    world.run_source()
    assert world.launcher.calls == ["MigrateVirtualMachine"]
    options = world.launcher.options[0]
    assert (options["Bandwidth"], options["AllowPostCopy"], options["CompletionTimeoutPerGiB"]) == (
        "64Mi",
        True,
        150,
    )
    proxies = world.pod_root / "var/run/kubevirt/migrationproxy"
    assert sorted(p.name for p in proxies.iterdir()) == [
        f"{world.uid}-49152-source.sock",
        f"{world.uid}-source.sock",
    ]
    assert world.state()["startTimestamp"]

    # Running: the launcher's record says so; nothing is started twice.
    world.launcher.domain = domain(
        "Running", "Unknown", {"UID": "mig-1", "StartTimestamp": "2026-01-01T00:00:01Z"}
    )
    world.run_source()
    assert world.launcher.calls.count("MigrateVirtualMachine") == 1
    assert world.state()["startTimestamp"] == "2026-01-01T00:00:01Z"

    world.launcher.domain = domain(
        "Shutoff",
        "Migrated",
        {
            "UID": "mig-1",
            "StartTimestamp": "x",
            "EndTimestamp": "2026-01-01T00:00:03Z",
            "Completed": True,
            "Mode": "PreCopy",
        },
    )
    world.run_source()
    state = world.state()
    assert (state["endTimestamp"], state["mode"]) == ("2026-01-01T00:00:03Z", "PreCopy")
    assert not state.get("failed")
    assert not world.proxies.running(world.uid)
    # The stopped copy keeps the launcher's record until the end is on the VMI: only the next pass,
    # which reads it there, undefines it (a lost write would otherwise lose the outcome for good).
    assert "DeleteVirtualMachine" not in world.launcher.calls
    world.run_source()
    assert world.launcher.calls[-1] == "DeleteVirtualMachine"


def test_an_abort_request_cancels_once_and_the_outcome_is_reported(world: World) -> None:
    world.launcher.domain = domain("Running", "Unknown", {"UID": "mig-1", "StartTimestamp": "x"})
    world.report(targetNodeAddress="127.0.0.1", targetDirectMigrationNodePorts={"1": 0}, abortRequested=True)
    world.run_source()
    world.run_source()
    assert world.launcher.calls == ["CancelVirtualMachineMigration"]
    assert world.state()["abortStatus"] == "Aborting"

    world.launcher.domain = domain(
        "Running",
        "Unknown",
        {
            "UID": "mig-1",
            "EndTimestamp": "e",
            "Failed": True,
            "FailureReason": "canceled by client",
            "AbortStatus": "Succeeded",
        },
    )
    world.run_source()
    state = world.state()
    assert (state["failed"], state["abortStatus"], state["failureReason"]) == (
        True,
        "Succeeded",
        "canceled by client",
    )
    assert not world.source.owns(world.vmi())  # the VM controller drives the VMI again


def test_a_refused_cancel_fails_nothing_and_the_recorded_outcome_decides(world: World) -> None:
    # The job ended between the abort request and the cancel: the launcher refuses it, and the
    # migration's outcome (the abort's included) comes from its record, not from the refusal.
    world.launcher.domain = domain("Running", "Unknown", {"UID": "mig-1", "StartTimestamp": "x"})
    world.launcher.failing["CancelVirtualMachineMigration"] = CommandFailedError(
        "CancelVirtualMachineMigration", "failed to cancel migration: no job is active on the domain"
    )
    world.report(targetNodeAddress="127.0.0.1", targetDirectMigrationNodePorts={"1": 0}, abortRequested=True)
    world.run_source()
    state = world.state()
    assert not state.get("failed")
    assert not state.get("abortStatus")
    assert world.source.owns(world.vmi())

    world.launcher.domain = domain(
        "Running",
        "Unknown",
        {"UID": "mig-1", "EndTimestamp": "e", "Failed": True, "AbortStatus": "Succeeded"},
    )
    world.run_source()
    state = world.state()
    assert (state["failed"], state["abortStatus"]) == (True, "Succeeded")


def test_an_abort_before_the_start_ends_the_migration_without_touching_the_launcher(world: World) -> None:
    world.launcher.domain = domain("Running", "Unknown")
    world.report(abortRequested=True)
    world.run_source()
    assert world.launcher.calls == []
    assert (world.state()["failed"], world.state()["abortStatus"]) == (True, "Succeeded")


def test_the_vm_controller_leaves_a_migrating_vmi_to_the_source_role(world: World) -> None:
    store: Store[JSON] = Store()
    store.upsert(world.vmi())
    world.launcher.domain = domain("Running", "Unknown")
    controller = VMController(
        api=world.api,
        events=world.events,
        vmi_store=store,
        node=SOURCE,
        pods_dir=world.pods_dir,
        connect=lambda _path: world.launcher,
        migration_source=world.source,
    )
    with contextlib.suppress(RequeueAfter):
        controller.reconcile("default/vm")
    assert "SyncVirtualMachine" not in world.launcher.calls


def test_the_target_prepares_once_publishes_its_ports_and_takes_the_vmi_over(world: World) -> None:
    world.run_target()
    world.run_target()
    assert world.launcher.calls == ["SyncMigrationTarget"]
    state = world.state()
    assert state["targetNodeAddress"] == "127.0.0.1"
    assert sorted(state["targetDirectMigrationNodePorts"].values()) == [0, 49152]
    assert world.proxies.target_ports(world.uid) == state["targetDirectMigrationNodePorts"]

    world.launcher.domain = domain("Paused", "Migration")
    world.run_target()
    assert world.state()["targetNodeDomainDetected"] is True
    assert "targetNodeDomainReadyTimestamp" not in world.state()

    world.launcher.domain = domain("Running", "Unknown")
    world.run_target()
    assert world.state()["targetNodeDomainReadyTimestamp"]
    assert world.vmi()["status"]["nodeName"] == SOURCE  # the source has not reported the end yet

    world.report(endTimestamp="2026-01-01T00:00:03Z")
    world.run_target()
    vmi = world.vmi()
    assert vmi["status"]["nodeName"] == TARGET
    assert vmi["metadata"]["labels"] == {"kubevirt.io/nodeName": TARGET}
    assert vmi["status"]["migrationState"]["completed"] is True
    assert world.launcher.calls[-1] == "FinalizeVirtualMachineMigration"
    assert ("Migrated", f"The VirtualMachineInstance migrated to node {TARGET}.") in world.events.seen
    assert not world.proxies.running(world.uid)


CPU_LIMITS = "kubevirt.io/vmi-pod-cpu-resource-limits"
MEMORY_REQUESTS = "kubevirt.io/vmi-pod-memory-resource-requests"
OVERHEAD_RATIO = "kubevirt.io/memory-hotplug-overhead-ratio"


def hotplugging(world: World, *, pod_memory: str = "2560Mi", conditions: tuple[str, ...] = ()) -> None:
    """The VMI as virt-controller hands it to the target in the middle of a CPU and memory hotplug."""
    labels = {MEMORY_REQUESTS: pod_memory, OVERHEAD_RATIO: "1.0"}
    patch = {
        "metadata": {"labels": labels},
        "spec": {
            "domain": {
                "cpu": {"sockets": 2, "cores": 1, "threads": 1, "maxSockets": 4},
                "memory": {"guest": "2Gi", "maxGuest": "4Gi"},
                "resources": {"requests": {"memory": "2Gi"}},
            }
        },
        "status": {
            "currentCPUTopology": {"sockets": 1, "cores": 1, "threads": 1},
            "memory": {"guestAtBoot": "1Gi", "guestRequested": "1Gi", "guestCurrent": "1Gi"},
            "conditions": [
                {"type": "Ready", "status": "True"},
                *(
                    {"type": kind, "status": "True"}
                    for kind in conditions or ("HotVCPUChange", "HotMemoryChange")
                ),
            ],
        },
    }
    world.api.patch(VIRTUAL_MACHINE_INSTANCES, "default", "vm", patch, patch_type="merge")


def take_over(world: World) -> JSON:
    world.run_target()
    world.launcher.domain = domain("Running", "Unknown")
    world.report(endTimestamp="2026-01-01T00:00:03Z")
    world.run_target()
    return world.vmi()


def test_the_target_finishes_a_cpu_and_memory_hotplug_before_it_finalizes(world: World) -> None:
    hotplugging(world)
    vmi = take_over(world)
    assert world.launcher.calls == [
        "SyncMigrationTarget",
        "SyncVirtualMachineCPUs",
        "SyncVirtualMachineMemory",
        "FinalizeVirtualMachineMigration",
    ]
    status = vmi["status"]
    assert status["currentCPUTopology"] == {"sockets": 2, "cores": 1, "threads": 1}
    assert status["memory"] == {"guestAtBoot": "1Gi", "guestRequested": "2Gi", "guestCurrent": "1Gi"}
    assert status["conditions"] == [{"type": "Ready", "status": "True"}]
    # the hotplug labels went in the same patch as the target label
    assert vmi["metadata"]["labels"] == {"kubevirt.io/nodeName": TARGET}
    assert status["migrationState"]["completed"] is True
    assert not [
        event for event in world.events.seen if event[0] != "PreparingTarget" and event[0] != "Migrated"
    ]


def test_a_failed_memory_hotplug_is_marked_and_the_take_over_goes_on(world: World) -> None:
    hotplugging(world)
    world.launcher.failing["SyncVirtualMachineMemory"] = CommandFailedError(
        "SyncVirtualMachineMemory", "failed to update Guest Memory: unsupported configuration"
    )
    vmi = take_over(world)
    assert world.launcher.calls[-1] == "FinalizeVirtualMachineMigration"
    failed = [c for c in vmi["status"]["conditions"] if c["type"] == "HotMemoryChange"]
    assert [(c["status"], c["reason"], c["message"]) for c in failed] == [
        ("False", "Memory Hotplug Failed", "memory hotplug failed, the VM configuration is not supported")
    ]
    assert vmi["status"]["memory"]["guestRequested"] == "1Gi"  # unchanged
    assert vmi["status"]["currentCPUTopology"]["sockets"] == 2  # the CPUs made it
    assert vmi["metadata"]["labels"] == {"kubevirt.io/nodeName": TARGET}
    reasons = dict(world.events.seen)
    assert reasons[str(world.launcher.failing["SyncVirtualMachineMemory"])] == "failed to update guest memory"
    assert vmi["status"]["migrationState"]["completed"] is True


def test_a_target_pod_too_small_for_the_new_memory_is_not_asked_to_grow(world: World) -> None:
    hotplugging(world, pod_memory="1Gi", conditions=("HotMemoryChange",))
    vmi = take_over(world)
    assert "SyncVirtualMachineMemory" not in world.launcher.calls
    assert "SyncVirtualMachineCPUs" not in world.launcher.calls  # no vCPU change
    assert vmi["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert vmi["status"]["memory"]["guestRequested"] == "1Gi"
    message = "amount of requested guest memory (2Gi) exceeds the launcher memory request (1Gi)"
    assert (message, "failed to update guest memory") in world.events.seen


def test_the_launcher_pods_overhead_counts_against_its_memory_request(world: World) -> None:
    seen: list[str | None] = []

    def overhead(vmi: JSON, ratio: str | None) -> Quantity:
        seen.append(ratio)
        return Quantity("600Mi")

    world.target = MigrationTarget(
        node=TARGET,
        vmi_store=world.store,
        address="127.0.0.1",
        memory_overhead=overhead,
        api=world.api,
        events=world.events,
        pods_dir=world.pods_dir,
        connect=lambda _path: world.launcher,
        proxies=world.proxies,
        pod_root=lambda _socket: PodRoot(world.pod_root),
    )
    hotplugging(world, pod_memory="2560Mi", conditions=("HotMemoryChange",))  # 2Gi + 600Mi do not fit
    take_over(world)
    assert seen == ["1.0"]
    assert "SyncVirtualMachineMemory" not in world.launcher.calls


def test_a_launcher_gone_during_the_hotplug_leaves_the_take_over_for_later(world: World) -> None:
    hotplugging(world)
    world.launcher.failing["SyncVirtualMachineCPUs"] = LauncherDisconnectedError("gone")
    vmi = take_over(world)
    assert "FinalizeVirtualMachineMigration" not in world.launcher.calls
    assert vmi["status"]["nodeName"] == SOURCE
    assert {c["type"] for c in vmi["status"]["conditions"]} == {"Ready", "HotVCPUChange", "HotMemoryChange"}
    del world.launcher.failing["SyncVirtualMachineCPUs"]
    world.run_target()
    vmi = world.vmi()
    assert vmi["status"]["nodeName"] == TARGET
    assert vmi["status"]["currentCPUTopology"]["sockets"] == 2


def test_a_block_migration_target_also_listens_for_the_disks(world: World) -> None:
    """A VMI with node-local disks is copied through the block migration port too (as KubeVirt)."""
    patch = {"status": {"migrationMethod": "BlockMigration"}}
    world.api.patch(VIRTUAL_MACHINE_INSTANCES, "default", "vm", patch, patch_type="merge")
    world.run_target()
    ports = world.state()["targetDirectMigrationNodePorts"]
    assert sorted(ports.values()) == [0, 49152, 49153]
    assert world.proxies.target_ports(world.uid) == ports


def test_a_failed_migration_releases_the_target_launcher_and_its_label(world: World) -> None:
    world.run_target()
    assert world.proxies.running(world.uid)
    world.report(failed=True, endTimestamp="e")
    world.run_target()
    assert world.launcher.calls == ["SyncMigrationTarget", "SignalTargetPodCleanup"]
    assert "kubevirt.io/migrationTargetNodeName" not in world.vmi()["metadata"]["labels"]
    assert not world.proxies.running(world.uid)


class FakeMounter:
    """The node's containerDisk mounter and pod network setup, recording into the launcher's calls."""

    def __init__(self, launcher: FakeLauncher) -> None:
        self.launcher = launcher
        self.disks_up = False

    def mount(self, vmi: Any, node: str) -> bool:
        if not self.disks_up:
            return False
        self.launcher.calls.append(f"mount on {node}")
        return True

    def unmount(self, vmi_uid: str) -> None:
        self.launcher.calls.append(f"unmount {vmi_uid}")

    def setup(self, vmi: Any, launcher_socket: Path) -> None:
        self.launcher.calls.append("pod network phase 1")

    def forget(self, uid: str) -> None:
        self.launcher.calls.append(f"forget network of {uid}")


def test_the_target_mounts_the_containerdisks_and_wires_the_pod_network_before_preparing(
    world: World,
) -> None:
    mounter = FakeMounter(world.launcher)
    world.target = MigrationTarget(
        node=TARGET,
        vmi_store=world.store,
        address="127.0.0.1",
        mounter=mounter,
        network=mounter,
        api=world.api,
        events=world.events,
        pods_dir=world.pods_dir,
        connect=lambda _path: world.launcher,
        proxies=world.proxies,
        pod_root=lambda _socket: PodRoot(world.pod_root),
    )
    world.run_target()
    assert world.launcher.calls == []  # the disk containers are not up yet: nothing is prepared
    mounter.disks_up = True
    world.run_target()
    # The node's record of an earlier pod of the VMI here (a failed migration) is not taken for this pod's.
    assert world.launcher.calls == [
        f"mount on {TARGET}",
        f"forget network of {world.uid}",
        "pod network phase 1",
        "SyncMigrationTarget",
    ]
    world.report(failed=True, endTimestamp="e")
    world.run_target()
    assert world.launcher.calls[-2:] == ["SignalTargetPodCleanup", f"unmount {world.uid}"]


def test_a_target_that_never_reports_the_domain_fails_the_vmi_after_a_minute(world: World) -> None:
    world.report(targetNodeAddress="127.0.0.1", targetDirectMigrationNodePorts={"1": 0})
    ended = {"UID": "mig-1", "EndTimestamp": "2026-01-01T00:00:03Z", "Completed": True, "Mode": "PreCopy"}
    world.launcher.domain = domain("Shutoff", "Migrated", ended)
    with pytest.raises(RequeueAfter) as wait:
        world.source.reconcile(world.vmi())
    assert wait.value.seconds == pytest.approx(33)
    assert world.vmi()["status"]["phase"] == "Running"
    assert world.state()["endTimestamp"] == "2026-01-01T00:00:03Z"

    world.now += timedelta(seconds=34)
    world.run_source()
    vmi = world.vmi()
    assert vmi["status"]["phase"] == "Failed"
    assert (vmi["status"]["migrationState"]["failed"], vmi["status"]["migrationState"]["completed"]) == (
        True,
        True,
    )
    assert world.events.seen[-1] == (
        "Migrated",
        "The VirtualMachineInstance's domain was never observed on the target after the migration "
        "completed within the timeout period.",
    )


def test_a_confirmed_target_leaves_the_vmi_to_it(world: World) -> None:
    world.report(targetNodeAddress="127.0.0.1", targetDirectMigrationNodePorts={"1": 0})
    world.report(targetNodeDomainReadyTimestamp="2026-01-01T00:00:04Z")
    ended = {"UID": "mig-1", "EndTimestamp": "2026-01-01T00:00:03Z", "Completed": True, "Mode": "PreCopy"}
    world.launcher.domain = domain("Shutoff", "Migrated", ended)
    world.now += timedelta(hours=1)
    world.source.reconcile(world.vmi())  # no requeue: nothing left for the source to wait for
    assert world.vmi()["status"]["phase"] == "Running"


TARGET_ATTACH = "hp-pod-b"  # the attachment pod virt-controller made next to the target pod


class FakeHotplug:
    """The node's hotplug mounter, recording into the launcher's calls; ``in_pod`` is what it put into the
    target pod, ``refusal`` what it refuses (as an attachment pod of another namespace is)."""

    def __init__(self, launcher: FakeLauncher) -> None:
        self.launcher = launcher
        self.in_pod: set[str] = set()
        self.available = True
        self.refusal: str | None = None
        self.busy = False
        self.launchers: list[str] = []

    def mount(self, vmi: Any, launcher: LauncherPod, *, from_pod: str = "") -> list[str]:
        self.launcher.calls.append(f"mount hotplug from {from_pod}")
        self.launchers.append(launcher.uid)
        if self.refusal is not None:
            raise HotplugVolumeError(self.refusal)
        if self.available:
            self.in_pod |= {volume.name for volume in hotplug_volumes(vmi, from_pod=from_pod)}
        return []

    def mounted(self, vmi: Any) -> frozenset[str]:
        return frozenset(self.in_pod)

    def unmount_all(self, vmi_uid: str) -> None:
        if self.busy:
            raise HotplugVolumeError("failed to unmount hotplug volume hp: Device or resource busy")
        self.launcher.calls.append(f"unmount hotplug {vmi_uid}")
        self.in_pod.clear()


def _with_hotplug(world: World, *, attachment: str | None = TARGET_ATTACH) -> FakeHotplug:
    """The world's VMI with a hotplugged claim the source's domain has, and a target using the fake."""
    patch: JSON = {
        "spec": {
            "volumes": [
                {"name": "root", "containerDisk": {"image": "guest"}},
                {"name": "hp", "persistentVolumeClaim": {"claimName": "c", "hotpluggable": True}},
            ]
        },
        "status": {
            "volumeStatus": [
                {"name": "root", "target": "vda"},
                {
                    "name": "hp",
                    "target": "sda",
                    "phase": "Ready",
                    "hotplugVolume": {"attachPodName": "hp-volume-a", "attachPodUID": "hp-pod-a"},
                    "persistentVolumeClaimInfo": {"claimName": "c", "volumeMode": "Filesystem"},
                },
            ],
            "migrationState": {"targetAttachmentPodUID": attachment},
        },
    }
    world.api.patch(VIRTUAL_MACHINE_INSTANCES, "default", "vm", patch, patch_type="merge")
    hotplug = FakeHotplug(world.launcher)
    mounter = FakeMounter(world.launcher)
    mounter.disks_up = True
    world.target = MigrationTarget(
        node=TARGET,
        vmi_store=world.store,
        address="127.0.0.1",
        mounter=mounter,
        hotplug=hotplug,
        api=world.api,
        events=world.events,
        pods_dir=world.pods_dir,
        connect=lambda _path: world.launcher,
        proxies=world.proxies,
        pod_root=lambda _socket: PodRoot(world.pod_root),
    )
    return hotplug


def test_the_target_mounts_the_hotplugged_volumes_from_its_attachment_pod_before_preparing(
    world: World,
) -> None:
    hotplug = _with_hotplug(world)
    world.run_target()
    assert world.launcher.calls == [
        f"mount on {TARGET}",
        f"mount hotplug from {TARGET_ATTACH}",
        "SyncMigrationTarget",
    ]
    assert hotplug.launchers == [TARGET_POD]  # into the target's launcher pod, not the source's
    world.run_target()
    assert world.launcher.calls.count(f"mount hotplug from {TARGET_ATTACH}") == 1  # prepared once


def test_without_a_target_attachment_pod_no_hotplugged_volume_is_mounted(world: World) -> None:
    hotplug = _with_hotplug(world, attachment=None)
    world.run_target()
    assert world.launcher.calls == [f"mount on {TARGET}", "SyncMigrationTarget"]
    assert hotplug.launchers == []


def test_the_target_is_prepared_only_once_the_domains_volumes_are_in_its_pod(world: World) -> None:
    hotplug = _with_hotplug(world)
    hotplug.available = False  # the attachment pod does not run yet
    world.store.upsert(world.vmi())
    with pytest.raises(RequeueAfter):
        world.target.reconcile("default/vm")
    assert "SyncMigrationTarget" not in world.launcher.calls
    assert "targetNodeAddress" not in world.state()
    hotplug.available = True
    world.run_target()
    assert world.launcher.calls[-1] == "SyncMigrationTarget"


def test_a_refused_attachment_pod_keeps_the_target_from_preparing(world: World) -> None:
    hotplug = _with_hotplug(world)
    hotplug.refusal = (
        "failed to mount filesystem hotplug volume hp: refused, the attachment pod hp-pod-b is in namespace "
        "victim, not in the VMI's namespace default"
    )
    world.run_target()
    world.run_target()
    assert "SyncMigrationTarget" not in world.launcher.calls
    assert not world.proxies.running(world.uid)


def test_a_failed_migration_unmounts_the_target_pods_volumes_before_the_label_goes(world: World) -> None:
    hotplug = _with_hotplug(world)
    world.run_target()
    assert hotplug.in_pod == {"hp"}
    world.report(failed=True, endTimestamp="e")
    hotplug.busy = True
    world.store.upsert(world.vmi())
    with pytest.raises(RequeueAfter):
        world.target.reconcile("default/vm")
    # Not unmounted yet: the label stays, so the target comes back to it.
    assert "kubevirt.io/migrationTargetNodeName" in world.vmi()["metadata"]["labels"]
    hotplug.busy = False
    world.run_target()
    assert world.launcher.calls[-3:] == [
        "SignalTargetPodCleanup",
        f"unmount {world.uid}",
        f"unmount hotplug {world.uid}",
    ]
    assert hotplug.in_pod == set()
    assert "kubevirt.io/migrationTargetNodeName" not in world.vmi()["metadata"]["labels"]


def test_a_vmi_deleted_while_the_target_prepares_has_its_target_mounts_removed(world: World) -> None:
    hotplug = _with_hotplug(world)
    world.run_target()
    vmi = world.vmi()
    vmi["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:10Z"
    world.store.upsert(vmi)
    world.target.reconcile("default/vm")
    assert world.launcher.calls[-2:] == [f"unmount {world.uid}", f"unmount hotplug {world.uid}"]
    assert hotplug.in_pod == set()
    assert not world.proxies.running(world.uid)


def test_a_successful_migration_leaves_the_target_mounts_to_the_vm_controller(world: World) -> None:
    hotplug = _with_hotplug(world)
    world.run_target()
    world.launcher.domain = domain("Running", "Unknown")
    world.report(endTimestamp="2026-01-01T00:00:03Z")
    world.run_target()
    assert world.vmi()["status"]["migrationState"]["completed"] is True
    assert hotplug.in_pod == {"hp"}
    assert not any(call.startswith("unmount") for call in world.launcher.calls)
