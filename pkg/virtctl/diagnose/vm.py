"""The first link: the VirtualMachine wants to run (it exists, is not being deleted, is not halted and
is not waiting out a start-failure backoff)."""

from __future__ import annotations

from typing import Any

from kubevirt.client import VIRTUAL_MACHINES
from kubevirt.virtctl.diagnose.findings import Findings, condition_lines, format_age, parse_time
from kubevirt.virtctl.diagnose.reader import UnseenError
from kubevirt.virtctl.diagnose.verdict import Link, Status
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineRunStrategy

__all__ = ["NAME", "check_vm", "first_request", "run_strategy_of"]

NAME = "vm"
CRASH_LOOP = "CrashLoopBackOff"


def first_request(vm: VirtualMachine) -> str | None:
    """The action of the state-change request the VM controller acts on next (only the first counts)."""
    requests = vm.status.state_change_requests if vm.status is not None else None
    return requests[0].action if requests else None


def run_strategy_of(vm: VirtualMachine) -> str:
    try:
        return vm.run_strategy()
    except ValueError:
        return "invalid"


def _evidence(vm: VirtualMachine) -> dict[str, Any]:
    status = vm.status
    evidence: dict[str, Any] = {
        "runStrategy": run_strategy_of(vm),
        "printableStatus": status.printable_status if status is not None else None,
        "stateChangeRequests": [
            {"action": request.action, "uid": request.uid, "data": request.data}
            for request in (status.state_change_requests if status is not None else None) or ()
        ],
        "conditions": condition_lines(status.conditions if status is not None else None),
    }
    if status is not None and status.start_failure is not None:
        evidence["startFailure"] = status.start_failure.to_dict()
    return evidence


def _backoff(vm: VirtualMachine, findings: Findings) -> str | None:
    """The sentence for a VM waiting out its start-failure backoff, if it is."""
    status = vm.status
    failure = status.start_failure if status is not None else None
    printable = status.printable_status if status is not None else None
    if failure is None and printable != CRASH_LOOP:
        return None
    count = (failure.consecutive_fail_count if failure is not None else None) or 0
    retry_at = failure.retry_after_timestamp if failure is not None else None
    if not retry_at and printable != CRASH_LOOP:
        return None  # a failure record with no retry time holds nothing back
    wait = ""
    if retry_at:
        try:
            remaining = (parse_time(retry_at) - findings.now).total_seconds()
        except ValueError:
            remaining = 0.0
        if remaining <= 0 and printable != CRASH_LOOP:
            return None  # the backoff is over: the next start is on its way
        if remaining > 0:
            wait = f"; the next start is allowed at {retry_at} (in {format_age(remaining)})"
    last = failure.last_failed_vmiuid if failure is not None else None
    failed = f"the last {count} start(s) failed before the guest ran" if count else "starts keep failing"
    return (
        f"The VM is in start-failure backoff ({CRASH_LOOP}): {failed}"
        + (f" (last VMI uid {last})" if last else "")
        + f"{wait}."
    )


def check_vm(findings: Findings) -> Link | None:
    if findings.kind != "vm":
        return None  # diagnosing a VMI starts at the VMI
    ref = f"{findings.namespace}/{findings.name}"
    try:
        raw = findings.reader.get(VIRTUAL_MACHINES, findings.namespace, findings.name)
    except UnseenError as unseen:
        findings.unseen[NAME] = str(unseen)
        return Link(NAME, Status.UNKNOWN, f"{unseen}; going on with the VMI of the same name.")
    if raw is None:
        return Link(NAME, Status.BROKEN, f"VirtualMachine {ref} does not exist.")
    try:
        vm = VirtualMachine.from_dict(raw)
    except ApiParseError as err:
        findings.unseen[NAME] = f"could not read VirtualMachine {ref}: {err}"
        return Link(NAME, Status.UNKNOWN, f"could not read VirtualMachine {ref}: {err}")
    findings.vm = vm
    evidence = _evidence(vm)
    strategy = evidence["runStrategy"]
    if vm.metadata is not None and vm.metadata.deletion_timestamp:
        return Link(
            NAME,
            Status.BROKEN,
            f"The VM is being deleted (since {vm.metadata.deletion_timestamp}).",
            evidence,
        )
    if strategy == "invalid":
        message = "The VM sets both spec.running and spec.runStrategy; they are mutually exclusive."
        return Link(NAME, Status.BROKEN, message, evidence)
    if strategy == VirtualMachineRunStrategy.HALTED and first_request(vm) != "Start":
        message = (
            "The VM is halted (runStrategy Halted): nothing starts it until a start request "
            "(virtctl start) arrives."
        )
        return Link(NAME, Status.BROKEN, message, evidence)
    backoff = _backoff(vm, findings)
    if backoff is not None:
        return Link(NAME, Status.BROKEN, backoff, evidence)
    printable = evidence["printableStatus"] or "no printableStatus yet"
    return Link(NAME, Status.OK, f"runStrategy {strategy}, {printable}.", evidence)
