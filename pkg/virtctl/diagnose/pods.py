"""Finding a VMI's launcher pods and reading their state, shared by the pod, node and migration links."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubevirt.client import JSON, NODES, PODS
from kubevirt.virtctl.diagnose.findings import Findings, events_or_unseen, json_condition_lines
from kubevirt.virtctl.diagnose.fit import fit, pod_requests
from kubevirt.virtctl.diagnose.reader import UnseenError
from kubevirt_api.core.v1.constants import APP_LABEL, CREATED_BY_LABEL, DOMAIN_ANNOTATION, NODE_SCHEDULABLE

__all__ = ["handler_pods", "launcher_pod", "name_of", "newest", "pod_condition", "unscheduled"]

LAUNCHER = "virt-launcher"
HANDLER = "virt-handler"


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def newest(objects: list[JSON]) -> JSON | None:
    return max(
        objects, key=lambda obj: str((obj.get("metadata") or {}).get("creationTimestamp") or ""), default=None
    )


def pod_condition(pod: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    return next(
        (c for c in (pod.get("status") or {}).get("conditions") or () if c.get("type") == type_), None
    )


def launcher_pod(findings: Findings) -> JSON | None:
    """The VMI's current launcher pod: the newest on the VMI's node (any node before it has one).

    Without the VMI (not seen) its pods are found by the ``kubevirt.io/domain`` annotation instead of
    the ``kubevirt.io/created-by`` label, which needs the VMI's uid. Raises :class:`UnseenError`.
    """
    uid = findings.vmi_uid
    if uid is not None:
        pods = findings.reader.list(PODS, findings.namespace, label_selector=f"{CREATED_BY_LABEL}={uid}")
    else:
        launchers = findings.reader.list(PODS, findings.namespace, label_selector=f"{APP_LABEL}={LAUNCHER}")
        pods = [
            pod
            for pod in launchers
            if ((pod.get("metadata") or {}).get("annotations") or {}).get(DOMAIN_ANNOTATION) == findings.name
        ]
    node = findings.vmi.status.node_name if findings.vmi is not None and findings.vmi.status else None
    if node:
        pods = [pod for pod in pods if (pod.get("spec") or {}).get("nodeName") == node]
    return newest(pods)


def handler_pods(findings: Findings) -> list[JSON]:
    """Every virt-handler pod, whatever its namespace; raises :class:`UnseenError`."""
    return findings.reader.list(PODS, label_selector=f"{APP_LABEL}={HANDLER}")


def _schedulable_hint(findings: Findings, unmatched: Mapping[str, str]) -> str:
    """Why no node is marked ``kubevirt.io/schedulable=true``: virt-handler marks the nodes it serves, so
    the answer is where it runs (nothing when the pods cannot be seen)."""
    if unmatched.get(NODE_SCHEDULABLE) != "true":
        return ""
    try:
        handlers = handler_pods(findings)
    except UnseenError:
        return ""
    nodes = sorted({str(node) for pod in handlers if (node := (pod.get("spec") or {}).get("nodeName"))})
    if not nodes:
        marks = f"{NODE_SCHEDULABLE}=true"
        return f" (no virt-handler pod runs on any node, and virt-handler is what marks a node {marks})"
    return f" (virt-handler runs on {', '.join(nodes)} only, and has marked none of them schedulable)"


def unscheduled(
    findings: Findings, pod: JSON, *, role: str, excluded: tuple[str, ...] = ()
) -> tuple[str, dict[str, Any]]:
    """The sentence and evidence for a pod no node holds yet: what can never fit, else the scheduler's
    own words, else the fact that nobody has answered."""
    name = name_of(pod)
    scheduled = pod_condition(pod, "PodScheduled")
    uid = (pod.get("metadata") or {}).get("uid")
    evidence: dict[str, Any] = {
        "pod": name,
        "phase": (pod.get("status") or {}).get("phase"),
        "requests": {resource: str(quantity) for resource, quantity in sorted(pod_requests(pod).items())},
        "nodeSelector": (pod.get("spec") or {}).get("nodeSelector") or {},
        "conditions": json_condition_lines((pod.get("status") or {}).get("conditions")),
        "events": events_or_unseen(findings.reader, findings.namespace, "Pod", name, uid),
    }
    try:
        nodes = findings.reader.list(NODES)
    except UnseenError as unseen:
        evidence["nodes"] = str(unseen)
        verdict = None
    else:
        verdict = fit(pod, nodes, excluded=excluded)
        evidence["nodes"] = [name_of(node) for node in nodes]
        evidence["shortfall"] = verdict.short
        evidence["unmatchedNodeSelector"] = verdict.unmatched_selector
    if verdict is not None and not verdict.fits_somewhere:
        where = f" other than {', '.join(excluded)}" if excluded and verdict.nodes == 0 else ""
        hint = _schedulable_hint(findings, verdict.unmatched_selector)
        return f"The {role} {name} can never be scheduled: {verdict.sentence()}{where}{hint}.", evidence
    if scheduled is not None and scheduled.get("status") == "False":
        said = scheduled.get("message") or scheduled.get("reason") or "no reason given"
        return f"The {role} {name} is Pending: the scheduler says {said!r}.", evidence
    scheduling_events = [line for line in evidence["events"] if line.startswith("FailedScheduling: ")]
    if scheduling_events:
        said = scheduling_events[-1].removeprefix("FailedScheduling: ")
        return f"The {role} {name} is Pending: the scheduler says {said!r}.", evidence
    return (
        f"The {role} {name} is not bound to a node and the scheduler has said nothing about it "
        "(is kube-scheduler running?).",
        evidence,
    )
