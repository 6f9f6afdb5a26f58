"""Crash-loop backoff: a VMI that ends before it ever ran delays the next start, growing quadratically."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Final

from kubevirt.virt_controller.watch.common import format_time, parse_time
from kubevirt.virt_controller.watch.runstrategy import RESTARTING_STRATEGIES
from kubevirt_api.core.v1 import (
    VirtualMachine,
    VirtualMachineInstance,
    VirtualMachineInstancePhase,
    VirtualMachineStartFailure,
    VirtualMachineStatus,
)

MAX_CRASH_LOOP_BACKOFF_SECONDS: Final = 300
_MIN_INTERVAL_SECONDS: Final = 10


def backoff_seconds(fail_count: int, max_delay: int, rng: random.Random) -> int:
    """``max(10, max/30) * count**2`` plus up to half of that again at random, capped at ``max_delay``."""
    count = max(fail_count, 1)
    interval = max(max_delay // 30, _MIN_INTERVAL_SECONDS)
    delay = interval * count * count
    delay += rng.randrange(delay // 2 + 1)  # spreads VMs that failed together
    return min(delay, max_delay)


def was_running(vmi: VirtualMachineInstance | None) -> bool:
    if vmi is None or vmi.status is None:
        return False
    return any(
        t.phase == VirtualMachineInstancePhase.RUNNING for t in vmi.status.phase_transition_timestamps or ()
    )


def failed_early(vmi: VirtualMachineInstance | None) -> bool:
    return vmi is not None and vmi.is_final() and not was_running(vmi)


def seconds_until_retry(vm: VirtualMachine, now: datetime) -> int:
    """Whole seconds left before a new start is allowed (0 when none are)."""
    failure = vm.status.start_failure if vm.status is not None else None
    if failure is None or not failure.retry_after_timestamp:
        return 0
    try:
        retry_after = parse_time(failure.retry_after_timestamp)
    except ValueError:
        return 0
    return max(int((retry_after - now).total_seconds()), 0)


def sync_start_failure(
    status: VirtualMachineStatus,
    strategy: str,
    vmi: VirtualMachineInstance | None,
    now: datetime,
    rng: random.Random,
) -> None:
    """Counts each early-failed VMI once; clears the record once a VMI ran or nothing restarts."""
    if was_running(vmi) or strategy not in RESTARTING_STRATEGIES:
        status.start_failure = None
        return
    if vmi is None or not failed_early(vmi):
        return
    uid = vmi.metadata.uid if vmi.metadata is not None else None
    previous = status.start_failure
    if previous is not None and previous.last_failed_vmiuid == uid:
        return  # this VMI was already counted
    count = (previous.consecutive_fail_count or 0) + 1 if previous is not None else 1
    delay = backoff_seconds(count, MAX_CRASH_LOOP_BACKOFF_SECONDS, rng)
    status.start_failure = VirtualMachineStartFailure(
        consecutive_fail_count=count,
        last_failed_vmiuid=uid,
        retry_after_timestamp=format_time(now + timedelta(seconds=delay)),
    )
