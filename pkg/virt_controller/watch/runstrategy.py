"""Run strategies and ``status.stateChangeRequests``: which request is pending and when it is done."""

from __future__ import annotations

from kubevirt_api.core.v1 import (
    StateChangeRequestAction,
    VirtualMachine,
    VirtualMachineInstance,
    VirtualMachineInstancePhase,
    VirtualMachineRunStrategy,
    VirtualMachineStateChangeRequest,
)
from kubevirt_api.core.v1.constants import START_REQUEST_DATA_PAUSED_KEY, START_REQUEST_DATA_PAUSED_TRUE

# The strategies under which a VMI that failed before running counts as a start failure.
RESTARTING_STRATEGIES = frozenset(
    {
        VirtualMachineRunStrategy.ALWAYS,
        VirtualMachineRunStrategy.RERUN_ON_FAILURE,
        VirtualMachineRunStrategy.ONCE,
    }
)


def first_request(vm: VirtualMachine) -> VirtualMachineStateChangeRequest | None:
    """Only the first request is ever acted on; the others wait their turn."""
    requests = (vm.status.state_change_requests if vm.status is not None else None) or []
    return requests[0] if requests else None


def has_start_request(vm: VirtualMachine) -> bool:
    request = first_request(vm)
    return request is not None and request.action == StateChangeRequestAction.START_REQUEST


def has_start_paused_request(vm: VirtualMachine) -> bool:
    request = first_request(vm)
    return (
        request is not None
        and request.action == StateChangeRequestAction.START_REQUEST
        and (request.data or {}).get(START_REQUEST_DATA_PAUSED_KEY) == START_REQUEST_DATA_PAUSED_TRUE
    )


def has_stop_request_for(vm: VirtualMachine, vmi: VirtualMachineInstance) -> bool:
    request = first_request(vm)
    vmi_uid = vmi.metadata.uid if vmi.metadata is not None else None
    return (
        request is not None
        and request.action == StateChangeRequestAction.STOP_REQUEST
        and request.uid is not None
        and request.uid == vmi_uid
    )


def first_request_done(vm: VirtualMachine, vmi: VirtualMachineInstance | None) -> bool:
    """Whether the first state change request has taken effect and can be dropped.

    A Stop is done once its VMI is gone (or replaced); a Start once a live VMI exists. So
    ``[Stop(uid), Start]`` is a restart: the old VMI goes, then a new one comes.
    """
    request = first_request(vm)
    if request is None:
        return False
    if request.action == StateChangeRequestAction.STOP_REQUEST:
        if vmi is None or request.uid is None:
            return True
        return request.uid != (vmi.metadata.uid if vmi.metadata is not None else None)
    if request.action == StateChangeRequestAction.START_REQUEST:
        return vmi is not None and not vmi.is_marked_for_deletion() and not vmi.is_final()
    return False


def is_set_to_start(vm: VirtualMachine, vmi: VirtualMachineInstance | None) -> bool:
    """Whether the VM means to be running (used by the printable status)."""
    try:
        strategy = vm.run_strategy()
    except ValueError:
        return False
    if strategy == VirtualMachineRunStrategy.ALWAYS:
        return True
    if strategy == VirtualMachineRunStrategy.MANUAL:
        return not has_stop_request_for(vm, vmi) if vmi is not None else has_start_request(vm)
    if strategy == VirtualMachineRunStrategy.RERUN_ON_FAILURE:
        return vmi is None or vmi.phase != VirtualMachineInstancePhase.SUCCEEDED
    if strategy == VirtualMachineRunStrategy.ONCE:
        return vmi is None
    return False
