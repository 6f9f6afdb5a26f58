"""The event recorder writes core/v1 Events the API server accepts, and counts repeats."""

from __future__ import annotations

from typing import Any

from kubevirt.client import EVENTS, VIRTUAL_MACHINE_INSTANCES, EventRecorder, KubeClient
from kubevirt_api.core.v1 import VirtualMachineInstance


def test_events_about_a_vmi_are_written_and_repeats_counted(kube: KubeClient, namespace: str) -> None:
    created = kube.create(
        VIRTUAL_MACHINE_INSTANCES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "metadata": {"name": "v"},
            "spec": {"domain": {"devices": {}}},
        },
    )
    recorder = EventRecorder(kube, "virt-controller", host="node-a")
    model = VirtualMachineInstance.from_dict(created)
    recorder.event(model, "Normal", "SuccessfulCreate", "Created virtual machine pod virt-launcher-v-x")
    recorder.event(created, "Warning", "FailedCreate", "Error creating pod: quota")
    recorder.event(created, "Warning", "FailedCreate", "Error creating pod: quota")
    assert recorder.flush(15)
    recorder.stop()
    items, _ = kube.list(EVENTS, namespace)
    by_reason: dict[str, Any] = {item["reason"]: item for item in items}
    assert set(by_reason) == {"SuccessfulCreate", "FailedCreate"}
    normal = by_reason["SuccessfulCreate"]
    assert normal["involvedObject"]["uid"] == created["metadata"]["uid"]
    assert normal["involvedObject"]["kind"] == "VirtualMachineInstance"
    assert normal["source"] == {"component": "virt-controller", "host": "node-a"}
    assert (normal["type"], normal["count"]) == ("Normal", 1)
    assert (by_reason["FailedCreate"]["type"], by_reason["FailedCreate"]["count"]) == ("Warning", 2)
