"""Exporting one PersistentVolumeClaim (``spec.source``: kind PersistentVolumeClaim, apiGroup "").

The claim is served once CDI populated it and no pod but the exporter mounts it; until then the export
waits (``InUse``) and looks again every few seconds. ``PVCReady`` tells the claim's phase.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubevirt.controller import Store, key_for
from kubevirt_api.view import JSON

from .conditions import PVC_NOT_FOUND, PVC_READY, condition, pvc_condition, update_condition
from .volumes import DataVolumeLookup, SourceVolumes, controlled_by, is_populated, pods_using


def source_name(export: Mapping[str, Any]) -> str:
    return str(((export.get("spec") or {}).get("source") or {}).get("name") or "")


def pvc_source_volumes(
    export: Mapping[str, Any], pvcs: Store[JSON], pods: Store[JSON], data_volumes: DataVolumeLookup
) -> SourceVolumes:
    namespace = str(export["metadata"].get("namespace") or "")
    name = source_name(export)
    pvc = pvcs.get_by_key(key_for(namespace, name))
    if pvc is None:
        return SourceVolumes(message=f"pvc {namespace}/{name} not found")
    if not is_populated(pvc, data_volumes):
        return SourceVolumes([pvc], message=f"pvc {namespace}/{name} is not populated")
    users = pods_using(pods, namespace, [name])
    in_use = any(not controlled_by(pod, export) for pod in users)
    message = f"pvc {namespace}/{name} is in use" if in_use else ""
    return SourceVolumes([pvc], in_use=in_use, populated=True, message=message)


def pvc_conditions(status: JSON, sources: SourceVolumes, now: datetime) -> None:
    """``PVCReady``: not found, or the claim's phase."""
    if not sources.volumes:
        new = condition(PVC_READY, False, PVC_NOT_FOUND, sources.message, now)
    else:
        new = pvc_condition(sources.volumes, now)
    status["conditions"] = update_condition(status.get("conditions"), new)
