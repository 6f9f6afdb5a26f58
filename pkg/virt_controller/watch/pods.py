"""What the controllers read from a virt-launcher Pod (plain JSON): readiness, shutdown, image errors."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any, Final

from kubevirt_api.core.v1.constants import EPHEMERAL_PROVISIONING_OBJECT

Pod = Mapping[str, Any]

COMPUTE_CONTAINER: Final = "compute"
ISTIO_PROXY_CONTAINER: Final = "istio-proxy"
ERR_IMAGE_PULL_REASON: Final = "ErrImagePull"
IMAGE_PULL_BACK_OFF_REASON: Final = "ImagePullBackOff"


def _status(pod: Pod) -> Mapping[str, Any]:
    return pod.get("status") or {}


def _container_statuses(pod: Pod) -> list[Mapping[str, Any]]:
    return list(_status(pod).get("containerStatuses") or [])


def pod_uid(pod: Pod) -> str:
    return str(pod.get("metadata", {}).get("uid", ""))


def pod_name(pod: Pod) -> str:
    return str(pod.get("metadata", {}).get("name", ""))


def pod_node(pod: Pod) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def pod_phase(pod: Pod) -> str:
    return str(_status(pod).get("phase") or "")


def is_terminating(pod: Pod) -> bool:
    return pod.get("metadata", {}).get("deletionTimestamp") is not None


def is_pod_final(pod: Pod) -> bool:
    return pod_phase(pod) in ("Succeeded", "Failed")


def _compute_terminated(pod: Pod) -> Mapping[str, Any] | None:
    for status in _container_statuses(pod):
        if status.get("name") == COMPUTE_CONTAINER:
            terminated = (status.get("state") or {}).get("terminated")
            return terminated if terminated is not None else None
    return None


def is_pod_down_or_going_down(pod: Pod) -> bool:
    """Finished, its compute container terminated, or being deleted."""
    return is_pod_final(pod) or _compute_terminated(pod) is not None or is_terminating(pod)


def is_pod_ready(pod: Pod) -> bool:
    """KubeVirt's readiness: compute (and istio-proxy) running, every other container Ready, pod Running.

    The pod's Ready condition is not consulted, so a VMI readiness probe does not hold back Scheduled.
    """
    if is_pod_down_or_going_down(pod):
        return False
    for status in _container_statuses(pod):
        if status.get("name") in (COMPUTE_CONTAINER, ISTIO_PROXY_CONTAINER):
            if (status.get("state") or {}).get("running") is None:
                return False
        elif not status.get("ready"):
            return False
    return pod_phase(pod) == "Running"


def is_pod_failed_or_going_down(pod: Pod) -> bool:
    """Failed, its compute container exited with an error, or being deleted (a pod that succeeded is
    not down in this sense)."""
    terminated = _compute_terminated(pod)
    compute_failed = terminated is not None and terminated.get("exitCode", 0) != 0
    return pod_phase(pod) == "Failed" or compute_failed or is_terminating(pod)


def is_temporary_pod(pod: Pod) -> bool:
    """The short-lived pod that triggers WaitForFirstConsumer volume binding."""
    return EPHEMERAL_PROVISIONING_OBJECT in (pod.get("metadata", {}).get("annotations") or {})


def as_temporary_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The launcher pod turned into the one that only makes the scheduler bind its claims (KubeVirt's
    ``RenderLaunchManifestNoVm``): marked so, its compute container exits at once."""
    result = copy.deepcopy(dict(pod))
    metadata = result.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), EPHEMERAL_PROVISIONING_OBJECT: "true"}
    for container in (result.get("spec") or {}).get("containers") or ():
        if container.get("name") == COMPUTE_CONTAINER:
            container["command"] = ["/bin/bash", "-c", "echo", "bound PVCs"]
            container.pop("args", None)
    return result


def pod_condition(pod: Pod, type_: str) -> Mapping[str, Any] | None:
    for condition in _status(pod).get("conditions") or []:
        if condition.get("type") == type_:
            return condition  # type: ignore[no-any-return]
    return None


def _all_container_statuses(pod: Pod) -> Iterator[Mapping[str, Any]]:
    yield from _status(pod).get("initContainerStatuses") or []
    yield from _container_statuses(pod)


def image_pull_error(pod: Pod) -> tuple[str, str] | None:
    """``(reason, message)`` of the first container waiting on ErrImagePull or ImagePullBackOff."""
    for status in _all_container_statuses(pod):
        waiting = (status.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason") in (ERR_IMAGE_PULL_REASON, IMAGE_PULL_BACK_OFF_REASON):
            return str(waiting["reason"]), str(waiting.get("message") or "")
    return None


def compute_container(pod: Pod) -> Mapping[str, Any] | None:
    """The launcher pod's ``compute`` container, as its spec has it."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        if container.get("name") == COMPUTE_CONTAINER:
            return container  # type: ignore[no-any-return]
    return None


def compute_image(pod: Pod) -> str:
    container = compute_container(pod)
    return str(container.get("image") or "") if container is not None else ""


def all_containers_terminated(pod: Pod) -> bool:
    statuses = _container_statuses(pod)
    return bool(statuses) and all((s.get("state") or {}).get("terminated") is not None for s in statuses)
