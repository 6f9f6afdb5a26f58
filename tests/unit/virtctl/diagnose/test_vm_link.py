"""The VM link: halted, being deleted, start-failure backoff, or fine."""

from __future__ import annotations

from kubevirt.virtctl.diagnose import Status
from kubevirt_testing import vm_chain as chain

from .harness import NAME, NS, broken, scene, walk


def test_a_halted_vm_stops_the_walk_at_the_vm() -> None:
    api = scene(vm=chain.vm(NAME, NS, run_strategy="Halted"), vmi=None)
    link = broken(walk(api))
    assert link.name == "vm"
    assert "halted (runStrategy Halted)" in link.message
    assert link.evidence["runStrategy"] == "Halted"
    assert link.evidence["printableStatus"] == "Stopped"


def test_a_halted_vm_with_a_start_request_is_on_its_way() -> None:
    status = {"printableStatus": "Stopped", "stateChangeRequests": [{"action": "Start"}]}
    api = scene(vm=chain.vm(NAME, NS, run_strategy="Halted", status=status), vmi=None)
    links = walk(api)
    assert links[0].status is Status.OK
    assert links[0].evidence["stateChangeRequests"] == [{"action": "Start", "uid": None, "data": None}]
    assert broken(links).name == "vmi"


def test_a_missing_vm_is_named() -> None:
    link = broken(walk(scene(vm=None, vmi=None)))
    assert (link.name, link.message) == ("vm", f"VirtualMachine {NS}/{NAME} does not exist.")


def test_start_failure_backoff_names_the_count_and_the_retry_time() -> None:
    retry = chain.stamp(chain.NOW.replace(minute=1, second=30))
    status = {
        "printableStatus": "CrashLoopBackOff",
        "startFailure": {"consecutiveFailCount": 3, "lastFailedVMIUID": "u-3", "retryAfterTimestamp": retry},
    }
    link = broken(walk(scene(vm=chain.vm(NAME, NS, status=status), vmi=None)))
    assert link.name == "vm"
    assert "start-failure backoff (CrashLoopBackOff)" in link.message
    assert "the last 3 start(s) failed" in link.message
    assert f"allowed at {retry} (in 1m30s)" in link.message
    assert link.evidence["startFailure"]["consecutiveFailCount"] == 3


def test_an_expired_backoff_is_not_a_broken_vm() -> None:
    past = chain.stamp(chain.NOW.replace(hour=11))
    status = {
        "printableStatus": "Starting",
        "startFailure": {"consecutiveFailCount": 1, "retryAfterTimestamp": past},
    }
    links = walk(scene(vm=chain.vm(NAME, NS, status=status)))
    assert links[0].status is Status.OK


def test_a_vm_being_deleted_is_named() -> None:
    vm = chain.vm(NAME, NS, status={"printableStatus": "Terminating"})
    vm["metadata"]["deletionTimestamp"] = chain.stamp(chain.NOW)
    link = broken(walk(scene(vm=vm)))
    assert (link.name, link.message) == ("vm", f"The VM is being deleted (since {chain.stamp(chain.NOW)}).")


def test_both_running_and_run_strategy_is_a_clear_error() -> None:
    vm = chain.vm(NAME, NS)
    vm["spec"]["running"] = True
    link = broken(walk(scene(vm=vm)))
    assert "both spec.running and spec.runStrategy" in link.message


def test_a_malformed_vm_is_reported_with_the_field_and_the_walk_goes_on() -> None:
    vm = chain.vm(NAME, NS, status={"printableStatus": 7})
    links = walk(scene(vm=vm))
    assert links[0].status is Status.UNKNOWN
    assert "status.printableStatus" in links[0].message
    assert links[1].status is Status.OK  # the VMI of the same name
