"""When a Deployment or DaemonSet counts as rolled out and ready, and when a cached object still holds
everything the strategy wants."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.virt_operator.apply import contains
from kubevirt.virt_operator.readiness import daemonset_ready, deployment_ready, workloads_ready


def _deployment(generation: int = 2, **status: Any) -> dict[str, Any]:
    return {"kind": "Deployment", "metadata": {"generation": generation}, "status": status}


@pytest.mark.parametrize(
    ("status", "ready"),
    [
        ({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1}, True),
        ({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2}, False),
        ({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 2, "readyReplicas": 3}, False),
        ({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 0}, False),
        ({}, False),
    ],
)
def test_a_deployment_is_ready_once_its_generation_rolled_out_with_a_ready_replica(
    status: dict[str, Any], ready: bool
) -> None:
    assert deployment_ready(_deployment(**status)) is ready


def test_a_daemonset_is_ready_when_every_scheduled_pod_is_updated_and_ready() -> None:
    ready = {
        "kind": "DaemonSet",
        "metadata": {},
        "status": {"desiredNumberScheduled": 2, "numberReady": 2, "updatedNumberScheduled": 2},
    }
    assert daemonset_ready(ready)
    ready["status"]["numberReady"] = 1
    assert not daemonset_ready(ready)
    assert not daemonset_ready({"kind": "DaemonSet", "metadata": {}, "status": {"desiredNumberScheduled": 0}})
    assert not workloads_ready([None])


def test_contains_ignores_what_the_server_added_but_not_what_was_changed() -> None:
    desired = {"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}}
    defaulted = {
        "spec": {
            "replicas": 2,
            "progressDeadlineSeconds": 600,
            "template": {
                "spec": {"containers": [{"name": "a", "image": "x", "terminationMessagePath": "/dev/t"}]}
            },
        }
    }
    assert contains(defaulted, desired)
    edited = {"spec": {"replicas": 3, "template": defaulted["spec"]["template"]}}
    assert not contains(edited, desired)
    extra_container = {
        "spec": {
            "replicas": 2,
            "template": {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}},
        }
    }
    assert not contains(extra_container, desired)
    assert not contains({"flag": 1}, {"flag": True})
