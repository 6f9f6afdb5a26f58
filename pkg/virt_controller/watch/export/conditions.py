"""An export's conditions and reasons, its first status and its time to live (KubeVirt v1.6's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from kubevirt.log import get_logger
from kubevirt.service.durations import MICROSECOND, parse_go_duration
from kubevirt.virt_controller.watch.common import format_time, parse_time
from kubevirt_api.export.v1beta1.types import PHASE_PENDING
from kubevirt_api.view import JSON

# Condition types.
READY: Final = "Ready"
PVC_READY: Final = "PVCReady"
VOLUMES_CREATED: Final = "VolumesCreated"

# Reasons.
PVC_NOT_FOUND: Final = "PVCNotFound"
PVC_BOUND: Final = "PVCBound"
PVC_PENDING: Final = "PVCPending"
UNKNOWN: Final = "Unknown"
INITIALIZING: Final = "Initializing"
IN_USE: Final = "InUse"
POD_PENDING: Final = "PodPending"
POD_READY: Final = "PodReady"
POD_COMPLETED: Final = "PodCompleted"
VM_NO_VOLUMES: Final = "VMNoVolumes"
VMSNAPSHOT_NO_VOLUMES: Final = "VMSnapshotNoVolumes"
NOT_ALL_PVCS_CREATED: Final = "NotAllPVCsCreated"
ALL_PVCS_READY: Final = "AllPVCsReady"
NOT_ALL_PVCS_READY: Final = "NotAllPVCsReady"

# ``spec.ttlDuration`` when unset.
DEFAULT_TTL: Final = timedelta(hours=2)

_log = get_logger(controller="export")


def condition(type_: str, status: bool, reason: str, message: str, now: datetime) -> JSON:
    """A condition as KubeVirt writes it: no probe time, reason and message left out when empty."""
    written: JSON = {
        "type": type_,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": format_time(now),
    }
    if reason:
        written["reason"] = reason
    if message:
        written["message"] = message
    return written


def update_condition(conditions: Sequence[JSON] | None, new: JSON) -> list[JSON]:
    """``new`` replaces the condition of its type only when its status, reason or message differ (the
    transition time stays otherwise); a type not there yet is appended."""
    result = [dict(c) for c in conditions or ()]
    for index, current in enumerate(result):
        if current.get("type") == new["type"]:
            if any(current.get(field) != new.get(field) for field in ("status", "reason", "message")):
                result[index] = new
            return result
    result.append(new)
    return result


def ttl(export: Mapping[str, Any]) -> timedelta:
    text = (export.get("spec") or {}).get("ttlDuration")
    if text is None:
        return DEFAULT_TTL
    try:
        # Go's ParseDuration, as the admission webhook reads the field (and KubeVirt's API decodes it).
        return timedelta(microseconds=parse_go_duration(str(text)) // MICROSECOND)
    except ValueError as err:
        # Admission refuses such a value; one that slipped through gets KubeVirt's default.
        _log.warning("invalid spec.ttlDuration, using the default", reason=str(err))
        return DEFAULT_TTL


def expiration_time(export: Mapping[str, Any]) -> datetime:
    """When the export is removed: its creation plus its TTL."""
    created = (export.get("metadata") or {}).get("creationTimestamp")
    start = parse_time(created) if created else datetime.fromtimestamp(0).astimezone()
    return start + ttl(export)


def initial_status(export: Mapping[str, Any], now: datetime) -> JSON:
    return {
        "phase": PHASE_PENDING,
        "conditions": [
            condition(READY, False, INITIALIZING, "", now),
            condition(PVC_READY, False, UNKNOWN, "", now),
        ],
        "ttlExpirationTime": format_time(expiration_time(export)),
    }


def pvc_condition(pvcs: Sequence[Mapping[str, Any]], now: datetime) -> JSON:
    """The most severe claim phase: Lost over Pending over Bound."""
    phases = {(pvc.get("status") or {}).get("phase") for pvc in pvcs}
    if "Lost" in phases:
        return condition(PVC_READY, False, UNKNOWN, "", now)
    if "Pending" in phases:
        return condition(PVC_READY, False, PVC_PENDING, "", now)
    return condition(PVC_READY, True, PVC_BOUND, "", now)
