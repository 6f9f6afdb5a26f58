"""A VMI's way to Running against a real kube-apiserver, counting every VMI and pod write on the way.

virt-controller's VMI controller and virt-handler's VM controller run on their own informers and queues
(as in two processes); virt-handler drives a real virt-launcher command server on libvirt's test driver.
The test plays the kube-scheduler (the rendered pod names its node) and the kubelet (it reports the
compute container running and the pod Ready once the readiness gate is set). The budget: two VMI updates
by virt-controller (Scheduling, Scheduled), one by virt-handler (Running, with Ready=True), no VMI patch.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libvirt
import pytest

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES, EventRecorder, KubeClient
from kubevirt.controller import (
    Controller,
    ControllerExpectations,
    RateLimitingQueue,
    SharedInformerFactory,
    UIDTrackingControllerExpectations,
    key_of,
)
from kubevirt.handler_launcher_com.cmd.client import LauncherClient
from kubevirt.handler_launcher_com.sockets import cmd_socket_path
from kubevirt.virt_controller.watch.vmi import VMIController
from kubevirt.virt_handler.vm_controller import VMController
from kubevirt.virt_launcher.events import start_event_loop
from kubevirt.virt_launcher.virtwrap.cmd_server.server import CommandServer, serve
from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.migration import Migrator
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance
from kubevirt_testing.controller_threads import controller_threads, launcher_pod
from kubevirt_testing.counting_api import CountingApi
from kubevirt_testing.driver_domain import driver_domain_xml
from kubevirt_testing.launcher_socket import launcher_socket
from kubevirt_testing.waiting import eventually

pytestmark = pytest.mark.timeout(120)

NODE = "writes-node"
UNPAUSED_GATE = "kubevirt.io/virtual-machine-unpaused"


def render_pod(vmi: VirtualMachineInstance) -> dict[str, Any]:
    """The launcher pod, already bound to the node (there is no scheduler here)."""
    return launcher_pod(vmi, node=NODE, readinessGates=[{"conditionType": UNPAUSED_GATE}])


@dataclass
class Components:
    controller_api: CountingApi
    handler_api: CountingApi
    pods_dir: Path


@pytest.fixture
def launcher_socket_path(tmp_path: Path) -> Iterator[Path]:
    """A virt-launcher command server on a fresh test-driver node, on a short socket path."""
    start_event_loop()
    libvirt.registerErrorHandler(lambda *_: None, None)
    node = tmp_path / "node.xml"
    node.write_text("<node/>")
    conn = libvirt.open(f"test://{node}")
    share = Path(tempfile.mkdtemp(prefix="l", dir="/tmp"))  # short: socket paths have a size limit
    manager = DomainManager(conn, driver_domain_xml)
    server = serve(
        cmd_socket_path(share), CommandServer(manager, Migrator(manager, share), pod_name="launcher")
    )
    yield cmd_socket_path(share)
    server.stop(grace=0)
    conn.close()
    cmd_socket_path(share).unlink(missing_ok=True)


@pytest.fixture
def components(
    kube: KubeClient, namespace: str, tmp_path: Path, launcher_socket_path: Path
) -> Iterator[Components]:
    controller_api, handler_api = CountingApi(kube), CountingApi(kube)
    recorders = [
        EventRecorder(kube, "virt-controller", host="test"),
        EventRecorder(kube, "virt-handler", host=NODE),
    ]

    # virt-controller
    controller_informers = SharedInformerFactory(kube, resync_seconds=0)
    vmis = controller_informers.informer(
        VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance, namespace=namespace
    )
    pods = controller_informers.informer(PODS, namespace=namespace)
    vms = controller_informers.informer(VIRTUAL_MACHINES, VirtualMachine, namespace=namespace)
    vmi_queue = RateLimitingQueue("vmi")
    vmi_controller = VMIController(
        api=controller_api,
        events=recorders[0],
        vmi_store=vmis.store,
        pod_store=pods.store,
        vm_store=vms.store,
        render_pod=render_pod,
        pod_expectations=UIDTrackingControllerExpectations(),
        vmi_expectations=ControllerExpectations(),
        enqueue=vmi_queue.add,
    )
    vmis.add_event_handler(
        vmi_controller.on_vmi_add, vmi_controller.on_vmi_update, vmi_controller.on_vmi_delete
    )
    pods.add_event_handler(
        vmi_controller.on_pod_add, vmi_controller.on_pod_update, vmi_controller.on_pod_delete
    )

    # virt-handler: its node's VMIs only; whatever socket it finds, it reaches the launcher above.
    handler_informers = SharedInformerFactory(kube, resync_seconds=0)
    node_vmis = handler_informers.informer(
        VIRTUAL_MACHINE_INSTANCES, namespace=namespace, label_selector=f"kubevirt.io/nodeName={NODE}"
    )
    handler_queue = RateLimitingQueue("handler")
    pods_dir = tmp_path / "pods"
    vm_controller = VMController(
        api=handler_api,
        events=recorders[1],
        vmi_store=node_vmis.store,
        node=NODE,
        pods_dir=pods_dir,
        connect=lambda _found: LauncherClient(launcher_socket_path),
    )
    enqueue: Callable[[dict[str, Any]], None] = lambda obj: handler_queue.add(key_of(obj))  # noqa: E731
    node_vmis.add_event_handler(enqueue, lambda _old, new: enqueue(new), enqueue)

    for factory in (controller_informers, handler_informers):
        factory.start()
        assert factory.wait_for_cache_sync(15)
    try:
        with controller_threads(
            Controller("vmi", vmi_queue, vmi_controller, workers=2),
            Controller("handler", handler_queue, vm_controller, workers=2),
        ):
            yield Components(controller_api, handler_api, pods_dir)
    finally:
        for factory in (controller_informers, handler_informers):
            factory.stop()
        for recorder in recorders:
            recorder.stop()


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


def _kubelet_runs_the_pod(kube: KubeClient, namespace: str, pod: dict[str, Any]) -> None:
    """The compute container runs and, the readiness gate being True, the pod is Ready (the kubelet's
    Ready=True has no reason nor message). A strategic merge keeps the gate's condition."""
    started = "2026-12-01T00:00:05Z"
    status = {
        "phase": "Running",
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-01T00:00:01Z"},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": started},
            {"type": "Ready", "status": "True", "lastTransitionTime": started},
        ],
        "containerStatuses": [
            {
                "name": "compute",
                "ready": True,
                "restartCount": 0,
                "image": "virt-launcher:test",
                "imageID": "",
                "state": {"running": {"startedAt": started}},
            }
        ],
    }
    kube.patch(
        PODS,
        namespace,
        pod["metadata"]["name"],
        {"status": status},
        patch_type="strategic",
        subresource="status",
    )


def test_a_vmi_reaches_running_and_ready_in_three_vmi_writes(
    kube: KubeClient, namespace: str, components: Components
) -> None:
    kube.create(
        VIRTUAL_MACHINE_INSTANCES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "metadata": {"name": "counted"},
            "spec": {"domain": {"devices": {}}, "terminationGracePeriodSeconds": 0},
        },
    )

    def launcher_pod() -> dict[str, Any] | None:
        items = kube.list(PODS, namespace)[0]
        return items[0] if items else None

    eventually(lambda: (p := launcher_pod()) is not None and _condition(p, UNPAUSED_GATE) is not None)
    pod = launcher_pod()
    assert pod is not None
    with launcher_socket(components.pods_dir, pod["metadata"]["uid"], listening=False):
        _kubelet_runs_the_pod(kube, namespace, pod)

        def vmi() -> dict[str, Any]:
            return kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "counted")

        eventually(lambda: (vmi().get("status") or {}).get("phase") == "Running", timeout=30)
        time.sleep(2)  # let any straggling write land before counting
        running = vmi()

    ready = _condition(running, "Ready")
    assert ready is not None
    assert (ready["status"], ready.get("reason"), ready.get("message")) == ("True", None, None)
    assert running["metadata"]["labels"]["kubevirt.io/nodeName"] == NODE
    assert [p["phase"] for p in running["status"]["phaseTransitionTimestamps"]] == [
        "Scheduling",
        "Scheduled",
        "Running",
    ]
    vmis = VIRTUAL_MACHINE_INSTANCES.plural
    assert components.controller_api.of(vmis) == ["update", "update"], components.controller_api.writes
    assert components.handler_api.of(vmis) == ["update"], components.handler_api.writes
    # The pod: created, its readiness gate set (pods/status), the node label copied from the VMI.
    assert components.controller_api.of("pods") == ["create", "patch", "patch"], (
        components.controller_api.writes
    )
    assert components.handler_api.of("pods") == []
