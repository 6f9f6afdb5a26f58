"""The VM and VMI controllers on the runtime (informers, queues, workers) against a real kube-apiserver.

There is no scheduler, kubelet or virt-handler: the test plays them by writing the pod's and the VMI's
status, and counts the API writes the controllers make per VMI on the way to Scheduled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kubevirt.client import (
    EVENTS,
    PODS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    ConflictError,
    EventRecorder,
    KubeClient,
)
from kubevirt.controller import (
    Controller,
    ControllerExpectations,
    RateLimitingQueue,
    SharedInformerFactory,
    UIDTrackingControllerExpectations,
)
from kubevirt.virt_controller.watch.vm import VMController
from kubevirt.virt_controller.watch.vmi import VMIController
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance
from kubevirt_testing.counting_api import CountingApi
from kubevirt_testing.waiting import eventually


def render_pod(vmi: VirtualMachineInstance) -> dict[str, Any]:
    assert vmi.metadata is not None
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"virt-launcher-{vmi.metadata.name}-",
            "labels": {"kubevirt.io": "virt-launcher"},
        },
        "spec": {
            "containers": [{"name": "compute", "image": "virt-launcher:test"}],
            "restartPolicy": "Never",
        },
    }


@dataclass
class Running:
    api: CountingApi
    events: EventRecorder


@pytest.fixture
def controllers(kube: KubeClient, namespace: str) -> Iterator[Running]:
    api = CountingApi(kube)
    events = EventRecorder(kube, "virt-controller", host="test")
    factory = SharedInformerFactory(kube, resync_seconds=0)
    vms = factory.informer(VIRTUAL_MACHINES, VirtualMachine, namespace=namespace)
    vmis = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance, namespace=namespace)
    pods = factory.informer(PODS, namespace=namespace)
    vm_queue, vmi_queue = RateLimitingQueue("vm"), RateLimitingQueue("vmi")
    vm = VMController(
        api=api,
        events=events,
        vm_store=vms.store,
        vmi_store=vmis.store,
        expectations=UIDTrackingControllerExpectations(),
        enqueue=vm_queue.add,
    )
    vmi = VMIController(
        api=api,
        events=events,
        vmi_store=vmis.store,
        pod_store=pods.store,
        vm_store=vms.store,
        render_pod=render_pod,
        pod_expectations=UIDTrackingControllerExpectations(),
        vmi_expectations=ControllerExpectations(),
        enqueue=vmi_queue.add,
    )
    vms.add_event_handler(vm.on_vm_add, vm.on_vm_update, vm.on_vm_delete)
    vmis.add_event_handler(vm.on_vmi_add, vm.on_vmi_update, vm.on_vmi_delete)
    vmis.add_event_handler(vmi.on_vmi_add, vmi.on_vmi_update, vmi.on_vmi_delete)
    pods.add_event_handler(vmi.on_pod_add, vmi.on_pod_update, vmi.on_pod_delete)
    factory.start()
    assert factory.wait_for_cache_sync(15)
    stop = threading.Event()
    runners = [
        threading.Thread(target=Controller(name, queue, reconciler, workers=2).run, args=(stop,), daemon=True)
        for name, queue, reconciler in (("vm", vm_queue, vm), ("vmi", vmi_queue, vmi))
    ]
    for runner in runners:
        runner.start()
    try:
        yield Running(api, events)
    finally:
        events.stop()
        stop.set()
        for runner in runners:
            runner.join(10)
        factory.stop()


def test_a_vm_gets_a_vmi_and_a_launcher_pod_that_reaches_scheduled(
    kube: KubeClient, namespace: str, controllers: Running
) -> None:
    kube.create(
        VIRTUAL_MACHINES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": "vm1"},
            "spec": {"runStrategy": "Always", "template": {"spec": {"domain": {"devices": {}}}}},
        },
    )

    def launcher() -> list[dict[str, Any]]:
        return kube.list(PODS, namespace)[0]

    eventually(lambda: len(launcher()) == 1)
    eventually(
        lambda: (
            kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vm1").get("status", {}).get("phase")
            == "Scheduling"
        )
    )
    pod = launcher()[0]
    # The kubelet starts the compute container (no binding: no node exists here).
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
    kube.patch(
        PODS, namespace, pod["metadata"]["name"], {"status": status}, patch_type="merge", subresource="status"
    )
    eventually(
        lambda: kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vm1")["status"].get("phase") == "Scheduled"
    )
    time.sleep(1)  # let any straggling write land before counting
    vm = kube.get(VIRTUAL_MACHINES, namespace, "vm1")
    assert vm["status"]["created"] is True
    assert vm["status"]["printableStatus"] == "Starting"
    assert len(launcher()) == 1
    creates = [w for w in controllers.api.writes if w == ("create", "pods")]
    assert len(creates) == 1
    # The VM controller creates the VMI and the VMI controller writes it: at most three VMI updates
    # or patches on the way to Scheduled, besides the create.
    vmi_writes = [w for w in controllers.api.writes if w[1] == "virtualmachineinstances" and w[0] != "create"]
    assert len(vmi_writes) <= 3, controllers.api.writes
    # A normal start is no failure: tools read any Warning on a VM or VMI as a failed start.
    assert controllers.events.flush()
    recorded = [
        (e["type"], e["involvedObject"]["kind"], e["reason"]) for e in kube.list(EVENTS, namespace)[0]
    ]
    assert [e for e in recorded if e[0] != "Normal"] == []
    assert ("Normal", "VirtualMachine", "SuccessfulCreate") in recorded
    assert ("Normal", "VirtualMachineInstance", "SuccessfulCreate") in recorded


def test_halted_deletes_the_vmi_and_its_pod(kube: KubeClient, namespace: str, controllers: Running) -> None:
    kube.create(
        VIRTUAL_MACHINES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": "vm2"},
            "spec": {"runStrategy": "Always", "template": {"spec": {"domain": {"devices": {}}}}},
        },
    )
    eventually(lambda: len(kube.list(PODS, namespace)[0]) == 1)
    for _ in range(20):  # the controller writes the VM too: retry on a conflict as any client must
        vm = kube.get(VIRTUAL_MACHINES, namespace, "vm2")
        vm["spec"]["runStrategy"] = "Halted"
        try:
            kube.update(VIRTUAL_MACHINES, namespace, vm)
            break
        except ConflictError:
            time.sleep(0.1)
    eventually(lambda: kube.list(VIRTUAL_MACHINE_INSTANCES, namespace)[0] == [])
    eventually(
        lambda: kube.get(VIRTUAL_MACHINES, namespace, "vm2")["status"].get("printableStatus") == "Stopped"
    )
