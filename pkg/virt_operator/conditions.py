"""The KubeVirt CR's status conditions, with KubeVirt's reasons and messages (``virt-operator/util``).

Each function edits a status dict in place, as KubeVirt's ``UpdateConditions*`` edit the CR; timestamps
are filled afterwards by :func:`stamp_times` against the status the CR had before the sync.
"""

from __future__ import annotations

from kubevirt_api.core.v1.kubevirt import KubeVirtConditionType
from kubevirt_api.view import JSON

FINALIZER = "foregroundDeleteKubeVirt"
REASON_EXISTING = "ExistingDeployment"
REASON_FAILED = "DeploymentFailed"
REASON_DELETION_FAILED = "DeletionFailed"
REASON_CREATED = "AllResourcesCreated"
REASON_READY = "AllComponentsReady"
REASON_DEPLOYING = "DeploymentInProgress"
REASON_UPDATING = "UpdateInProgress"
REASON_DELETING = "DeletionInProgress"

AVAILABLE = KubeVirtConditionType.AVAILABLE
PROGRESSING = KubeVirtConditionType.PROGRESSING
DEGRADED = KubeVirtConditionType.DEGRADED
CREATED = KubeVirtConditionType.CREATED
SYNCHRONIZED = KubeVirtConditionType.SYNCHRONIZED


def _set(status: JSON, kind: str, value: bool, reason: str, message: str) -> None:
    conditions: list[JSON] = status.setdefault("conditions", [])
    for condition in conditions:
        if condition.get("type") == kind:
            condition.update(status=str(value), reason=reason, message=message)
            return
    conditions.append({"type": kind, "status": str(value), "reason": reason, "message": message})


def _remove(status: JSON, kind: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != kind]


def _three(
    status: JSON, available: bool, progressing: bool, degraded: bool, reason: str, message: str
) -> None:
    _set(status, AVAILABLE, available, reason, message)
    _set(status, PROGRESSING, progressing, reason, message)
    _set(status, DEGRADED, degraded, reason, message)


def deploying(status: JSON) -> None:
    _remove(status, SYNCHRONIZED)
    message = (
        f"Deploying version {status.get('targetKubeVirtVersion', '')} "
        f"with registry {status.get('targetKubeVirtRegistry', '')}"
    )
    _three(status, False, True, False, REASON_DEPLOYING, message)


def updating(status: JSON) -> None:
    _remove(status, CREATED)
    _remove(status, SYNCHRONIZED)
    message = (
        f"Transitioning from previous version {status.get('observedKubeVirtVersion', '')} "
        f"with registry {status.get('observedKubeVirtRegistry', '')} "
        f"to target version {status.get('targetKubeVirtVersion', '')} "
        f"using registry {status.get('targetKubeVirtRegistry', '')}"
    )
    _three(status, True, True, True, REASON_UPDATING, message)


def created(status: JSON) -> None:
    _set(status, CREATED, True, REASON_CREATED, "All resources were created.")


def available(status: JSON) -> None:
    _three(status, True, False, False, REASON_READY, "All components are ready.")


def failed_exists(status: JSON) -> None:
    _set(status, SYNCHRONIZED, False, REASON_EXISTING, "There is an active KubeVirt deployment")


def failed_error(status: JSON, error: str) -> None:
    message = f"An error occurred during deployment: {error}"
    _set(status, SYNCHRONIZED, False, REASON_FAILED, message)
    _three(status, False, False, True, REASON_FAILED, message)


def deleting(status: JSON) -> None:
    _remove(status, CREATED)
    _remove(status, SYNCHRONIZED)
    _three(status, False, False, True, REASON_DELETING, "Deletion was triggered")


def deletion_failed(status: JSON, error: str) -> None:
    _set(status, SYNCHRONIZED, False, REASON_DELETION_FAILED, f"An error occurred during deletion: {error}")


def stamp_times(before: JSON, after: JSON, now: str) -> None:
    """A changed condition gets new probe and transition times, an unchanged one keeps its own."""
    old = {c.get("type"): c for c in before.get("conditions") or []}
    for condition in after.get("conditions") or []:
        previous = old.get(condition["type"])
        same = previous is not None and all(
            previous.get(field) == condition.get(field) for field in ("status", "reason", "message")
        )
        if same:
            assert previous is not None
            for field in ("lastProbeTime", "lastTransitionTime"):
                if field in previous:
                    condition[field] = previous[field]
        else:
            condition["lastProbeTime"] = now
            condition["lastTransitionTime"] = now


def is_updating(status: JSON) -> bool:
    """An installed deployment exists and the target differs from it."""
    observed = status.get("observedDeploymentID")
    return bool(observed) and observed != status.get("targetDeploymentID")
