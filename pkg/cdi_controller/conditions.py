"""A DataVolume's conditions (Bound, Ready, Running) as CDI derives them from its claim and the claim's
annotations, with CDI's time rules: a status change moves both times, a changed reason or message moves
only the heartbeat, nothing else moves either."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubevirt.cdi_controller import meta
from kubevirt_api.cdi.constants import Annotation, ConditionType, Phase, Reason
from kubevirt_api.view import JSON

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
UNSCHEDULABLE_MESSAGE = "Importer pod cannot be scheduled"
SCRATCH_REQUIRED_MESSAGE = "scratch space required and none found"
CLAIM_LOST = "ClaimLost"

Now = Callable[[], str]


def find(conditions: list[JSON], kind: str) -> JSON | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def set_condition(
    conditions: list[JSON], kind: str, status: str, message: str, reason: str, now: Now
) -> None:
    condition = find(conditions, kind)
    if condition is None:
        condition = {"type": kind}
        conditions.append(condition)
    if condition.get("status") != status:
        stamp = now()
        condition.update(lastTransitionTime=stamp, lastHeartbeatTime=stamp, message=message, reason=reason)
    elif condition.get("message", "") != message or condition.get("reason", "") != reason:
        condition.update(message=message, reason=reason, lastHeartbeatTime=now())
    condition["status"] = status
    _drop_empty(condition)


def _drop_empty(condition: JSON) -> None:
    # Go omits the empty message and reason.
    for key in ("message", "reason"):
        if not condition.get(key):
            condition.pop(key, None)


def update_conditions(
    status: JSON, pvc: Mapping[str, Any] | None, reason: str, message: str, now: Now
) -> None:
    """Sets the three conditions of a DataVolume status from its phase and claim (``reason`` and
    ``message`` explain a missing claim)."""
    conditions: list[JSON] = status.setdefault("conditions", [])
    phase = status.get("phase", "")
    ready = TRUE if phase == Phase.SUCCEEDED else UNKNOWN if phase == Phase.UNKNOWN else FALSE
    _update_bound(conditions, pvc, message, reason, now)
    set_condition(conditions, ConditionType.READY, ready, message, reason, now)
    _update_running(conditions, meta.annotations_of(pvc) if pvc is not None else {}, now)


def _ready_false(conditions: list[JSON], now: Now) -> None:
    set_condition(conditions, ConditionType.READY, FALSE, "", "", now)


def _update_bound(
    conditions: list[JSON], pvc: Mapping[str, Any] | None, message: str, reason: str, now: Now
) -> None:
    bound = ConditionType.BOUND
    if pvc is None:
        set_condition(conditions, bound, FALSE, message or "No PVC found", reason or Reason.NOT_FOUND, now)
        _ready_false(conditions, now)
        return
    name = meta.name(pvc)
    claim = _claim_condition(meta.annotations_of(pvc))
    phase = meta.claim_phase(pvc)
    if phase == meta.CLAIM_BOUND:
        if claim is None or claim[0] == TRUE:
            set_condition(conditions, bound, TRUE, f"PVC {name} Bound", Reason.BOUND, now)
        else:
            set_condition(conditions, bound, FALSE, claim[1], claim[2], now)
            _ready_false(conditions, now)
    elif phase == meta.CLAIM_PENDING:
        if claim is None or claim[0] == TRUE:
            set_condition(conditions, bound, FALSE, f"PVC {name} Pending", Reason.PENDING, now)
        else:
            set_condition(
                conditions, bound, FALSE, f"target PVC {name} Pending and {claim[1]}", claim[2], now
            )
        _ready_false(conditions, now)
    elif phase == meta.CLAIM_LOST:
        set_condition(conditions, bound, FALSE, "Claim Lost", CLAIM_LOST, now)
        _ready_false(conditions, now)
    else:
        set_condition(conditions, bound, FALSE, "", "", now)
        _ready_false(conditions, now)


def _claim_condition(annotations: Mapping[str, str]) -> tuple[str, str, str] | None:
    """The (status, message, reason) a worker left in the bound-condition annotations, if any."""
    value = annotations.get(Annotation.BOUND_CONDITION)
    if value is None:
        return None
    status = {"true": TRUE, "false": FALSE}.get(value.lower(), UNKNOWN)
    return (
        status,
        annotations.get(Annotation.BOUND_CONDITION_MESSAGE, ""),
        annotations.get(Annotation.BOUND_CONDITION_REASON, ""),
    )


def _update_running(conditions: list[JSON], annotations: Mapping[str, str], now: Now) -> None:
    running = ConditionType.RUNNING
    message = annotations.get(Annotation.RUNNING_CONDITION_MESSAGE, "")
    reason = annotations.get(Annotation.RUNNING_CONDITION_REASON, "")
    if annotations.get(Annotation.POD_SCHEDULABLE) == "false":
        set_condition(conditions, running, FALSE, UNSCHEDULABLE_MESSAGE, Reason.UNSCHEDULABLE, now)
        return
    value = annotations.get(Annotation.RUNNING_CONDITION)
    if value is None or value.lower() == "false":
        set_condition(conditions, running, FALSE, message, reason, now)
    elif value.lower() == "true":
        set_condition(conditions, running, TRUE, message, reason, now)
        set_condition(conditions, ConditionType.READY, FALSE, "", Reason.TRANSFER_RUNNING, now)
    else:
        set_condition(conditions, running, UNKNOWN, message, reason, now)


def condition_events(status: Mapping[str, Any], original: list[JSON]) -> list[tuple[str, str, str]]:
    """The events CDI emits for changed conditions, as (type, reason, message): any change of Bound, and
    a new failure message of a bound DataVolume that is neither ready nor running."""
    conditions = list(status.get("conditions") or [])
    result: list[tuple[str, str, str]] = []
    bound = find(conditions, ConditionType.BOUND)
    was_bound = find(original, ConditionType.BOUND)
    if bound is not None and (was_bound is None or _key(bound) != _key(was_bound)):
        result.append(("Normal", bound.get("reason", ""), bound.get("message", "")))
    ready = find(conditions, ConditionType.READY)
    running = find(conditions, ConditionType.RUNNING)
    was_running = find(original, ConditionType.RUNNING)
    if ready is None or bound is None or running is None:
        return result
    if ready.get("status") == FALSE and running.get("status") == FALSE and bound.get("status") == TRUE:
        message = running.get("message", "")
        if (
            message
            and message != SCRATCH_REQUIRED_MESSAGE
            and (was_running is None or was_running.get("message", "") != message)
        ):
            result.append(("Warning", running.get("reason", ""), message))
    return result


def _key(condition: Mapping[str, Any]) -> tuple[str, str, str]:
    return (condition.get("status", ""), condition.get("reason", ""), condition.get("message", ""))
