"""The sixth link: the launcher's command socket, the libvirt domain and its last event.

They live on the node and are read through virt-api's read-only ``launcherstate`` subresource, which
asks virt-handler on the VMI's node (never an exec into the pod). The user needs ``get`` on
``virtualmachineinstances/launcherstate``; without it the link says so and the walk goes on.
"""

from __future__ import annotations

from typing import Any

from kubevirt.virtctl.diagnose.findings import Findings
from kubevirt.virtctl.diagnose.reader import UnseenError
from kubevirt.virtctl.diagnose.verdict import Link, Status
from kubevirt_api.core.v1 import VirtualMachineInstancePhase

__all__ = ["NAME", "check_launcher", "launcher_state_path"]

NAME = "launcher"
SUBRESOURCE = "launcherstate"
# The phases in which a launcher runs; virt-api only asks the handler about these.
ACTIVE_PHASES = (VirtualMachineInstancePhase.SCHEDULED, VirtualMachineInstancePhase.RUNNING)
# libvirt domain states (not VMI phases)
ALIVE_STATES = ("Running", "Blocked", "PMSuspended", "Paused")


def launcher_state_path(namespace: str, name: str) -> str:
    vmi = f"/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachineinstances/{name}"
    return f"{vmi}/{SUBRESOURCE}"


def _event_line(event: dict[str, Any] | None) -> str:
    if not event:
        return "no domain event seen yet"
    state = "/".join(part for part in (event.get("status"), event.get("reason")) if part)
    return f"last domain event {event.get('type')} {state} at {event.get('timestamp')}"


def _verdict(phase: str, where: str, answer: dict[str, Any]) -> tuple[Status, str]:
    socket = answer.get("socket") or {}
    state, why = socket.get("state"), socket.get("message") or ""
    event = _event_line(answer.get("lastDomainEvent"))
    if state == "Missing":
        return Status.BROKEN, f"The launcher's command socket{where} is not there ({why}); {event}."
    if state == "Unresponsive":
        return Status.BROKEN, f"virt-handler marked the launcher{where} unresponsive ({why}); {event}."
    if state != "Ready":
        return Status.BROKEN, f"The launcher{where} does not answer ({why or state}); {event}."
    domain = answer.get("domain") or {}
    if not domain.get("exists"):
        return Status.BROKEN, f"The launcher{where} answers but has no domain defined; {event}."
    status, reason = domain.get("status") or "", domain.get("reason") or ""
    described = f"{status} ({reason})" if reason else status
    if status not in ALIVE_STATES:
        return Status.BROKEN, f"The domain{where} is {described}; {event}."
    if phase == VirtualMachineInstancePhase.RUNNING or status != "Running":
        return Status.OK, f"Socket up, domain {described}; {event}."
    return Status.OK, f"Socket up, domain {described} while the VMI is {phase}; {event}."


def check_launcher(findings: Findings) -> Link:
    vmi = findings.vmi
    if vmi is None or vmi.metadata is None:
        why = findings.unseen.get("vmi") or "there is no VMI"
        return Link(NAME, Status.UNKNOWN, f"Launcher not checked: {why}.")
    phase = (vmi.status.phase if vmi.status is not None else None) or ""
    if phase not in ACTIVE_PHASES:
        return Link(NAME, Status.SKIPPED, f"No launcher to ask: the VMI is {phase or 'not scheduled yet'}.")
    node = findings.node_name
    where = f" on node {node}" if node else ""
    name = vmi.metadata.name or findings.name
    try:
        answer = findings.reader.subresource(
            launcher_state_path(findings.namespace, name), f"the launcher of VMI {findings.namespace}/{name}"
        )
    except UnseenError as unseen:
        return Link(NAME, Status.UNKNOWN, f"{str(unseen)[0].upper()}{str(unseen)[1:]}.")
    status, message = _verdict(phase, where, answer)
    return Link(NAME, status, message, {"node": node, **answer})
