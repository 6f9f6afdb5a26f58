"""The VM and VMI controllers on the runtime (informers, queues, workers) against a real kube-apiserver.

There is no scheduler, kubelet or virt-handler: the test plays them by writing the pod's and the VMI's
status, and counts the API writes the controllers make per VMI on the way to Scheduled.
"""

from __future__ import annotations

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
from kubevirt_testing.controller_threads import launcher_pod, vm_and_vmi_controllers
from kubevirt_testing.counting_api import CountingApi
from kubevirt_testing.waiting import eventually


@dataclass
class Running:
    api: CountingApi
    events: EventRecorder


@pytest.fixture
def controllers(kube: KubeClient, namespace: str) -> Iterator[Running]:
    api = CountingApi(kube)
    events = EventRecorder(kube, "virt-controller", host="test")
    with vm_and_vmi_controllers(kube, namespace, api=api, events=events, render_pod=launcher_pod):
        try:
            yield Running(api, events)
        finally:
            events.stop()


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
