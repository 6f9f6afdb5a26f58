"""The controllers' pure helpers: state change requests, conditions, pods, selectors."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.virt_controller.watch import pods
from kubevirt.virt_controller.watch.conditions import remove_condition, update_condition
from kubevirt.virt_controller.watch.runstrategy import first_request_done, is_set_to_start
from kubevirt.virt_controller.watch.selector import SelectorError, matches
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineCondition, VirtualMachineInstance
from kubevirt_api.k8s.meta_v1 import LabelSelector

from .harness import vm_manifest


def _vm(requests: list[dict[str, Any]], **spec: Any) -> VirtualMachine:
    manifest = vm_manifest("vm", **spec)
    manifest["status"] = {"stateChangeRequests": requests}
    return VirtualMachine.from_dict(manifest)


def _vmi(uid: str = "u1", phase: str = "Running", deleting: bool = False) -> VirtualMachineInstance:
    meta: dict[str, Any] = {"name": "vm", "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return VirtualMachineInstance.from_dict(
        {"metadata": meta, "spec": {"domain": {"devices": {}}}, "status": {"phase": phase}}
    )


@pytest.mark.parametrize(
    ("request_", "vmi", "done"),
    [
        ({"action": "Stop", "uid": "u1"}, None, True),
        ({"action": "Stop", "uid": "u1"}, _vmi("u1"), False),
        ({"action": "Stop", "uid": "u1"}, _vmi("u2"), True),
        ({"action": "Stop"}, _vmi("u1"), True),
        ({"action": "Start"}, None, False),
        ({"action": "Start"}, _vmi("u1"), True),
        ({"action": "Start"}, _vmi("u1", deleting=True), False),
        ({"action": "Start"}, _vmi("u1", phase="Failed"), False),
    ],
)
def test_first_request_done(request_: dict[str, Any], vmi: VirtualMachineInstance | None, done: bool) -> None:
    assert first_request_done(_vm([request_]), vmi) is done


def test_only_the_first_request_counts() -> None:
    vm = _vm([{"action": "Start"}, {"action": "Stop", "uid": "u1"}])
    assert first_request_done(vm, _vmi("u1")) is True


@pytest.mark.parametrize(
    ("spec", "vmi", "expected"),
    [
        ({"runStrategy": "Always"}, None, True),
        ({"runStrategy": "Halted"}, None, False),
        ({"runStrategy": "RerunOnFailure"}, _vmi(phase="Succeeded"), False),
        ({"runStrategy": "RerunOnFailure"}, _vmi(phase="Failed"), True),
        ({"runStrategy": "Once"}, _vmi(), False),
        ({"runStrategy": "Manual"}, None, False),
        ({"running": True, "runStrategy": "Always"}, None, False),  # both set: not a valid VM
    ],
)
def test_is_set_to_start(spec: dict[str, Any], vmi: VirtualMachineInstance | None, expected: bool) -> None:
    assert is_set_to_start(_vm([], **spec), vmi) is expected


def test_update_condition_keeps_an_entry_with_the_same_status_and_reason() -> None:
    old = VirtualMachineCondition(
        type="Ready", status="False", reason="A", message="old", last_probe_time="t1"
    )
    same = VirtualMachineCondition(
        type="Ready", status="False", reason="A", message="new", last_probe_time="t2"
    )
    changed = VirtualMachineCondition(type="Ready", status="True", reason="B")
    assert update_condition([old], same) == [old]
    assert update_condition([old], changed) == [changed]
    assert remove_condition([old], "Ready") is None


def test_pod_readiness_ignores_the_compute_containers_ready_flag() -> None:
    pod = {
        "metadata": {},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "compute", "ready": False, "state": {"running": {}}},
                {"name": "volumecontainerdisk", "ready": True, "state": {"running": {}}},
            ],
        },
    }
    assert pods.is_pod_ready(pod)
    pod["status"]["containerStatuses"][1]["ready"] = False
    assert not pods.is_pod_ready(pod)
    terminating = {**pod, "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert pods.is_pod_down_or_going_down(terminating)


def test_selector_matching_and_refusal() -> None:
    selector = LabelSelector.from_dict(
        {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]}
    )
    assert matches(selector, {"tier": "a"})
    assert not matches(selector, {"tier": "b"})
    with pytest.raises(SelectorError):
        matches(LabelSelector.from_dict({"matchExpressions": [{"key": "x", "operator": "Near"}]}), {})
