"""The VMI phase a launcher's domain implies (KubeVirt's ``calculateVmPhaseForStatusReason``)."""

from __future__ import annotations

from typing import Any

from kubevirt_api.core.v1 import FINAL_VMI_PHASES, VirtualMachineInstancePhase

_Phase = VirtualMachineInstancePhase

# libvirt domain states (not VMI phases)
_RUNNING_STATES = ("Running", "Blocked", "PMSuspended")
_DOWN_STATES = ("Shutoff", "Crashed")
_CLEAN_STOPS = ("Shutdown", "Saved", "FromSnapshot")


def domain_state(domain: dict[str, Any] | None) -> tuple[str, str]:
    status = (domain or {}).get("Status") or {}
    return str(status.get("Status") or ""), str(status.get("Reason") or "")


def domain_alive(domain: dict[str, Any] | None) -> bool:
    """KubeVirt's ``domainAlive``: a domain exists and is neither shut off, crashed nor stateless."""
    return domain is not None and domain_state(domain)[0] not in (*_DOWN_STATES, "")


def _acpi_applies(vmi_grace: int | None, domain: dict[str, Any]) -> bool:
    features = ((domain.get("Spec") or {}).get("Features")) or {}
    return (vmi_grace is None or vmi_grace != 0) and features.get("ACPI") is not None


def phase_from_domain(
    current: str, domain: dict[str, Any] | None, *, launcher_unresponsive: bool, vmi_grace: int | None
) -> str:
    """The phase the VMI should have given its launcher's ``domain`` (None: no domain yet or any more)."""
    if domain is None:
        if current == _Phase.SCHEDULED:
            return _Phase.FAILED if launcher_unresponsive else _Phase.SCHEDULED
        if current != _Phase.RUNNING and current not in FINAL_VMI_PHASES:
            return _Phase.SCHEDULED
        return _Phase.FAILED if current == _Phase.RUNNING else current
    state, reason = domain_state(domain)
    if state in _DOWN_STATES:
        if reason in ("Crashed", "Panicked"):
            return _Phase.FAILED
        if reason == "Destroyed":
            return _Phase.FAILED if _acpi_applies(vmi_grace, domain) else _Phase.SUCCEEDED
        if reason in _CLEAN_STOPS:
            return _Phase.SUCCEEDED
        return current
    if state == "Paused":
        return _Phase.FAILED if reason == "PostcopyFailed" else _Phase.RUNNING
    if state in _RUNNING_STATES:
        return _Phase.RUNNING
    return current
