"""What a worker pod's state says, copied onto its claim's annotations as CDI's controllers copy it: the
running condition (with CDI's reasons for image pulls and full volumes), restarts, and the termination
message a worker leaves on success."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubevirt.cdi_controller import meta
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.cdi.constants import Annotation, Reason

POD_RUNNING_REASON = "Pod is running"
IMAGE_PULL_FAILURE_TEXT = "failed to pull image"
TOO_SMALL_MESSAGE = "DataVolume too small to contain image"
_PULL_FAILURES = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName")
_TOO_SMALL_TEXTS = (
    "is larger than the reported available",
    "no space left on device",
    "file largest block is bigger than maxblock",
    "disk quota exceeded",
)
OOM_KILLED = "OOMKilled"


@dataclass(frozen=True)
class TerminationMessage:
    """The JSON a worker that exited 0 leaves in its termination message."""

    message: str | None = None
    scratch_space_required: bool = False
    preallocation_applied: bool = False
    deadline_passed: bool = False  # the upload server stopped when its certificate's refresh time came
    labels: dict[str, str] = field(default_factory=dict)


def termination_message(pod: Mapping[str, Any]) -> TerminationMessage | None:
    """The first container's message when it exited 0; None otherwise or when it is no such JSON."""
    status = meta.first_container_status(pod)
    terminated = ((status or {}).get("state") or {}).get("terminated")
    if not terminated or terminated.get("exitCode", 0) != 0:
        return None
    try:
        data = json.loads(terminated.get("message") or "")
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    labels = data.get("labels")
    if not isinstance(labels, dict):
        labels = {}
    return TerminationMessage(
        message=data.get("message") if isinstance(data.get("message"), str) else None,
        scratch_space_required=data.get("scratchSpaceRequired") is True,
        preallocation_applied=data.get("preallocationApplied") is True,
        deadline_passed=data.get("deadlinePassed") is True,
        labels={str(k): str(v) for k, v in labels.items()},
    )


def simplify_message(message: str) -> str:
    if any(text in message for text in _TOO_SMALL_TEXTS):
        return TOO_SMALL_MESSAGE
    return message


def annotations_from_pod(
    annotations: dict[str, str], pod: Mapping[str, Any], message: TerminationMessage | None
) -> None:
    """Sets restarts and the running-condition annotations from the pod's first container."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    if not statuses:
        return
    first = statuses[0]
    previous = _int(annotations.get(Annotation.POD_RESTARTS))
    restarts = int(first.get("restartCount") or 0)
    if restarts >= previous:
        annotations[Annotation.POD_RESTARTS] = str(restarts)
    state = first.get("state") or {}
    prefix = Annotation.RUNNING_CONDITION
    if state.get("running") is not None:
        annotations.update({prefix: "true", f"{prefix}.message": "", f"{prefix}.reason": POD_RUNNING_REASON})
        return
    annotations[prefix] = "false"
    for status in statuses:
        waiting = (status.get("state") or {}).get("waiting")
        if status.get("started") is False and waiting and waiting.get("reason") in _PULL_FAILURES:
            annotations[f"{prefix}.message"] = f"{IMAGE_PULL_FAILURE_TEXT}: {status.get('image', '')}"
            annotations[f"{prefix}.reason"] = Reason.IMAGE_PULL_FAILED
            return
    waiting = state.get("waiting")
    if waiting is not None and waiting.get("reason") != "CrashLoopBackOff":
        annotations[f"{prefix}.message"] = simplify_message(str(waiting.get("message") or ""))
        annotations[f"{prefix}.reason"] = str(waiting.get("reason") or "")
        return
    terminated = state.get("terminated")
    if terminated is None:
        return
    if message is not None:
        if message.scratch_space_required:
            annotations[Annotation.REQUIRES_SCRATCH] = "true"
            annotations[f"{prefix}.message"] = "scratch space required and none found"
            annotations[f"{prefix}.reason"] = Reason.SCRATCH_REQUIRED
            return
        if message.message is not None:
            annotations[f"{prefix}.message"] = message.message
        if message.preallocation_applied:
            annotations[cdi.PREALLOCATION_APPLIED] = "true"
    else:
        text = str(terminated.get("message") or "")
        annotations[f"{prefix}.message"] = simplify_message(text)
        if "Preallocation applied" in text:
            annotations[cdi.PREALLOCATION_APPLIED] = "true"
        if IMAGE_PULL_FAILURE_TEXT in text:
            annotations[f"{prefix}.reason"] = Reason.IMAGE_PULL_FAILED
            return
    annotations[f"{prefix}.reason"] = str(terminated.get("reason") or "")


def oom_killed(pod: Mapping[str, Any]) -> bool:
    status = meta.first_container_status(pod) or {}
    for state_key in ("state", "lastState"):
        terminated = (status.get(state_key) or {}).get("terminated") or {}
        if terminated.get("reason") == OOM_KILLED:
            return True
    return False


def exit_failure(pod: Mapping[str, Any]) -> str | None:
    """The termination message of a first container that exited non-zero."""
    status = meta.first_container_status(pod) or {}
    terminated = (status.get("state") or {}).get("terminated")
    if terminated and int(terminated.get("exitCode") or 0) > 0:
        return str(terminated.get("message") or "")
    return None


def unschedulable(pod: Mapping[str, Any]) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return True
    return False


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0
