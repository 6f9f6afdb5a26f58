"""What a VirtualMachineRestore reports: KubeVirt v1.6's condition reasons, event reasons and
messages, the readiness policies they are reported under, and the restore's own status."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from kubevirt.virt_controller.watch.snapshot.common import FAILURE, PROGRESSING, READY, with_condition
from kubevirt.virt_controller.watch.snapshot.restore_spec import meta_of, status_of
from kubevirt_api.view import JSON

# spec.targetReadinessPolicy, and how long WaitGracePeriod waits.
STOP_TARGET: Final = "StopTarget"
WAIT_GRACE_PERIOD: Final = "WaitGracePeriod"
FAIL_IMMEDIATE: Final = "FailImmediate"
WAIT_EVENTUALLY: Final = "WaitEventually"
DEFAULT_GRACE_PERIOD: Final = timedelta(minutes=5)
_GRACE_PERIOD_TEXT: Final = "5m0s"  # DEFAULT_GRACE_PERIOD as Go prints a time.Duration

# Events.
RESTORE_COMPLETE_EVENT: Final = "VirtualMachineRestoreComplete"
RESTORE_ERROR_EVENT: Final = "VirtualMachineRestoreError"
RESTORE_FAILED_EVENT: Final = "Operation failed"
RESTORE_TARGET_NOT_READY_EVENT: Final = "RestoreTargetNotReady"
RESTORE_DATA_VOLUME_CREATE_ERROR_EVENT: Final = "RestoreDataVolumeCreateError"
VMI_EXISTS_EVENT_MESSAGE: Final = (
    "Restore target VMI still exists, please stop the restore target to proceed with restore"
)

# Condition reasons.
INITIALIZING: Final = "Initializing VirtualMachineRestore"
CREATING_PVCS: Final = "Creating new PVCs"
WAITING_FOR_PVCS: Final = "Waiting for new PVCs"
UPDATING_TARGET: Final = "Updating target spec"
WAITING_FOR_TARGET: Final = "Waiting for target update"
OPERATION_COMPLETE: Final = "Operation complete"
RESTORE_DELETING: Final = "VM restore is deleting"
WAIT_EVENTUALLY_MESSAGE: Final = (
    "Waiting for target VM to be powered off. Please stop the restore target to proceed with restore"
)
WAIT_GRACE_PERIOD_MESSAGE: Final = (
    f"{WAIT_EVENTUALLY_MESSAGE}, or the operation will fail after {_GRACE_PERIOD_TEXT}"
)
STOP_TARGET_MESSAGE: Final = "Automatically stopping restore target for restore operation"
TARGET_NOT_READY_FAILURE_MESSAGE: Final = "Restore target VMI must be powered off before restore operation"
GRACE_PERIOD_EXCEEDED_ERROR: Final = (
    f"Restore target failed to be ready within {_GRACE_PERIOD_TEXT}. "
    "Please power off the target VM before attempting restore"
)
RESTORE_TO_EXISTING_TARGET_ERROR: Final = (
    "restore source and restore target are different but restore target already exists"
)


def is_progressing(restore: Mapping[str, Any]) -> bool:
    """Neither complete nor failed: a Failure condition of any status ends a restore for good."""
    status = status_of(restore)
    failed = any(condition.get("type") == FAILURE for condition in status.get("conditions") or [])
    return status.get("complete") is not True and not failed


def set_conditions(
    restore: JSON, now: datetime, progressing: bool, ready: bool, reason: str, ready_reason: str | None = None
) -> None:
    """Progressing and Ready (in that order), with ``reason`` for both unless Ready has its own."""
    status = restore.setdefault("status", {})
    conditions = with_condition(status.get("conditions"), PROGRESSING, progressing, reason, now)
    status["conditions"] = with_condition(conditions, READY, ready, ready_reason or reason, now)


def complete_message(restore: Mapping[str, Any]) -> str:
    return f"Successfully completed VirtualMachineRestore {meta_of(restore).get('name', '')}"
