"""The part of an export's status every source shares: its service, its ``Ready`` condition and phase
from the exporter pod, and the links the pod serves once ready (KubeVirt's
``updateCommonVMExportStatusFields``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubevirt_api.export.v1beta1.types import PHASE_PENDING, PHASE_READY, PHASE_TERMINATED
from kubevirt_api.view import JSON

from .conditions import (
    IN_USE,
    POD_COMPLETED,
    POD_PENDING,
    POD_READY,
    READY,
    UNKNOWN,
    condition,
    update_condition,
)
from .links import EXTERNAL, INTERNAL, VolumeName, go_path_join, internal_host, links
from .volumes import SourceVolumes


@dataclass(frozen=True)
class LinkTargets:
    """Where the export can be reached: the export CA, and the proxy's host and certificate ("" for no
    external access)."""

    internal_ca: str
    external_host: str
    external_cert: str
    external_path: str


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """Running, with every container ready."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return all(container.get("ready") for container in status.get("containerStatuses") or ())


def _pod_state(pod: Mapping[str, Any] | None, sources: SourceVolumes) -> tuple[bool, str, str, str]:
    """(ready, reason, message, phase) of the export."""
    if pod is None:
        return False, IN_USE, sources.message, PHASE_PENDING
    if pod_ready(pod):
        return True, POD_READY, "", PHASE_READY
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Succeeded":
        return False, POD_COMPLETED, "", PHASE_TERMINATED
    if phase == "Pending":
        return False, POD_PENDING, "", PHASE_PENDING
    return False, UNKNOWN, "", PHASE_PENDING


def common_status(
    export: Mapping[str, Any],
    pod: Mapping[str, Any] | None,
    service: Mapping[str, Any],
    sources: SourceVolumes,
    targets: LinkTargets,
    volume_name: VolumeName,
    now: datetime,
) -> JSON:
    """The export's status with the service, ``Ready`` and phase, and the links of a ready pod."""
    status: JSON = copy.deepcopy(dict(export.get("status") or {}))
    status["serviceName"] = service["metadata"]["name"]
    status["links"] = {}
    ready, reason, message, phase = _pod_state(pod, sources)
    status["conditions"] = update_condition(
        status.get("conditions"), condition(READY, ready, reason, message, now)
    )
    status["phase"] = phase
    if ready:
        internal = links(
            sources.volumes, pod, export, internal_host(service), INTERNAL, targets.internal_ca, volume_name
        )
        if internal is not None:
            status["links"]["internal"] = internal
        if targets.external_host:
            external = links(
                sources.volumes,
                pod,
                export,
                go_path_join(targets.external_host, targets.external_path),
                EXTERNAL,
                targets.external_cert,
                volume_name,
            )
            if external is not None:
                status["links"]["external"] = external
    return status
