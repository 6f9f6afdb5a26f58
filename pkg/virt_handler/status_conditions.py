"""Conditions in a VMI status, kept as KubeVirt's condition manager keeps them.

A condition that already says the same thing stays as stored, timestamps included, so that comparing
the status before and after finds no change where there is none.
"""

from __future__ import annotations

from kubevirt_api.view import JSON


def conditions_of(status: JSON) -> list[JSON]:
    return list(status.get("conditions") or [])


def find_condition(status: JSON, kind: str) -> JSON | None:
    return next((c for c in conditions_of(status) if c.get("type") == kind), None)


def _meaningful(condition: JSON) -> JSON:
    """A condition without its empty fields: the API server drops them, so comparing them would see a
    change where there is none."""
    return {k: v for k, v in condition.items() if v not in (None, "")}


def set_condition(status: JSON, wanted: JSON) -> None:
    """Puts ``wanted`` in place of the condition of its type unless that one already says the same."""
    current = find_condition(status, wanted["type"])
    if current is not None and _meaningful(current) == _meaningful(wanted):
        return
    status["conditions"] = [c for c in conditions_of(status) if c.get("type") != wanted["type"]] + [wanted]


def remove_condition(status: JSON, kind: str) -> None:
    if find_condition(status, kind) is not None:
        status["conditions"] = [c for c in conditions_of(status) if c.get("type") != kind]
