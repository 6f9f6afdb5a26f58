"""Which VolumeSnapshotClass snapshots a claim, and whether each volume of a VM can be snapshotted.

KubeVirt picks the class whose driver is the claim's StorageClass provisioner; of several, the one
marked as the default. (CDI's StorageProfile can name a class too; without CDI there is none.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kubevirt.controller import Store, key_for
from kubevirt.virt_controller.watch.volumestatus import claim_name
from kubevirt_api.core.v1.volumes import Volume
from kubevirt_api.view import JSON

from .common import DEFAULT_SNAPSHOT_CLASS_ANNOTATION

# The VolumeSnapshotClasses known now, or None while the CRD is not installed.
SnapshotClasses = Callable[[], Store[JSON] | None]


class SnapshotClassError(Exception):
    """The snapshot class of a StorageClass cannot be told (its text is the status reason KubeVirt shows)."""


def snapshot_class_for(storage_class: str, storage_classes: Store[JSON], classes: Iterable[JSON]) -> str:
    """The VolumeSnapshotClass for claims of ``storage_class``; "" when there is none."""
    found = storage_classes.get_by_key(storage_class) if storage_class else None
    if found is None:
        return ""
    driver = found.get("provisioner")
    matching = [vsc for vsc in classes if vsc.get("driver") == driver]
    if len(matching) == 1:
        return str(matching[0]["metadata"]["name"])
    for vsc in matching:
        if DEFAULT_SNAPSHOT_CLASS_ANNOTATION in ((vsc.get("metadata") or {}).get("annotations") or {}):
            return str(vsc["metadata"]["name"])
    if matching:
        raise SnapshotClassError(f"{len(matching)} matching VolumeSnapshotClasses for {storage_class}")
    return ""


def claim_storage_class(pvcs: Store[JSON], namespace: str, claim: str) -> str:
    """The claim's StorageClass name ("" when it names none); raises when the claim is not known."""
    pvc = pvcs.get_by_key(key_for(namespace, claim))
    if pvc is None:
        raise SnapshotClassError("PVC not found")
    return str((pvc.get("spec") or {}).get("storageClassName") or "")


def volume_snapshot_statuses(
    vm: JSON, pvcs: Store[JSON], storage_classes: Store[JSON], classes: Iterable[JSON]
) -> list[JSON]:
    """``status.volumeSnapshotStatuses``: one entry per volume of the VM's template, in order."""
    namespace = vm["metadata"].get("namespace") or ""
    volumes = ((((vm.get("spec") or {}).get("template") or {}).get("spec") or {}).get("volumes")) or []
    known = list(classes)
    return [_volume_status(volume, namespace, pvcs, storage_classes, known) for volume in volumes]


def volume_claim(volume: JSON) -> str:
    """The claim behind a volume that can be snapshotted (a DataVolume's has its name); "" otherwise:
    the VM controller's rule (``PVCNameFromVirtVolume``), on a volume as JSON."""
    try:
        return claim_name(Volume.from_dict(volume))
    except ValueError:
        return ""  # not a volume at all: nothing to snapshot


def _volume_status(
    volume: JSON, namespace: str, pvcs: Store[JSON], storage_classes: Store[JSON], classes: list[JSON]
) -> JSON:
    name = volume.get("name", "")
    claim = volume_claim(volume)
    if not claim:
        return _disabled(name, f"Snapshot is not supported for this volumeSource type [{name}]")
    try:
        storage_class = claim_storage_class(pvcs, namespace, claim)
        snapshot_class = snapshot_class_for(storage_class, storage_classes, classes)
    except SnapshotClassError as err:
        return _disabled(name, str(err))
    if not snapshot_class:
        reason = (
            "No VolumeSnapshotClass: Volume snapshots are not configured for this StorageClass "
            f"[{storage_class}] [{name}]"
        )
        return _disabled(name, reason)
    return {"name": name, "enabled": True}


def _disabled(name: str, reason: str) -> dict[str, Any]:
    return {"name": name, "enabled": False, "reason": reason}
