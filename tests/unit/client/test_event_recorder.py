"""The event recorder writes core/v1 Events and counts repeats on the same Event."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import EVENTS, ApiError, EventRecorder
from kubevirt_api.core.v1 import VirtualMachine
from kubevirt_testing.fake_kube_api import FakeKubeApi

VM = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"name": "vm1", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
    "spec": {"template": {"spec": {"domain": {"devices": {}}}}},
}


@pytest.fixture
def api() -> FakeKubeApi:
    return FakeKubeApi()


def events(api: FakeKubeApi) -> list[dict[str, Any]]:
    return api.objects_of(EVENTS)


def test_an_event_about_a_model_names_the_object_and_the_component(api: FakeKubeApi) -> None:
    recorder = EventRecorder(api, "virt-controller", host="node-1")
    recorder.event(VirtualMachine.from_dict(VM), "Normal", "SuccessfulCreate", "Created virtual machine pod")
    assert recorder.flush()
    recorder.stop()
    [event] = events(api)
    assert event["metadata"]["namespace"] == "ns"
    assert event["metadata"]["name"].startswith("vm1.")
    assert event["involvedObject"] == {
        "kind": "VirtualMachine",
        "apiVersion": "kubevirt.io/v1",
        "namespace": "ns",
        "name": "vm1",
        "uid": "u-1",
        "resourceVersion": "7",
    }
    assert (event["type"], event["reason"], event["count"]) == ("Normal", "SuccessfulCreate", 1)
    assert event["source"] == {"component": "virt-controller", "host": "node-1"}


def test_a_repeated_event_bumps_the_count(api: FakeKubeApi) -> None:
    recorder = EventRecorder(api, "virt-controller")
    for _ in range(3):
        recorder.event(VM, "Warning", "FailedCreate", "quota exceeded")
    recorder.event(VM, "Warning", "FailedCreate", "another message")
    assert recorder.flush()
    recorder.stop()
    assert sorted((e["message"], e["count"]) for e in events(api)) == [
        ("another message", 1),
        ("quota exceeded", 3),
    ]


def test_unknown_types_and_failed_writes_never_reach_the_caller(api: FakeKubeApi) -> None:
    recorder = EventRecorder(api, "virt-controller")
    recorder.event(VM, "Bogus", "Reason", "dropped")
    api.fail_with = ApiError(503, "ServiceUnavailable", "down")
    recorder.event(VM, "Normal", "Reason", "lost")
    assert recorder.flush()
    recorder.stop()
    api.fail_with = None
    assert events(api) == []
