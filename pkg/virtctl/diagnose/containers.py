"""The fourth link: the kubelet pulled the launcher's images and its containers run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubevirt.virtctl.diagnose.findings import Findings, events_or_unseen
from kubevirt.virtctl.diagnose.pods import name_of
from kubevirt.virtctl.diagnose.verdict import Link, Status

__all__ = ["NAME", "check_containers", "container_trouble"]

NAME = "containers"
# Waiting reasons that do not go away by waiting (the kubelet's and the image service's words).
STUCK = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "CrashLoopBackOff",
    }
)


def _state_line(status: Mapping[str, Any]) -> str:
    state = status.get("state") or {}
    for kind in ("waiting", "running", "terminated"):
        if kind in state:
            detail = state[kind] or {}
            reason = detail.get("reason") or ""
            if kind == "terminated":
                reason = f"{reason} exit code {detail.get('exitCode')}".strip()
            return f"{status.get('name')}: {kind}" + (f" {reason}" if reason else "")
    return f"{status.get('name')}: no state"


def container_trouble(pod: Mapping[str, Any]) -> str | None:
    """The first container that cannot get going, as a sentence; None when none is stuck."""
    pod_status = pod.get("status") or {}
    statuses = [
        *(pod_status.get("initContainerStatuses") or ()),
        *(pod_status.get("containerStatuses") or ()),
    ]
    init_names = {status.get("name") for status in pod_status.get("initContainerStatuses") or ()}
    for status in statuses:
        state = status.get("state") or {}
        waiting = state.get("waiting")
        if waiting and waiting.get("reason") in STUCK:
            said = f": {waiting['message']}" if waiting.get("message") else ""
            image = status.get("image") or ""
            on_image = f" (image {image})" if image and "Image" in str(waiting["reason"]) else ""
            return f"Container {status.get('name')}{on_image} cannot start: {waiting['reason']}{said}"
        terminated = state.get("terminated")
        if terminated and (
            status.get("name") not in init_names or terminated.get("exitCode") not in (0, None)
        ):
            reason = terminated.get("reason") or "terminated"
            code = terminated.get("exitCode")
            return f"Container {status.get('name')} has exited ({reason}, exit code {code})"
    if pod_status.get("phase") in ("Failed", "Succeeded"):
        reason = pod_status.get("reason") or pod_status.get("message") or "no reason given"
        return f"The pod has ended in phase {pod_status.get('phase')} ({reason})"
    return None


def check_containers(findings: Findings) -> Link:
    pod = findings.pod
    if pod is None:
        why = findings.unseen.get("pod", "the launcher pod is not known")
        return Link(NAME, Status.UNKNOWN, f"Container states not checked: {why}.")
    pod_status = pod.get("status") or {}
    statuses = [
        *(pod_status.get("initContainerStatuses") or ()),
        *(pod_status.get("containerStatuses") or ()),
    ]
    evidence: dict[str, Any] = {"pod": name_of(pod), "containers": [_state_line(s) for s in statuses]}
    deleting = (pod.get("metadata") or {}).get("deletionTimestamp")
    if deleting:
        message = f"The launcher pod {name_of(pod)} is being deleted (since {deleting})."
        return Link(NAME, Status.BROKEN, message, evidence)
    trouble = container_trouble(pod)
    if trouble is not None:
        uid = (pod.get("metadata") or {}).get("uid")
        evidence["events"] = events_or_unseen(findings.reader, findings.namespace, "Pod", name_of(pod), uid)
        return Link(NAME, Status.BROKEN, f"{trouble} (pod {name_of(pod)}).", evidence)
    if not statuses:
        node = (pod.get("spec") or {}).get("nodeName")
        message = f"The kubelet on {node} has not reported the launcher's containers yet."
        return Link(NAME, Status.UNKNOWN, message, evidence)
    running = all("running" in (s.get("state") or {}) for s in pod_status.get("containerStatuses") or ())
    summary = "all containers are running" if running else "containers are starting"
    return Link(NAME, Status.OK, f"{summary} in pod {name_of(pod)}.", evidence)
