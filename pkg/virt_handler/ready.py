"""The VMI's ``Ready=True``, reported by virt-handler in the same write that first says Running.

In KubeVirt, virt-controller copies the launcher pod's Ready condition into the VMI once the VMI is
Running (``syncReadyConditionFromPod``), which costs a VMI write of its own right after virt-handler's
Running write. Its value is known here already: virt-controller hands a VMI over (Scheduled) only once
the pod's compute container runs and its other containers are ready, and has set the pod's readiness
gate (unpaused) before that, so the pod is Ready when the guest first runs, unless a readiness probe
still has to pass: the VMI's own ``readinessProbe`` (put on the compute container), or istio's proxy
(which need only run for the handover). Then only the pod can tell. The kubelet's ``Ready=True``
carries no reason and no message, and virt-controller compares conditions by type, status and reason,
so the condition written here is the one it would have written and it leaves it as it is.

virt-controller keeps owning ``Ready`` after that: a pod that goes NotReady, terminates or vanishes, a
pause (the readiness gate goes False) or a guest that stops make it write ``False`` as KubeVirt's does.
Nothing is set here for a paused guest, a VMI being deleted, or one with a readiness probe or istio.
"""

from __future__ import annotations

from kubevirt.network.istio import proxy_injection_enabled
from kubevirt.virt_handler.status_conditions import conditions_of, find_condition
from kubevirt_api.view import JSON

READY = "Ready"
PAUSED = "Paused"


def pod_readiness_known(vmi: JSON) -> bool:
    """Whether the launcher pod's readiness follows from the VMI being Running and unpaused."""
    if vmi["metadata"].get("deletionTimestamp") is not None:
        return False
    if (vmi.get("spec") or {}).get("readinessProbe") is not None:
        return False
    if proxy_injection_enabled(vmi["metadata"].get("annotations")):
        return False
    paused = find_condition(vmi.get("status") or {}, PAUSED)
    return paused is None or paused.get("status") != "True"


def set_ready_with_running(vmi: JSON, now: str) -> None:
    """Sets ``Ready=True`` (in place of any ``Ready`` condition, where it stood) as the pod's would be
    copied: no reason, no message, no probe time, changed ``now``; a no-op unless
    :func:`pod_readiness_known`."""
    if not pod_readiness_known(vmi):
        return
    status = vmi["status"]
    ready: JSON = {"type": READY, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
    conditions = conditions_of(status)
    for index, condition in enumerate(conditions):
        if condition.get("type") == READY:
            if condition.get("status") == "True":
                return  # already True: its transition time stays
            conditions[index] = ready
            break
    else:
        conditions.append(ready)
    status["conditions"] = conditions
