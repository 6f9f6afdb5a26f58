"""The JSON patches through which virt-api asks the VM controller to start or stop a VM.

Requests go into ``status.stateChangeRequests`` guarded by a ``test`` of the current list, so two
concurrent requests cannot both land; switching between Always and Halted patches the spec instead.
"""

from __future__ import annotations

from typing import Any

from kubevirt_api.view import JSON

Patch = list[JSON]

START, STOP = "Start", "Stop"
HALTED, ALWAYS, MANUAL, RERUN_ON_FAILURE, ONCE = "Halted", "Always", "Manual", "RerunOnFailure", "Once"
ALREADY_UNDERWAY = "unable to complete request: stop/start already underway"
PAUSED_DATA = {"paused": "true"}


class RunStrategyError(ValueError):
    """The VM's spec names both ``running`` and ``runStrategy``."""


class UnderwayError(ValueError):
    """Requests are pending and the new ones do not supersede them."""


def start_request(data: dict[str, str] | None = None) -> JSON:
    request: JSON = {"action": START}
    if data:
        request["data"] = dict(data)
    return request


def stop_request(vmi_uid: str | None) -> JSON:
    request: JSON = {"action": STOP}
    if vmi_uid:
        request["uid"] = vmi_uid
    return request


def run_strategy(vm: JSON) -> str:
    """The effective run strategy: ``running`` maps to Always/Halted, neither set means Halted."""
    spec = vm.get("spec") or {}
    running, strategy = spec.get("running"), spec.get("runStrategy")
    if running is not None and strategy is not None:
        raise RunStrategyError("running and runstrategy are mutually exclusive")
    if running is not None:
        return ALWAYS if running else HALTED
    return str(strategy) if strategy is not None else HALTED


def state_change_patch(vm: JSON, *changes: JSON) -> Patch:
    """Appends ``changes`` to an empty request list, or lets a lone Stop replace pending requests."""
    status = vm.get("status") or {}
    if _is_empty(status):
        return [{"op": "add", "path": "/status", "value": {"stateChangeRequests": list(changes)}}]
    pending = status.get("stateChangeRequests")
    patch: Patch = [{"op": "test", "path": "/status/stateChangeRequests", "value": pending}]
    if not pending:
        patch.append({"op": "add", "path": "/status/stateChangeRequests", "value": list(changes)})
    elif len(changes) == 1 and changes[0]["action"] == STOP:
        patch.append({"op": "replace", "path": "/status/stateChangeRequests", "value": list(changes)})
    else:
        raise UnderwayError(ALREADY_UNDERWAY)
    if status.get("startFailure") is not None:
        patch.append({"op": "remove", "path": "/status/startFailure"})
    return patch


def running_patch(vm: JSON, running: bool) -> Patch:
    """Flips the VM to Always (or ``running: true``) or to Halted (``running: false``)."""
    spec = vm.get("spec") or {}
    if spec.get("runStrategy") is not None:
        wanted: Any = ALWAYS if running else HALTED
        path, current = "/spec/runStrategy", spec["runStrategy"]
    else:
        wanted, path, current = running, "/spec/running", spec.get("running")
    return [{"op": "test", "path": path, "value": current}, {"op": "replace", "path": path, "value": wanted}]


def grace_period_patch(vmi: JSON, grace_period: int) -> Patch:
    """Shortens (or sets) a running VMI's termination grace period, guarded by its current value."""
    current = (vmi.get("spec") or {}).get("terminationGracePeriodSeconds")
    path = "/spec/terminationGracePeriodSeconds"
    return [
        {"op": "test", "path": path, "value": current},
        {"op": "replace", "path": path, "value": grace_period},
    ]


def _is_empty(value: Any) -> bool:
    """Go's zero value: what ``equality.Semantic.DeepEqual`` with an empty status sees as nothing."""
    if isinstance(value, dict):
        return all(_is_empty(item) for item in value.values())
    return value is None or value is False or value == 0 or value in ("", [])
