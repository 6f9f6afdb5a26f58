"""The VM's ``status.printableStatus``: predicates checked in KubeVirt's order, the first match wins.

Several can hold at once (Running and Migrating, Paused and Terminating); the order decides. The
DataVolume predicates (Provisioning, DataVolumeError) read CDI's DataVolumes; without CDI none match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from kubevirt.virt_controller.watch.common import parse_time
from kubevirt.virt_controller.watch.conditions import FALSE, TRUE, has_condition, has_condition_reason
from kubevirt.virt_controller.watch.pods import ERR_IMAGE_PULL_REASON, IMAGE_PULL_BACK_OFF_REASON
from kubevirt.virt_controller.watch.runstrategy import RESTARTING_STRATEGIES, is_set_to_start
from kubevirt_api.core.v1 import (
    VirtualMachine,
    VirtualMachineInstance,
    VirtualMachineInstanceCondition,
    VirtualMachineInstanceConditionType,
    VirtualMachinePrintableStatus,
    VirtualMachineRunStrategy,
)

FAILED_PVC_NOT_FOUND_REASON = "FailedPvcNotFound"
POD_SCHEDULED = "PodScheduled"
UNSCHEDULABLE_REASON = "Unschedulable"

Status = VirtualMachinePrintableStatus


@dataclass(frozen=True)
class VMState:
    """What the predicates read: the VM, its VMI, the controller's pending expectations, the time,
    whether a claim the VM's template names exists but is not Bound (KubeVirt's ``HasUnboundPVC``), and
    whether a DataVolume the template uses failed (``HasDataVolumeErrors``) or is being populated
    (``HasDataVolumeProvisioning``)."""

    vm: VirtualMachine
    vmi: VirtualMachineInstance | None
    start_expected: bool
    stop_expected: bool
    now: datetime
    unbound_claim: bool = False
    data_volume_error: bool = False
    provisioning: bool = False

    @property
    def vmi_conditions(self) -> Sequence[VirtualMachineInstanceCondition] | None:
        vmi = self.vmi
        return vmi.status.conditions if vmi is not None and vmi.status is not None else None

    @property
    def strategy(self) -> str | None:
        try:
            return self.vm.run_strategy()
        except ValueError:
            return None


def _terminating(s: VMState) -> bool:
    return s.vm.metadata is not None and s.vm.metadata.deletion_timestamp is not None


def _stopping(s: VMState) -> bool:
    return s.vmi is not None and not s.vmi.is_final() and (s.vmi.is_marked_for_deletion() or s.stop_expected)


def _migrating(s: VMState) -> bool:
    state = s.vmi.status.migration_state if s.vmi is not None and s.vmi.status is not None else None
    if state is None:
        return False
    running = state.start_timestamp is not None and parse_time(state.start_timestamp) <= s.now
    if state.end_timestamp is not None and parse_time(state.end_timestamp) <= s.now:
        running = False
    return running


def _paused_condition(s: VMState) -> bool:
    return has_condition(s.vmi_conditions, VirtualMachineInstanceConditionType.PAUSED, TRUE)


def _paused(s: VMState) -> bool:
    return s.vmi is not None and s.vmi.is_running() and _paused_condition(s)


def _running(s: VMState) -> bool:
    return s.vmi is not None and s.vmi.is_running() and not _paused_condition(s)


def _synchronized_false(reason: str) -> Callable[[VMState], bool]:
    def predicate(s: VMState) -> bool:
        return has_condition_reason(
            s.vmi_conditions, VirtualMachineInstanceConditionType.SYNCHRONIZED, FALSE, reason
        )

    return predicate


def _unschedulable(s: VMState) -> bool:
    return has_condition_reason(s.vmi_conditions, POD_SCHEDULED, FALSE, UNSCHEDULABLE_REASON)


def _data_volume_error(s: VMState) -> bool:
    return s.data_volume_error


def _provisioning(s: VMState) -> bool:
    return s.provisioning


def _waiting_for_volume_binding(s: VMState) -> bool:
    return s.unbound_claim and is_set_to_start(s.vm, s.vmi)


def _starting(s: VMState) -> bool:
    if s.vmi is None:
        return s.start_expected
    return s.vmi.is_unprocessed() or s.vmi.is_scheduling() or s.vmi.is_scheduled()


def _crash_loop_back_off(s: VMState) -> bool:
    if (s.vmi is not None and not s.vmi.is_final()) or s.start_expected:
        return False
    failure = s.vm.status.start_failure if s.vm.status is not None else None
    return (
        failure is not None
        and (failure.consecutive_fail_count or 0) > 0
        and s.strategy in RESTARTING_STRATEGIES
    )


def _stopped(s: VMState) -> bool:
    return s.vmi.is_final() if s.vmi is not None else not s.start_expected


def _waiting_for_receiver(s: VMState) -> bool:
    return (s.vmi is None or s.vmi.is_waiting_for_sync()) and (
        s.strategy == VirtualMachineRunStrategy.WAIT_AS_RECEIVER
    )


ORDER: tuple[tuple[str, Callable[[VMState], bool]], ...] = (
    (Status.TERMINATING, _terminating),
    (Status.STOPPING, _stopping),
    (Status.MIGRATING, _migrating),
    (Status.PAUSED, _paused),
    (Status.RUNNING, _running),
    (Status.PVC_NOT_FOUND, _synchronized_false(FAILED_PVC_NOT_FOUND_REASON)),
    (Status.DATA_VOLUME_ERROR, _data_volume_error),
    (Status.UNSCHEDULABLE, _unschedulable),
    (Status.PROVISIONING, _provisioning),
    (Status.WAITING_FOR_VOLUME_BINDING, _waiting_for_volume_binding),
    (Status.ERR_IMAGE_PULL, _synchronized_false(ERR_IMAGE_PULL_REASON)),
    (Status.IMAGE_PULL_BACK_OFF, _synchronized_false(IMAGE_PULL_BACK_OFF_REASON)),
    (Status.STARTING, _starting),
    (Status.CRASH_LOOP_BACK_OFF, _crash_loop_back_off),
    (Status.STOPPED, _stopped),
    (Status.WAITING_FOR_RECEIVER, _waiting_for_receiver),
)


def printable_status(state: VMState) -> str:
    for status, predicate in ORDER:
        if predicate(state):
            return status
    return Status.UNKNOWN
