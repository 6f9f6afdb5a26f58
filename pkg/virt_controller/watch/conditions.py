"""Condition lists as KubeVirt's condition managers handle them, for any of the API's condition types."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from kubevirt_api.base import Condition

C = TypeVar("C", bound=Condition)

TRUE = "True"
FALSE = "False"


def not_ready(kind: type[C], reason: str, message: str, now: str) -> C:
    """A ``Ready=False`` condition of the given condition type, probed and changed ``now``."""
    return kind(
        type="Ready",
        status=FALSE,
        reason=reason,
        message=message,
        last_probe_time=now,
        last_transition_time=now,
    )


def get_condition(conditions: Sequence[C] | None, type_: str) -> C | None:
    for condition in conditions or ():
        if condition.type == type_:
            return condition
    return None


def has_condition(conditions: Sequence[C] | None, type_: str, status: str | None = None) -> bool:
    condition = get_condition(conditions, type_)
    return condition is not None and (status is None or condition.status == status)


def has_condition_reason(conditions: Sequence[C] | None, type_: str, status: str, reason: str) -> bool:
    condition = get_condition(conditions, type_)
    return condition is not None and condition.status == status and condition.reason == reason


def remove_condition(conditions: Sequence[C] | None, type_: str) -> list[C] | None:
    """The list without ``type_``; ``None`` when nothing remains (Go's nil slice, left out on the wire)."""
    kept = [c for c in conditions or () if c.type != type_]
    return kept or None


def update_condition(conditions: Sequence[C] | None, new: C) -> list[C]:
    """Sets ``new`` unless a condition of its type already has the same status and reason.

    Keeping the old entry when only times or the message differ is what stops a controller from
    rewriting the object on every pass.
    """
    result = list(conditions or ())
    for index, condition in enumerate(result):
        if condition.type == new.type:
            if condition.status != new.status or condition.reason != new.reason:
                result[index] = new
            return result
    result.append(new)
    return result
