"""The migration target's hotplug steps on a VMI, without a launcher."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.virt_handler.live_update import (
    HotplugError,
    hand_off_patch,
    hotplug_cpu,
    hotplug_memory,
)

JSON = dict[str, Any]
CPU_LIMITS = "kubevirt.io/vmi-pod-cpu-resource-limits"


class Commands:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def __call__(self, name: str, vmi: JSON) -> None:
        self.sent.append(name)


def dedicated_vmi(limit: str | None) -> JSON:
    labels = {CPU_LIMITS: limit} if limit is not None else {}
    return {
        "metadata": {"labels": labels},
        "spec": {"domain": {"cpu": {"sockets": 3, "cores": 2, "dedicatedCpuPlacement": True}}},
        "status": {"conditions": [{"type": "HotVCPUChange", "status": "True"}]},
    }


@pytest.mark.parametrize(
    ("limit", "error"),
    [
        (None, "cannot read CPU limit from VMI annotation"),
        ("lots", "cannot parse CPU limit from VMI annotation: "),
        ("4", "number of requested VCPUS (6) exceeds the limit (4)"),
    ],
)
def test_dedicated_vcpus_must_fit_the_target_pods_cpu_limit(limit: str | None, error: str) -> None:
    vmi = dedicated_vmi(limit)
    commands = Commands()
    with pytest.raises(HotplugError) as failed:
        hotplug_cpu(vmi, commands)
    assert str(failed.value).startswith(error)
    assert commands.sent == []
    # the condition and the label go even so, as in KubeVirt
    assert vmi["status"]["conditions"] == []
    assert vmi["metadata"]["labels"] == {}
    assert "currentCPUTopology" not in vmi["status"]


def test_dedicated_vcpus_within_the_limit_are_plugged() -> None:
    vmi = dedicated_vmi("6")
    commands = Commands()
    hotplug_cpu(vmi, commands)
    assert commands.sent == ["SyncVirtualMachineCPUs"]
    assert vmi["status"]["currentCPUTopology"] == {"sockets": 3, "cores": 2}  # threads unset: omitted


def test_without_the_conditions_nothing_is_sent_but_the_labels_go() -> None:
    vmi: JSON = {
        "metadata": {"labels": {CPU_LIMITS: "4", "kubevirt.io/vmi-pod-memory-resource-requests": "1Gi"}},
        "status": {},
    }
    commands = Commands()
    hotplug_cpu(vmi, commands)
    hotplug_memory(vmi, commands)
    assert commands.sent == []
    assert vmi["metadata"]["labels"] == {}


def test_an_unreadable_pod_memory_request_drops_the_condition() -> None:
    vmi: JSON = {
        "metadata": {"labels": {"kubevirt.io/vmi-pod-memory-resource-requests": "much"}},
        "spec": {"domain": {"memory": {"guest": "2Gi"}}},
        "status": {"conditions": [{"type": "HotMemoryChange", "status": "True"}]},
    }
    with pytest.raises(HotplugError, match="cannot parse Memory requests from VMI label"):
        hotplug_memory(vmi, Commands())
    assert vmi["status"]["conditions"] == []


def test_the_hand_off_patch_names_what_the_steps_changed() -> None:
    before: JSON = {
        "metadata": {"labels": {CPU_LIMITS: "4", "app": "x"}},
        "status": {
            "conditions": [{"type": "HotVCPUChange", "status": "True"}],
            "currentCPUTopology": {"sockets": 1, "cores": 1, "threads": 2},
            "memory": {"guestAtBoot": "1Gi"},
        },
    }
    after = copy.deepcopy(before)
    del after["metadata"]["labels"][CPU_LIMITS]
    after["status"]["conditions"] = []
    after["status"]["currentCPUTopology"] = {"sockets": 2, "cores": 1}
    labels, status = hand_off_patch(before, after)
    assert labels == {CPU_LIMITS: None}  # other labels are not the take-over's
    assert status == {
        "conditions": [],
        "currentCPUTopology": {"sockets": 2, "cores": 1, "threads": None},  # removed in a merge patch
    }
    assert hand_off_patch(before, copy.deepcopy(before)) == ({}, {})
