"""The fifth link: the node the launcher runs on is Ready, runs a ready virt-handler whose heartbeat is
fresh, and is marked ``kubevirt.io/schedulable=true``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from kubevirt.client import NODES
from kubevirt.virtctl.diagnose.findings import Findings, format_age, json_condition_lines, parse_time
from kubevirt.virtctl.diagnose.pods import handler_pods, name_of, pod_condition
from kubevirt.virtctl.diagnose.reader import UnseenError
from kubevirt.virtctl.diagnose.verdict import Link, Status
from kubevirt_api.core.v1.constants import NODE_SCHEDULABLE, VIRT_HANDLER_HEARTBEAT

__all__ = ["HEARTBEAT_STALE_AFTER", "NAME", "check_node", "node_health"]

NAME = "node"
# virt-controller's node controller gives up on a node whose heartbeat is older than this.
HEARTBEAT_STALE_AFTER: Final = timedelta(minutes=5)


def _handler_problem(findings: Findings, node: str, evidence: dict[str, Any]) -> str | None:
    try:
        handlers = handler_pods(findings)
    except UnseenError as unseen:
        evidence["virtHandler"] = str(unseen)
        return None
    on_node = [pod for pod in handlers if (pod.get("spec") or {}).get("nodeName") == node]
    if not on_node:
        evidence["virtHandler"] = None
        return f"No virt-handler pod runs on node {node}"
    handler = on_node[0]
    ready = pod_condition(handler, "Ready")
    evidence["virtHandler"] = {
        "pod": f"{(handler.get('metadata') or {}).get('namespace')}/{name_of(handler)}",
        "phase": (handler.get("status") or {}).get("phase"),
        "ready": ready.get("status") if ready else None,
    }
    if ready is None or ready.get("status") != "True":
        return f"virt-handler pod {name_of(handler)} on node {node} is not ready"
    return None


def _heartbeat_problem(
    findings: Findings, node: str, annotations: dict[str, str], evidence: dict[str, Any]
) -> str | None:
    beat = annotations.get(VIRT_HANDLER_HEARTBEAT)
    evidence["heartbeat"] = beat
    if not beat:
        return (
            f"virt-handler has never sent a heartbeat for node {node} "
            f"(no {VIRT_HANDLER_HEARTBEAT} annotation)"
        )
    try:
        age = findings.now - parse_time(beat)
    except ValueError:
        return f"Node {node}'s heartbeat {beat!r} is not a timestamp"
    evidence["heartbeatAge"] = format_age(max(age.total_seconds(), 0))
    if age > HEARTBEAT_STALE_AFTER:
        return (
            f"virt-handler's last heartbeat on node {node} is {format_age(age.total_seconds())} old "
            f"(stale after {format_age(HEARTBEAT_STALE_AFTER.total_seconds())})"
        )
    return None


def node_health(findings: Findings, node: str) -> tuple[Status, str, dict[str, Any]]:
    """Whether ``node`` can run and serve VMIs: exists, Ready, a ready virt-handler, a fresh heartbeat
    and the schedulable label, in that order; the first failure is the sentence."""
    evidence: dict[str, Any] = {"node": node}
    problem: str | None = None
    try:
        obj = findings.reader.get(NODES, None, node)
    except UnseenError as unseen:
        obj, evidence["nodeObject"] = None, str(unseen)
    else:
        if obj is None:
            return Status.BROKEN, f"Node {node} does not exist any more.", evidence
    if obj is not None:
        ready = next(
            (c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == "Ready"), None
        )
        evidence["conditions"] = json_condition_lines([ready] if ready else [])
        if ready is None or ready.get("status") != "True":
            said = (ready or {}).get("message") or (ready or {}).get("reason") or "no Ready condition"
            problem = f"Node {node} is not Ready ({said})"
    problem = problem or _handler_problem(findings, node, evidence)
    if obj is not None:
        metadata = obj.get("metadata") or {}
        problem = problem or _heartbeat_problem(findings, node, metadata.get("annotations") or {}, evidence)
        schedulable = (metadata.get("labels") or {}).get(NODE_SCHEDULABLE)
        evidence["schedulable"] = schedulable
        if not problem and schedulable != "true":
            label = f"{NODE_SCHEDULABLE}={schedulable or '(unset)'}"
            problem = f"Node {node} is marked {label}: virt-handler does not offer it for new VMIs"
    if problem:
        return Status.BROKEN, f"{problem}.", evidence
    if obj is None and not isinstance(evidence.get("virtHandler"), dict):
        return Status.UNKNOWN, f"{evidence['nodeObject']}; {evidence['virtHandler']}.", evidence
    seen = [f"node {node}"]
    if isinstance(evidence.get("virtHandler"), dict):
        seen.append("virt-handler ready")
    if "heartbeatAge" in evidence:
        seen.append(f"heartbeat {evidence['heartbeatAge']} ago")
    if evidence.get("schedulable") == "true":
        seen.append("schedulable")
    missed = [str(evidence[key]) for key in ("nodeObject",) if key in evidence]
    if isinstance(evidence.get("virtHandler"), str):
        missed.append(evidence["virtHandler"])
    return Status.OK, ", ".join(seen) + (f" ({'; '.join(missed)})" if missed else "") + ".", evidence


def check_node(findings: Findings) -> Link:
    node = findings.node_name
    if node is None:
        why = findings.unseen.get("pod") or findings.unseen.get("vmi") or "the VMI has no node yet"
        return Link(NAME, Status.UNKNOWN, f"Node not checked: {why}.")
    status, message, evidence = node_health(findings, node)
    return Link(NAME, status, message, evidence)
