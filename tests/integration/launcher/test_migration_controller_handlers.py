"""Live migration through the whole control path: a VirtualMachineInstanceMigration in a real
kube-apiserver, virt-controller's VMI and migration controllers, two virt-handlers' logic (node-a and
node-b, each with its own pods directory and migration proxies speaking mutual TLS on loopback) and
two real launchers, each with its own libvirtd, moving the busybox guest under TCG.

No scheduler or kubelet runs here: the test plays them. It binds each launcher pod the controllers
create to its node, starts a launcher for it in a pod-like mount namespace, mounts the launcher's
``sockets`` directory where that node's kubelet would keep the pod's emptyDir, and reports the pod
Running. Everything else (target pod, hand-off, proxies, MigrateVirtualMachine, take-over) is the code
under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import (
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    EventRecorder,
    KubeClient,
    Resource,
)
from kubevirt.controller import (
    Controller,
    ControllerExpectations,
    RateLimitingQueue,
    SharedInformerFactory,
    UIDTrackingControllerExpectations,
    key_of,
)
from kubevirt.virt_config.migrations import MigrationConfig
from kubevirt.virt_controller.watch.migration import MigrationController
from kubevirt.virt_controller.watch.vmi import VMIController
from kubevirt.virt_handler.migration import MIGRATION_TARGET_NODE_NAME_LABEL, MigrationSource, MigrationTarget
from kubevirt.virt_handler.migration_proxy import ProxyManager
from kubevirt.virt_handler.pod_sockets import connect_launcher
from kubevirt.virt_handler.vm_controller import VMController
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_testing.certificates import CertificateAuthority
from kubevirt_testing.migration_tls import migration_tls

pytestmark = pytest.mark.timeout(300)

EMPTY_DIR = Path("volumes/kubernetes.io~empty-dir/sockets")
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
BOOT_BUDGET = 60.0
MIGRATION_BUDGET = 90.0


def render_pod(vmi: VirtualMachineInstance) -> dict[str, Any]:
    """Just enough of a launcher pod for the API server; no kubelet runs it (the test does)."""
    assert vmi.metadata is not None
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"virt-launcher-{vmi.metadata.name}-",
            "labels": {"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": vmi.metadata.uid},
            "annotations": {"kubevirt.io/domain": vmi.metadata.name},
        },
        "spec": {"containers": [{"name": "compute", "image": "virt-launcher:test"}]},
    }


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s"
        time.sleep(0.1)


class Node:
    """One node's virt-handler logic: the VM controller (with the migration source role) and the
    migration target controller, on their own informers, pods directory and proxies."""

    def __init__(self, kube: KubeClient, namespace: str, name: str, ca: CertificateAuthority) -> None:
        self.name = name
        self.kube = kube
        self.pods_dir = Path(tempfile.mkdtemp(prefix=f"h{name[-1]}", dir="/tmp"))
        self.mounts: list[Path] = []
        # Mutual TLS between the nodes' proxies, with certificates from one cluster CA.
        tls = migration_tls(self.pods_dir.parent / f"{self.pods_dir.name}-tls", ca, name)
        self.proxies = ProxyManager(listen_address="127.0.0.1", tls=lambda: tls)
        self.events = EventRecorder(kube, "virt-handler", host=name)
        self.factory = SharedInformerFactory(kube)
        self.stop_event = threading.Event()
        roles: dict[str, Any] = {
            "api": kube,
            "events": self.events,
            "node": name,
            "pods_dir": self.pods_dir,
            "connect": connect_launcher,
            "proxies": self.proxies,
        }
        vmis = self.factory.informer(
            VIRTUAL_MACHINE_INSTANCES, namespace=namespace, label_selector=f"kubevirt.io/nodeName={name}"
        )
        targets = self.factory.informer(
            VIRTUAL_MACHINE_INSTANCES,
            namespace=namespace,
            label_selector=f"{MIGRATION_TARGET_NODE_NAME_LABEL}={name}",
        )
        vm_queue = RateLimitingQueue(name=f"vm-{name}")
        target_queue = RateLimitingQueue(name=f"target-{name}")
        vm = VMController(
            api=kube,
            events=self.events,
            vmi_store=vmis.store,
            node=name,
            pods_dir=self.pods_dir,
            connect=connect_launcher,
            migration_source=MigrationSource(**roles),
        )
        target = MigrationTarget(vmi_store=targets.store, address="127.0.0.1", **roles)
        for informer, queue in ((vmis, vm_queue), (targets, target_queue)):
            informer.add_event_handler(
                lambda obj, q=queue: q.add(key_of(obj)),
                lambda _old, new, q=queue: q.add(key_of(new)),
                lambda obj, q=queue: q.add(key_of(obj)),
            )
        self.factory.start()
        assert self.factory.wait_for_cache_sync(30)
        self.threads = [
            threading.Thread(
                target=Controller(f"vm-{name}", vm_queue, vm, workers=2).run, args=(self.stop_event,)
            ),
            threading.Thread(
                target=Controller(f"target-{name}", target_queue, target, workers=1).run,
                args=(self.stop_event,),
            ),
        ]
        for thread in self.threads:
            thread.start()

    def kubelet_mounts(self, pod_uid: str, launcher: Any) -> None:
        """Where this node's kubelet keeps the pod's ``sockets`` emptyDir: the launcher's sockets."""
        sockets = self.pods_dir / pod_uid / EMPTY_DIR
        sockets.mkdir(parents=True)
        subprocess.run(["mount", "--bind", str(launcher.share_dir / "sockets"), str(sockets)], check=True)
        self.mounts.append(sockets)

    def stop(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(10)
        self.factory.stop()
        self.events.stop()
        self.proxies.shut_down()
        for mounted in self.mounts:
            subprocess.run(["umount", "-l", str(mounted)], check=False, capture_output=True)
        for leftover in (self.pods_dir, self.pods_dir.parent / f"{self.pods_dir.name}-tls"):
            subprocess.run(["rm", "-rf", "--one-file-system", str(leftover)], check=False)


class ControlPlane:
    """virt-controller's VMI and migration controllers, and a record of every VMIM phase seen."""

    def __init__(self, kube: KubeClient, namespace: str, config: MigrationConfig) -> None:
        self.config = config
        self.events = EventRecorder(kube, "virt-controller")
        self.factory = SharedInformerFactory(kube)
        vmis = self.factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance, namespace=namespace)
        pods = self.factory.informer(PODS, namespace=namespace)
        migrations = self.factory.informer(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace=namespace)
        vms = self.factory.informer(VIRTUAL_MACHINES, namespace=namespace)
        self.phases: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        vmi_queue, migration_queue = RateLimitingQueue("vmi"), RateLimitingQueue("migration")
        vmi = VMIController(
            api=kube,
            events=self.events,
            vmi_store=vmis.store,
            pod_store=pods.store,
            vm_store=vms.store,
            render_pod=render_pod,
            pod_expectations=UIDTrackingControllerExpectations(),
            vmi_expectations=ControllerExpectations(),
            enqueue=vmi_queue.add,
        )
        migration = MigrationController(
            api=kube,
            events=self.events,
            migration_store=migrations.store,
            vmi_store=vmis.store,
            pod_store=pods.store,
            render_pod=render_pod,
            config=lambda: self.config,
            enqueue=migration_queue.add,
        )
        vmis.add_event_handler(vmi.on_vmi_add, vmi.on_vmi_update, vmi.on_vmi_delete)
        pods.add_event_handler(vmi.on_pod_add, vmi.on_pod_update, vmi.on_pod_delete)
        vmis.add_event_handler(migration.on_vmi_add, migration.on_vmi_update, migration.on_vmi_delete)
        pods.add_event_handler(migration.on_pod_add, migration.on_pod_update, migration.on_pod_delete)
        migrations.add_event_handler(
            migration.on_migration_add, migration.on_migration_update, migration.on_migration_delete
        )
        migrations.add_event_handler(self._seen, lambda _old, new: self._seen(new), self._seen)
        self.factory.start()
        assert self.factory.wait_for_cache_sync(30)
        self.stop_event = threading.Event()
        self.threads = [
            threading.Thread(
                target=Controller("vmi", vmi_queue, vmi, workers=2).run, args=(self.stop_event,)
            ),
            threading.Thread(
                target=Controller("migration", migration_queue, migration, workers=2).run,
                args=(self.stop_event,),
            ),
        ]
        for thread in self.threads:
            thread.start()

    def _seen(self, migration: dict[str, Any]) -> None:
        phase = (migration.get("status") or {}).get("phase")
        with self._lock:
            seen = self.phases.setdefault(migration["metadata"]["name"], [])
            if phase and (not seen or seen[-1] != phase):
                seen.append(phase)

    def seen(self, name: str) -> list[str]:
        with self._lock:
            return list(self.phases.get(name, []))

    def stop(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(10)
        self.factory.stop()
        self.events.stop()


class Scenario:
    def __init__(self, kube: KubeClient, namespace: str, launcher_pods: Any, make_vmi: Any) -> None:
        self.kube = kube
        self.namespace = namespace
        self.launcher_pods = launcher_pods
        self.make_vmi = make_vmi
        self.control: ControlPlane | None = None
        self.nodes: dict[str, Node] = {}

    def start(self, config: MigrationConfig) -> None:
        self.control = ControlPlane(self.kube, self.namespace, config)
        ca = CertificateAuthority.create()
        self.nodes = {name: Node(self.kube, self.namespace, name, ca) for name in ("node-a", "node-b")}

    def stop(self) -> None:
        for node in self.nodes.values():
            node.stop()
        if self.control is not None:
            self.control.stop()

    def vmi(self, name: str) -> dict[str, Any]:
        return self.kube.get(VIRTUAL_MACHINE_INSTANCES, self.namespace, name)

    def pods(self, **labels: str) -> list[dict[str, Any]]:
        return [
            p
            for p in self.kube.list(PODS, self.namespace)[0]
            if all((p["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())
        ]

    def kubelet_runs(self, pod: dict[str, Any], node: str, vmi: dict[str, Any], launcher_name: str) -> Any:
        """Schedules ``pod`` to ``node`` and runs it: a launcher, its sockets mounted, status Running."""
        name = pod["metadata"]["name"]
        self.kube.request(
            "POST",
            PODS.path(self.namespace, name, "binding"),
            body={
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            },
        )
        # The kubelet gives the launcher its pod's name (the downward API's POD_NAME).
        previous = os.environ.get("POD_NAME")
        os.environ["POD_NAME"] = name
        try:
            launcher = self.launcher_pods(
                vmi, name=launcher_name, grace_period=60, pod_uid=pod["metadata"]["uid"]
            )
        finally:
            if previous is None:
                del os.environ["POD_NAME"]
            else:
                os.environ["POD_NAME"] = previous
        self.nodes[node].kubelet_mounts(pod["metadata"]["uid"], launcher)
        status = {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [
                {
                    "name": "compute",
                    "ready": True,
                    "restartCount": 0,
                    "image": "virt-launcher:test",
                    "imageID": "",
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                }
            ],
        }
        self.kube.patch(
            PODS, self.namespace, name, {"status": status}, patch_type="merge", subresource="status"
        )
        return launcher

    def running_guest(self, name: str, guest_marker: str) -> tuple[dict[str, Any], Any]:
        """A VMI booted on node-a the whole way: VMI controller, kubelet (the test), virt-handler."""
        vmi = self.make_vmi(name)
        vmi["metadata"]["namespace"] = self.namespace
        del vmi["metadata"]["uid"]
        created = self.kube.create(
            VIRTUAL_MACHINE_INSTANCES, self.namespace, {k: v for k, v in vmi.items() if k != "status"}
        )
        vmi["metadata"]["uid"] = created["metadata"]["uid"]
        [pod] = wait_for(
            lambda: self.pods(**{"kubevirt.io/created-by": vmi["metadata"]["uid"]}), 20, "launcher pod"
        )
        source = self.kubelet_runs(pod, "node-a", vmi, "source")
        wait_for(
            lambda: self.vmi(name).get("status", {}).get("phase") == "Running", BOOT_BUDGET, "VMI Running"
        )
        source.wait_for_serial(guest_marker, BOOT_BUDGET)
        return vmi, source

    def migrate(self, vmi: dict[str, Any], migration: str) -> tuple[dict[str, Any], Any]:
        """Creates the VMIM and plays node-b's kubelet for the target pod it makes."""
        self.kube.create(
            VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
            self.namespace,
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachineInstanceMigration",
                "metadata": {"name": migration},
                "spec": {"vmiName": vmi["metadata"]["name"]},
            },
        )
        created = self.kube.get(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, self.namespace, migration)
        [pod] = wait_for(
            lambda: self.pods(**{"kubevirt.io/migrationJobUID": created["metadata"]["uid"]}), 20, "target pod"
        )
        target = self.kubelet_runs(pod, "node-b", vmi, f"target-{migration}")
        return pod, target

    def reasons(self, name: str) -> list[str]:
        items = self.kube.list(EVENTS, self.namespace)[0]
        found = [e for e in items if e["involvedObject"].get("name") == name]
        return [e["reason"] for e in sorted(found, key=lambda e: e["metadata"]["creationTimestamp"])]


@pytest.fixture
def scenario(kube: KubeClient, namespace: str, launcher_pods: Any, make_vmi: Any) -> Iterator[Scenario]:
    scenario = Scenario(kube, namespace, launcher_pods, make_vmi)
    try:
        yield scenario
    finally:
        scenario.stop()


def test_a_vmim_moves_the_running_guest_from_node_a_to_node_b(scenario: Scenario, guest_marker: str) -> None:
    scenario.start(MigrationConfig(allow_auto_converge=True))
    vmi, source = scenario.running_guest("mover", guest_marker)
    assert scenario.vmi("mover")["status"]["nodeName"] == "node-a"

    started = time.monotonic()
    target_pod, target = scenario.migrate(vmi, "move-1")
    moved = wait_for(
        lambda: (v := scenario.vmi("mover"))["status"].get("nodeName") == "node-b" and v,
        MIGRATION_BUDGET,
        "VMI on node-b",
    )
    wait_for(
        lambda: scenario.control and scenario.control.seen("move-1")[-1:] == ["Succeeded"], 20, "Succeeded"
    )
    print(f"VMIM created to Succeeded in {time.monotonic() - started:.1f}s (target pod started by the test)")

    assert scenario.control is not None
    assert scenario.control.seen("move-1") == [
        "Pending",
        "Scheduling",
        "Scheduled",
        "PreparingTarget",
        "TargetReady",
        "Running",
        "Succeeded",
    ]
    migration = scenario.kube.get(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, scenario.namespace, "move-1")
    assert migration["metadata"].get("finalizers") in (None, [])
    state = moved["status"]["migrationState"]
    assert migration["status"]["migrationState"]["migrationUid"] == migration["metadata"]["uid"]
    assert (state["sourceNode"], state["targetNode"]) == ("node-a", "node-b")
    assert state["targetPod"] == target_pod["metadata"]["name"]
    assert state["targetNodeAddress"] == "127.0.0.1"
    assert sorted(state["targetDirectMigrationNodePorts"].values()) == [0, 49152]
    assert state["targetNodeDomainDetected"] is True
    assert state["targetNodeDomainReadyTimestamp"]
    assert state["startTimestamp"]
    assert state["endTimestamp"]
    assert state["completed"] is True
    assert not state.get("failed")
    assert state["mode"] == "PreCopy"
    assert moved["metadata"]["labels"]["kubevirt.io/nodeName"] == "node-b"
    assert MIGRATION_TARGET_NODE_NAME_LABEL not in moved["metadata"]["labels"]
    assert moved["status"]["phase"] == "Running"
    # Events are sent asynchronously: wait for them.
    wait_for(lambda: "Migrated" in scenario.reasons("mover"), 10, "the Migrated event")
    expected = {"SuccessfulCreate", "SuccessfulHandOver", "SuccessfulMigration"}
    wait_for(lambda: expected <= set(scenario.reasons("move-1")), 10, "the migration's events")

    # The guest carries on on node-b without a reboot; node-a's launcher undefined its copy and exited.
    last_on_source = source.last_tick()
    assert target.wait_for_tick_after(last_on_source, timeout=30) > last_on_source
    assert guest_marker not in target.serial_text()
    assert target.status()[0] == "Running"
    assert source.wait_exit(30) == 0
    # The source launcher logged libvirt's own account of the guest's downtime (benchmarks read it).
    finished = [line for line in source.log_path.read_text().splitlines() if "migration finished" in line]
    timings = json.loads(finished[-1])
    assert 0 < timings["downtime_ms"] < timings["elapsed_ms"]
    print(f"libvirt: downtime {timings['downtime_ms']} ms, migration {timings['elapsed_ms']} ms")
    # node-b's VM controller owns the VMI now and keeps it Running.
    time.sleep(2)
    after = scenario.vmi("mover")
    assert (after["status"]["phase"], after["status"]["nodeName"]) == ("Running", "node-b")


def test_deleting_a_running_vmim_aborts_it_and_the_guest_stays_on_node_a(
    scenario: Scenario, guest_marker: str
) -> None:
    # 1 MiB/s: 128 MiB cannot go across before the cancel.
    scenario.start(MigrationConfig(bandwidth_per_migration="1Mi"))
    vmi, source = scenario.running_guest("stayer", guest_marker)
    target_pod, target = scenario.migrate(vmi, "cancel-1")
    assert scenario.control is not None
    wait_for(lambda: "Running" in scenario.control.seen("cancel-1"), MIGRATION_BUDGET, "VMIM Running")
    tick = source.last_tick()

    scenario.kube.delete(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, scenario.namespace, "cancel-1")
    wait_for(lambda: scenario.control.seen("cancel-1")[-1:] == ["Failed"], 60, "VMIM Failed")
    wait_for(
        lambda: not list(scenario.kube.list(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, scenario.namespace)[0]),
        20,
        "the finished VMIM released by its finalizer",
    )
    vmi_now = scenario.vmi("stayer")
    state = vmi_now["status"]["migrationState"]
    assert state["abortRequested"] is True
    assert state["abortStatus"] == "Succeeded"
    assert state["failed"] is True
    assert (vmi_now["status"]["phase"], vmi_now["status"]["nodeName"]) == ("Running", "node-a")
    assert vmi_now["metadata"]["labels"]["kubevirt.io/nodeName"] == "node-a"
    wait_for(
        lambda: (
            MIGRATION_TARGET_NODE_NAME_LABEL not in (scenario.vmi("stayer")["metadata"].get("labels") or {})
        ),
        20,
        "target label removed",
    )
    expected = {"SuccessfulAbortMigration", "FailedMigration"}
    wait_for(lambda: expected <= set(scenario.reasons("cancel-1")), 10, "the abort's events")
    # The guest keeps running on node-a; the target pod is deleted and its launcher exits.
    assert source.status()[0] == "Running"
    assert source.wait_for_tick_after(tick) > tick
    job = {"kubevirt.io/migrationJobUID": target_pod["metadata"]["labels"]["kubevirt.io/migrationJobUID"]}
    [going] = wait_for(
        lambda: [p for p in scenario.pods(**job) if p["metadata"].get("deletionTimestamp")],
        30,
        "target pod deleted",
    )
    # The target launcher exits by itself: its incoming domain went away, or (when it never saw it
    # run) node-b's handler released it with SignalTargetPodCleanup.
    assert target.wait_exit(30) == 0
    logs = target.logs()
    assert "released as migration target by virt-handler" in logs or "the domain is gone" in logs
    # The kubelet confirms the deletion once the pod's containers are gone.
    scenario.kube.delete(PODS, scenario.namespace, going["metadata"]["name"], grace_period_seconds=0)
    assert scenario.vmi("stayer")["status"]["nodeName"] == "node-a"


def test_an_unschedulable_target_pod_fails_the_migration_after_its_timeout(scenario: Scenario) -> None:
    """No guest needed: nothing reaches a handler before the target pod runs."""
    scenario.start(MigrationConfig())
    vmi = scenario.make_vmi("waiter")
    vmi["metadata"]["namespace"] = scenario.namespace
    del vmi["metadata"]["uid"]
    created = scenario.kube.create(
        VIRTUAL_MACHINE_INSTANCES, scenario.namespace, {k: v for k, v in vmi.items() if k != "status"}
    )
    # Once its launcher pod exists, virt-controller's caches know the VMI.
    wait_for(lambda: scenario.pods(**{"kubevirt.io/created-by": created["metadata"]["uid"]}), 20, "VMI's pod")
    scenario.kube.create(
        VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
        scenario.namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstanceMigration",
            "metadata": {
                "name": "nowhere",
                "annotations": {"kubevirt.io/migrationUnschedulablePodTimeoutSeconds": "2"},
            },
            "spec": {"vmiName": "waiter"},
        },
    )
    uid = scenario.kube.get(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, scenario.namespace, "nowhere")["metadata"][
        "uid"
    ]
    [pod] = wait_for(lambda: scenario.pods(**{"kubevirt.io/migrationJobUID": uid}), 20, "target pod")
    # The scheduler finds no node for it.
    unschedulable = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes"}
        ],
    }
    scenario.kube.patch(
        PODS,
        scenario.namespace,
        pod["metadata"]["name"],
        {"status": unschedulable},
        patch_type="merge",
        subresource="status",
    )
    assert scenario.control is not None
    wait_for(lambda: scenario.control.seen("nowhere")[-1:] == ["Failed"], 30, "VMIM Failed")
    assert scenario.control.seen("nowhere") == ["Pending", "Scheduling", "Failed"]
    assert not scenario.pods(**{"kubevirt.io/migrationJobUID": uid})
    expected = {"migrationTargetPodUnschedulable", "SuccessfulDelete", "FailedMigration"}
    wait_for(lambda: expected <= set(scenario.reasons("nowhere")), 10, "the timeout's events")
    events = scenario.kube.list(EVENTS, scenario.namespace)[0]
    messages = {e["reason"]: e["message"] for e in events if e["involvedObject"].get("name") == "nowhere"}
    assert messages["FailedMigration"] == "Migration target pod was removed during active migration."
    assert "timeout period exceeded" in messages["SuccessfulDelete"]
    assert "migrationState" not in scenario.vmi("waiter").get("status", {})
