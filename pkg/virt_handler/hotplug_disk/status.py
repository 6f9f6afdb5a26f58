"""The phases of hotplugged volumes that virt-handler writes (KubeVirt's ``updateHotplugVolumeStatus``).

virt-controller moves a hotplugged volume's ``volumeStatus`` entry up to ``AttachedToNode`` (its attachment
pod runs) and down through ``Detaching`` once it left the spec; the handler takes it on from there:

- ``MountedToPod`` once its target is in the launcher pod and the volume is still in the spec (from
  ``Pending``, ``Bound`` or ``AttachedToNode``): the launcher may now attach it;
- ``Ready`` as soon as the domain has its disk (the entry's ``target``);
- ``UnMountedFromPod`` once a volume that left the spec is out of the launcher pod and out of the domain
  (from ``Ready``, ``MountedToPod`` or ``AttachedToNode``): virt-controller may now delete its claim's
  attachment pod, and drops the entry when that pod is gone. The handler never drops an entry itself.

Each phase change comes with KubeVirt's reason and message, and an event saying the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubevirt_api.core.v1 import VolumePhase
from kubevirt_api.view import JSON

VOLUME_MOUNTED_TO_POD_REASON = "VolumeMountedToPod"
VOLUME_UNMOUNTED_FROM_POD_REASON = "VolumeUnMountedFromPod"
VOLUME_READY_REASON = "VolumeReady"
HOTPLUG_FAILED_REASON = "HotplugFailed"  # a warning event: a claim's disk.img is missing

_MAY_BECOME_MOUNTED = (
    VolumePhase.VOLUME_BOUND,
    VolumePhase.VOLUME_PENDING,
    VolumePhase.HOTPLUG_VOLUME_ATTACHED_TO_NODE,
)
_MAY_BECOME_UNMOUNTED = (
    VolumePhase.VOLUME_READY,
    VolumePhase.HOTPLUG_VOLUME_MOUNTED,
    VolumePhase.HOTPLUG_VOLUME_ATTACHED_TO_NODE,
)


def _hotplug_entries(status: Mapping[str, Any]) -> list[JSON]:
    return [
        entry
        for entry in status.get("volumeStatus") or []
        if isinstance(entry, dict) and entry.get("hotplugVolume") is not None
    ]


def _spec_volumes(vmi: Mapping[str, Any]) -> set[str]:
    return {str(volume.get("name")) for volume in (vmi.get("spec") or {}).get("volumes") or []}


def _set(entry: JSON, phase: str, reason: str, message: str) -> tuple[str, str] | None:
    changed = entry.get("phase") != phase
    entry.update(phase=phase, reason=reason, message=message)
    return (reason, message) if changed else None


def update_hotplug_volumes(vmi: JSON, mounted: frozenset[str] | None) -> list[tuple[str, str]]:
    """Sets the handler's phases of ``vmi``'s hotplugged volumes, in place; the ``(reason, message)`` of
    each phase that changed, for its event.

    The entries' ``target`` must already say what the domain has (:func:`..status.update_volume_targets`).
    ``mounted`` names the volumes whose target is in the launcher pod; None when this sync did not look,
    which leaves every phase but ``Ready`` as it is.
    """
    spec = _spec_volumes(vmi)
    events = []
    for entry in _hotplug_entries(vmi.get("status") or {}):
        name = str(entry.get("name"))
        phase = entry.get("phase")
        if entry.get("target"):
            change = _set(
                entry,
                VolumePhase.VOLUME_READY,
                VOLUME_READY_REASON,
                f"Successfully attach hotplugged volume {name} to VM",
            )
        elif mounted is None:
            change = None
        elif name in mounted:
            if name not in spec or phase not in _MAY_BECOME_MOUNTED:
                continue
            change = _set(
                entry,
                VolumePhase.HOTPLUG_VOLUME_MOUNTED,
                VOLUME_MOUNTED_TO_POD_REASON,
                f"Volume {name} has been mounted in virt-launcher pod",
            )
        else:
            if name in spec or phase not in _MAY_BECOME_UNMOUNTED:
                continue
            change = _set(
                entry,
                VolumePhase.HOTPLUG_VOLUME_UN_MOUNTED,
                VOLUME_UNMOUNTED_FROM_POD_REASON,
                f"Volume {name} has been unmounted from virt-launcher pod",
            )
        if change is not None:
            events.append(change)
    return events


def would_change(vmi: Mapping[str, Any], mounted: frozenset[str] | None) -> bool:
    """Whether :func:`update_hotplug_volumes` would change any phase (targets taken as written)."""
    entries = [dict(entry) for entry in _hotplug_entries(vmi.get("status") or {})]
    probe: JSON = {"spec": vmi.get("spec") or {}, "status": {"volumeStatus": entries}}
    return bool(update_hotplug_volumes(probe, mounted))


def needs_refresh(vmi: Mapping[str, Any], domain_disks: set[str]) -> bool:
    """Whether a hotplugged volume has no disk in the domain yet: KubeVirt looks again within a second."""
    return any(
        str(entry.get("name")) not in domain_disks for entry in _hotplug_entries(vmi.get("status") or {})
    )


def hotplug_volumes_ready(vmi: Mapping[str, Any]) -> bool:
    """KubeVirt's ``hotplugVolumesReady``: a VMI starting with hotpluggable volumes waits until each
    hotplugged entry is ``MountedToPod`` or ``Ready``, so that its domain is defined with them."""
    volumes = (vmi.get("spec") or {}).get("volumes") or []
    if not any(_hotpluggable(volume) for volume in volumes):
        return True
    status = vmi.get("status") or {}
    if not status.get("volumeStatus"):
        return False
    ready = (VolumePhase.VOLUME_READY, VolumePhase.HOTPLUG_VOLUME_MOUNTED)
    return all(entry.get("phase") in ready for entry in _hotplug_entries(status))


def _hotpluggable(volume: Mapping[str, Any]) -> bool:
    """KubeVirt's ``IsHotplugVolume``: a claim, DataVolume or memory dump marked ``hotpluggable``."""
    return any(
        isinstance(source := volume.get(kind), dict) and source.get("hotpluggable") is True
        for kind in ("persistentVolumeClaim", "dataVolume", "memoryDump")
    )
