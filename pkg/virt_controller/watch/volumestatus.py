"""``status.volumeStatus`` as the VMI controller writes it (KubeVirt's ``updateVolumeStatus``,
``pkg/virt-controller/watch/vmi/storage.go``).

Every volume of the VMI's spec has one entry, sorted by name. An entry already in the status is carried
over as it is (virt-handler's ``target``, ``phase``, ``size`` and the like stay), so only what the
controller owns changes:

- ``persistentVolumeClaimInfo`` of a PersistentVolumeClaim, DataVolume or memory-dump volume is rebuilt
  from the claim in the PVC informer on every pass (an expanded claim's new ``capacity`` shows up); while
  the claim is not in the cache the entry keeps what it had, or has none. Ephemeral volumes get no claim
  information here, as in KubeVirt.
- ``filesystemOverhead`` is CDI's for the claim's storage class (``0`` for a block claim) when exactly one
  CDI is installed, and KubeVirt's default ``0.055`` when there is none.
- A claim volume the launcher pod does not mount is a hotplugged one: it gets ``hotplugVolume`` and,
  while no attachment pod carries it (this controller makes none yet), a phase from its claim.

Entries of volumes that left the spec are dropped: KubeVirt keeps one only while a hotplug attachment
pod for it exists, and there are none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from kubevirt.virt_controller.watch.common import SyncError
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.volumes import (
    DomainMemoryDumpInfo,
    HotplugVolumeStatus,
    PersistentVolumeClaimInfo,
    Volume,
    VolumeStatus,
)
from kubevirt_api.view import View

PvcFinder = Callable[[str], Mapping[str, Any] | None]

# KubeVirt's storagetypes.DefaultFSOverhead, used when CDI is not installed (or more than once).
DEFAULT_FS_OVERHEAD: Final = "0.055"
# The CDIConfig CDI keeps its settings in (storagetypes.ConfigName).
CDI_CONFIG_NAME: Final = "config"
FAILED_FS_OVERHEAD_REASON: Final = "FailedFilesystemOverhead"

VOLUME_PENDING: Final = "Pending"
VOLUME_BOUND: Final = "Bound"
VOLUME_READY: Final = "Ready"
FAILED_PVC_NOT_FOUND_REASON: Final = "FailedPvcNotFound"
PVC_NOT_READY_REASON: Final = "PVCNotReady"


def claim_name(volume: Volume) -> str:
    """The claim behind a volume (``storagetypes.PVCNameFromVirtVolume``): a DataVolume's PVC has its
    name; empty for volumes without one (ephemeral volumes included)."""
    if volume.data_volume is not None:
        return volume.data_volume.name
    if volume.persistent_volume_claim is not None:
        return volume.persistent_volume_claim.claim_name
    if volume.memory_dump is not None:
        return volume.memory_dump.claim_name
    return ""


def is_preallocated(annotations: Mapping[str, Any] | None) -> bool:
    """CDI's preallocation (or thick-provisioning) annotation, whatever its prefix
    (``storagetypes.IsPreallocated``)."""
    for key, value in (annotations or {}).items():
        if value == "true" and ("/storage.preallocation" in key or "/storage.thick-provisioned" in key):
            return True
    return False


class FilesystemOverhead:
    """The share of a filesystem claim its disk image may not use (KubeVirt's ``getFilesystemOverhead``),
    from the CDI and CDIConfig informers; both absent is KubeVirt's dummy informers when CDI is not
    installed."""

    def __init__(
        self,
        cdis: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
        cdi_config: Callable[[str], Mapping[str, Any] | None] | None = None,
    ) -> None:
        self._cdis = cdis
        self._cdi_config = cdi_config

    def __call__(self, pvc: Mapping[str, Any]) -> str:
        if self._cdis is None or len(self._cdis()) != 1:
            return DEFAULT_FS_OVERHEAD
        config = self._cdi_config(CDI_CONFIG_NAME) if self._cdi_config is not None else None
        if config is None:
            raise SyncError(
                "Failed to find CDIConfig but CDI exists", FAILED_FS_OVERHEAD_REASON, requeue=True
            )
        spec = View.of(pvc).object("spec")
        if spec.get("volumeMode") == "Block":
            return "0"
        overhead = View.of(config).object("status").optional_object("filesystemOverhead")
        if overhead is None:
            raise SyncError("CDI config not initialized", FAILED_FS_OVERHEAD_REASON, requeue=True)
        storage_class = spec.optional_string("storageClassName")
        per_class = overhead.object("storageClass")
        if storage_class is not None and per_class.has(storage_class):
            return str(per_class.get(storage_class))
        return str(overhead.get("global") or "")


def claim_info(pvc: Mapping[str, Any], filesystem_overhead: str) -> PersistentVolumeClaimInfo:
    """``persistentVolumeClaimInfo`` as KubeVirt fills it from the claim (empty fields left out, as Go's
    ``omitempty`` does)."""
    claim = View.of(pvc)
    meta, spec, status = claim.object("metadata"), claim.object("spec"), claim.object("status")
    return PersistentVolumeClaimInfo(
        claim_name=meta.string("name") or None,
        access_modes=spec.strings("accessModes") or None,
        volume_mode=spec.optional_string("volumeMode"),
        capacity=dict(status.object("capacity").data) or None,
        requests=dict(spec.object("resources").object("requests").data) or None,
        preallocated=True if is_preallocated(meta.string_map("annotations")) else None,
        filesystem_overhead=filesystem_overhead,
    )


def hotplug_volume_names(vmi: VirtualMachineInstance, pod: Mapping[str, Any]) -> set[str]:
    """Claim volumes the launcher pod does not mount (``controller.GetHotplugVolumes``)."""
    mounted = {volume.get("name") for volume in View.of(pod).object("spec").items("volumes")}
    return {
        volume.name
        for volume in vmi.spec.volumes or []
        if volume.name not in mounted
        and (
            volume.data_volume is not None
            or volume.persistent_volume_claim is not None
            or volume.memory_dump is not None
        )
    }


def volume_statuses(
    vmi: VirtualMachineInstance,
    pod: Mapping[str, Any],
    find_pvc: PvcFinder,
    filesystem_overhead: Callable[[Mapping[str, Any]], str],
) -> list[VolumeStatus]:
    """The VMI's new ``status.volumeStatus``, from its old one, its spec, its launcher pod and the claims."""
    old = {entry.name: entry for entry in (vmi.status.volume_status if vmi.status else None) or []}
    hotplugged = hotplug_volume_names(vmi, pod)
    statuses: list[VolumeStatus] = []
    for volume in vmi.spec.volumes or []:
        existing = old.get(volume.name)
        status = (
            existing.model_copy(deep=True)
            if existing is not None
            else VolumeStatus(name=volume.name, target="")
        )
        if volume.name in hotplugged:
            _hotplug_without_attachment_pod(status, volume, find_pvc)
        name = claim_name(volume)
        if name:
            pvc = find_pvc(name)
            if pvc is not None:
                status.persistent_volume_claim_info = claim_info(pvc, filesystem_overhead(pvc))
        statuses.append(status)
    statuses.sort(key=lambda entry: entry.name)
    return statuses


def _hotplug_without_attachment_pod(status: VolumeStatus, volume: Volume, find_pvc: PvcFinder) -> None:
    """KubeVirt's hotplug branch when no attachment pod exists: the phase follows the claim."""
    if status.hotplug_volume is None:
        status.hotplug_volume = HotplugVolumeStatus()
    if volume.memory_dump is not None and status.memory_dump_volume is None:
        status.memory_dump_volume = DomainMemoryDumpInfo(claim_name=volume.name)
    if status.phase == VOLUME_READY:
        return
    status.hotplug_volume.attach_pod_uid = None
    status.phase, status.reason, status.message = _claim_phase(claim_name(volume), find_pvc)


def _claim_phase(name: str, find_pvc: PvcFinder) -> tuple[str, str, str]:
    """``getVolumePhaseMessageReason``."""
    pvc = find_pvc(name)
    if pvc is None:
        return VOLUME_PENDING, FAILED_PVC_NOT_FOUND_REASON, f"PVC {name} not found"
    phase = View.of(pvc).object("status").string("phase")
    if phase == "Pending":
        return VOLUME_PENDING, PVC_NOT_READY_REASON, "PVC is in phase ClaimPending"
    if phase == "Bound":
        return VOLUME_BOUND, PVC_NOT_READY_REASON, "PVC is in phase Bound"
    return VOLUME_PENDING, PVC_NOT_READY_REASON, "PVC is in phase Lost"


def referenced_claims(vmi: VirtualMachineInstance) -> Iterable[str]:
    """The claims KubeVirt's ``pvc`` and ``dv`` VMI indexes find the VMI by (memory dumps not included)."""
    for volume in vmi.spec.volumes or []:
        if volume.persistent_volume_claim is not None:
            yield volume.persistent_volume_claim.claim_name
        if volume.data_volume is not None:
            yield volume.data_volume.name
