"""The scheduling link: no pod, a pod no node can hold, the scheduler's reason, or a bound pod."""

from __future__ import annotations

from collections.abc import Callable

from kubevirt.client import EVENTS, JSON
from kubevirt.virtctl.diagnose import Status
from kubevirt_testing import vm_chain as chain

from .harness import NAME, NS, broken, by_name, scene, walk

PENDING_VMI = chain.vmi(NAME, NS, phase="Scheduling", node=None, conditions=[])


def _pending_pod(
    requests: dict[str, str] | None = None, conditions: list[dict[str, str]] | None = None
) -> Callable[[str], JSON]:
    def build(uid: str) -> JSON:
        return chain.launcher_pod(
            NAME, NS, uid, node=None, phase="Pending", requests=requests, conditions=conditions
        )

    return build


def test_a_kvm_request_no_node_offers_is_named_with_the_numbers() -> None:
    requests = {"cpu": "100m", "memory": "300Mi", chain.KVM: "1"}
    nodes = [
        chain.node("node-a", allocatable={"cpu": "2", "memory": "8Gi", chain.TUN: "1k"}),
        chain.node("node-b", allocatable={"cpu": "4", "memory": "8Gi", chain.KVM: "0"}),
    ]
    link = broken(walk(scene(vmi=PENDING_VMI, pod=_pending_pod(requests), nodes=nodes)))
    assert link.name == "scheduling"
    assert link.message == (
        "The launcher pod virt-launcher-vm1-abcde can never be scheduled: "
        "devices.kubevirt.io/kvm 1 requested but no node offers more than 0."
    )
    assert link.evidence["shortfall"] == {chain.KVM: {"requested": "1", "largest": "0"}}
    assert link.evidence["requests"][chain.KVM] == "1"


def test_memory_larger_than_any_node_is_named() -> None:
    requests = {"cpu": "100m", "memory": "64Gi"}
    link = broken(walk(scene(vmi=PENDING_VMI, pod=_pending_pod(requests))))
    assert "memory 64Gi requested but no node offers more than 8Gi" in link.message


def test_a_selector_no_node_carries_is_named() -> None:
    nodes = [chain.node("node-a", schedulable="false")]
    link = broken(walk(scene(vmi=PENDING_VMI, pod=_pending_pod(), nodes=nodes)))
    assert "no node carries the nodeSelector kubevirt.io/schedulable=true" in link.message


def test_the_scheduler_reason_is_quoted_when_it_could_fit() -> None:
    said = "0/1 nodes are available: 1 Insufficient cpu."
    scheduled = [chain.condition("PodScheduled", "False", "Unschedulable", said)]
    link = broken(walk(scene(vmi=PENDING_VMI, pod=_pending_pod(conditions=scheduled))))
    assert (
        link.message == f"The launcher pod virt-launcher-vm1-abcde is Pending: the scheduler says {said!r}."
    )


def test_failed_scheduling_events_are_quoted_without_a_condition() -> None:
    api = scene(vmi=PENDING_VMI, pod=_pending_pod())
    api.add(EVENTS, chain.warning_event(NS, "Pod", "virt-launcher-vm1-abcde", "FailedScheduling", "no nodes"))
    link = broken(walk(api))
    assert link.message.endswith("the scheduler says 'no nodes'.")


def test_silence_from_the_scheduler_is_said() -> None:
    link = broken(walk(scene(vmi=PENDING_VMI, pod=_pending_pod())))
    assert "the scheduler has said nothing about it (is kube-scheduler running?)" in link.message


def test_no_pod_for_a_pending_vmi_points_at_the_controller() -> None:
    vmi = chain.vmi(NAME, NS, phase="Pending", node=None, conditions=[])
    link = broken(walk(scene(vmi=vmi, pod=None)))
    assert link.name == "scheduling"
    assert "has not created a launcher pod" in link.message


def test_a_running_vmi_without_its_pod_is_named() -> None:
    link = broken(walk(scene(pod=None)))
    assert link.message == "The VMI is in phase Running but its launcher pod is gone."


def test_a_bound_pod_is_fine() -> None:
    link = by_name(walk(scene()))["scheduling"]
    assert (link.status, link.message) == (
        Status.OK,
        "launcher pod virt-launcher-vm1-abcde is scheduled on node node-a.",
    )


def test_no_schedulable_node_because_no_virt_handler_runs_is_named() -> None:
    nodes = [chain.node("node-a", schedulable="false")]
    link = broken(walk(scene(vmi=PENDING_VMI, pod=_pending_pod(), nodes=nodes, handlers=[])))
    assert link.message == (
        "The launcher pod virt-launcher-vm1-abcde can never be scheduled: no node carries the nodeSelector "
        "kubevirt.io/schedulable=true (no virt-handler pod runs on any node, and virt-handler is what marks "
        "a node kubevirt.io/schedulable=true)."
    )


def test_no_schedulable_node_where_virt_handler_runs_is_named() -> None:
    nodes = [chain.node("node-a", schedulable="false")]
    link = broken(walk(scene(vmi=PENDING_VMI, pod=_pending_pod(), nodes=nodes)))
    assert link.message.endswith(
        "(virt-handler runs on node-a only, and has marked none of them schedulable)."
    )
