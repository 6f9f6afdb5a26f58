"""The node link: virt-handler on the node, its heartbeat, the schedulable label, the node itself."""

from __future__ import annotations

from datetime import timedelta

from kubevirt.virtctl.diagnose import Status
from kubevirt_testing import vm_chain as chain

from .harness import HANDLERS_NS, broken, by_name, scene, walk


def test_no_virt_handler_on_the_node_is_named() -> None:
    link = broken(walk(scene(handlers=[chain.handler_pod("node-b", HANDLERS_NS)])))
    assert (link.name, link.message) == ("node", "No virt-handler pod runs on node node-a.")


def test_a_handler_that_is_not_ready_is_named() -> None:
    link = broken(walk(scene(handlers=[chain.handler_pod("node-a", HANDLERS_NS, ready=False)])))
    assert link.message == "virt-handler pod virt-handler-node-a on node node-a is not ready."


def test_a_stale_heartbeat_names_its_age() -> None:
    stale = chain.node(heartbeat=chain.NOW - timedelta(minutes=7, seconds=12))
    link = broken(walk(scene(nodes=[stale])))
    assert link.message == "virt-handler's last heartbeat on node node-a is 7m12s old (stale after 5m0s)."
    assert link.evidence["heartbeatAge"] == "7m12s"


def test_no_heartbeat_at_all_is_named() -> None:
    link = broken(walk(scene(nodes=[chain.node(heartbeat=None)])))
    assert "virt-handler has never sent a heartbeat for node node-a" in link.message


def test_an_unschedulable_node_is_named() -> None:
    link = broken(walk(scene(nodes=[chain.node(schedulable="false")])))
    assert link.message == (
        "Node node-a is marked kubevirt.io/schedulable=false: virt-handler does not offer it for new VMIs."
    )


def test_a_node_that_is_not_ready_comes_first() -> None:
    link = broken(walk(scene(nodes=[chain.node(ready=False, schedulable="false")])))
    assert link.message == "Node node-a is not Ready (KubeletReady)."


def test_a_vanished_node_is_named() -> None:
    link = broken(walk(scene(nodes=[chain.node("node-b")])))
    assert link.message == "Node node-a does not exist any more."


def test_a_healthy_node() -> None:
    link = by_name(walk(scene()))["node"]
    assert (link.status, link.message) == (
        Status.OK,
        "node node-a, virt-handler ready, heartbeat 30s ago, schedulable.",
    )
