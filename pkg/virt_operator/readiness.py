"""When the installed workloads count as ready (KubeVirt's ``util/readycheck.go``), judged from the
Deployment and DaemonSet status their controllers write: the current generation rolled out to every
replica, none left of an older one, and at least one ready."""

from __future__ import annotations

from kubevirt_api.view import JSON


def _observed(obj: JSON) -> bool:
    generation = (obj.get("metadata") or {}).get("generation", 0)
    return bool((obj.get("status") or {}).get("observedGeneration", 0) >= generation)


def deployment_ready(deployment: JSON | None) -> bool:
    if deployment is None or not _observed(deployment):
        return False
    status = deployment.get("status") or {}
    replicas = status.get("replicas", 0)
    return bool(
        replicas > 0 and status.get("readyReplicas", 0) > 0 and status.get("updatedReplicas", 0) == replicas
    )


def daemonset_ready(daemonset: JSON | None) -> bool:
    if daemonset is None or not _observed(daemonset):
        return False
    status = daemonset.get("status") or {}
    desired = status.get("desiredNumberScheduled", 0)
    return bool(
        desired > 0
        and status.get("numberReady", 0) == desired
        and status.get("updatedNumberScheduled", 0) == desired
    )


def workloads_ready(objects: list[JSON | None]) -> bool:
    """Every given Deployment and DaemonSet ready (a missing one is not)."""
    for obj in objects:
        if obj is None:
            return False
        ready = daemonset_ready(obj) if obj.get("kind") == "DaemonSet" else deployment_ready(obj)
        if not ready:
            return False
    return True
