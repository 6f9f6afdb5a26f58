"""Requests against allocatable: containers add up, init containers count at their largest."""

from __future__ import annotations

from kubevirt.virtctl.diagnose.fit import fit, pod_requests
from kubevirt_testing import vm_chain as chain


def _pod(
    containers: list[dict[str, object]], init: list[dict[str, object]] | None = None
) -> dict[str, object]:
    return {"spec": {"containers": containers, "initContainers": init or [], "overhead": {"memory": "100Mi"}}}


def _container(**requests: str) -> dict[str, object]:
    return {"name": "c", "resources": {"requests": requests}}


def test_containers_add_up_and_the_largest_init_container_counts() -> None:
    pod = _pod([_container(cpu="1", memory="1Gi"), _container(cpu="500m")], [_container(cpu="2")])
    totals = {name: str(quantity) for name, quantity in pod_requests(pod).items()}
    assert totals == {"cpu": "2", "memory": "1124Mi"}


def test_a_limit_without_a_request_is_requested_at_the_limit() -> None:
    pod = {"spec": {"containers": [{"name": "c", "resources": {"limits": {chain.KVM: "1"}}}]}}
    assert {name: str(q) for name, q in pod_requests(pod).items()} == {chain.KVM: "1"}


def test_an_excluded_node_leaves_nowhere_to_go() -> None:
    verdict = fit(_pod([_container(cpu="1")]), [chain.node("node-a")], excluded=("node-a",))
    assert not verdict.fits_somewhere
    assert verdict.sentence() == "there is no node it may run on"


def test_a_pod_that_fits_is_said_to() -> None:
    verdict = fit(_pod([_container(cpu="1")]), [chain.node("node-a")])
    assert verdict.fits_somewhere


def test_resources_spread_over_two_nodes_do_not_fit_one_pod() -> None:
    pod = {
        "spec": {
            "containers": [_container(cpu="1", **{chain.KVM: "1"})],
            "nodeSelector": {"kubevirt.io/schedulable": "true"},
        }
    }
    nodes = [
        chain.node("has-kvm", allocatable={"cpu": "2", chain.KVM: "1"}, schedulable="false"),
        chain.node("schedulable", allocatable={"cpu": "2"}),
    ]
    verdict = fit(pod, nodes)
    assert (verdict.short, verdict.unmatched_selector) == ({}, {})
    assert not verdict.fits_somewhere
    assert verdict.sentence() == "no single node both carries its nodeSelector and holds all its requests"
