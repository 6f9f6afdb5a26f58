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
- A claim volume the launcher pod does not mount is a hotplugged one: it gets ``hotplugVolume``. While no
  attachment pod carries the whole hotplugged set its phase follows the claim (``Pending``/``Bound``,
  reason ``PVCNotReady``), unless virt-handler already made it ``Ready``. Once one does, the entry names
  that pod (``attachPodName``; ``attachPodUID`` only while its container is ready) and a phase the
  controller set (empty, ``Pending``, ``Bound``) becomes ``AttachedToNode``; the phases virt-handler owns
  from there on (``MountedToPod``, ``Ready``, ``UnMountedFromPod``, …) are left alone.

An entry whose volume left the spec stays while an attachment pod of the launcher still carries that
volume (``Ready`` and ``MountedToPod`` kept, any other phase ``Detaching``, with the deletion's reason
once the pod is going), and is dropped with the last such pod.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubevirt.virt_controller.services.hotplug_pod import claim_name_of
from kubevirt.virt_controller.watch.common import SyncError
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.volumes import (
    DomainMemoryDumpInfo,
    HotplugVolumeStatus,
    PersistentVolumeClaimInfo,
    Volume,
    VolumePhase,
    VolumeStatus,
)
from kubevirt_api.view import View

PvcFinder = Callable[[str], Mapping[str, Any] | None]
# Records a Normal event on the VMI: (reason, message).
EventRecord = Callable[[str, str], None]

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
SUCCESSFUL_CREATE_POD_REASON: Final = "SuccessfulCreate"
SUCCESSFUL_DELETE_POD_REASON: Final = "SuccessfulDelete"
# The phases the controller itself sets on a hotplugged volume; only from these does it move it on.
_CONTROLLER_PHASES: Final = ("", VolumePhase.VOLUME_BOUND, VolumePhase.VOLUME_PENDING)
# What virt-handler reports while the volume is in use in the launcher pod.
_MOUNTED_PHASES: Final = (VolumePhase.VOLUME_READY, VolumePhase.HOTPLUG_VOLUME_MOUNTED)


@dataclass(frozen=True)
class Attachments:
    """The hotplug attachment pods of the launcher pod (plain JSON), and the one that carries exactly the
    VMI's hotplugged volumes (``getActiveAndOldAttachmentPods``), if any."""

    active: Mapping[str, Any] | None = None
    pods: Sequence[Mapping[str, Any]] = field(default_factory=tuple)


def claim_name(volume: Volume) -> str:
    """The claim behind a volume (``storagetypes.PVCNameFromVirtVolume``): a DataVolume's PVC has its
    name; empty for volumes without one (ephemeral volumes included)."""
    return claim_name_of(volume)


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


def hotplug_volumes(vmi: VirtualMachineInstance, pod: Mapping[str, Any]) -> list[Volume]:
    """Claim volumes the launcher pod does not mount, in spec order (``controller.GetHotplugVolumes``)."""
    mounted = {volume.get("name") for volume in View.of(pod).object("spec").items("volumes")}
    return [
        volume
        for volume in vmi.spec.volumes or []
        if volume.name not in mounted
        and (
            volume.data_volume is not None
            or volume.persistent_volume_claim is not None
            or volume.memory_dump is not None
        )
    ]


def hotplug_volume_names(vmi: VirtualMachineInstance, pod: Mapping[str, Any]) -> set[str]:
    return {volume.name for volume in hotplug_volumes(vmi, pod)}


def vmi_has_hotplug_volumes(vmi: VirtualMachineInstance) -> bool:
    """A volume status marked hotplugged, or a hotpluggable claim or DataVolume in the spec
    (``controller.VMIHasHotplugVolumes``; a memory dump alone does not count)."""
    statuses = (vmi.status.volume_status if vmi.status is not None else None) or []
    if any(status.hotplug_volume is not None for status in statuses):
        return True
    return any(
        (volume.data_volume is not None and bool(volume.data_volume.hotpluggable))
        or (volume.persistent_volume_claim is not None and bool(volume.persistent_volume_claim.hotpluggable))
        for volume in vmi.spec.volumes or []
    )


def volume_statuses(
    vmi: VirtualMachineInstance,
    pod: Mapping[str, Any],
    find_pvc: PvcFinder,
    filesystem_overhead: Callable[[Mapping[str, Any]], str],
    attachments: Attachments = Attachments(),
    record: EventRecord | None = None,
) -> list[VolumeStatus]:
    """The VMI's new ``status.volumeStatus``, from its old one, its spec, its launcher pod, that pod's
    attachment pods and the claims. ``record`` is told of each volume newly attached to the node and
    each attachment pod being deleted."""
    old = {entry.name: entry for entry in (vmi.status.volume_status if vmi.status else None) or []}
    hotplugged = hotplug_volume_names(vmi, pod)
    statuses: list[VolumeStatus] = []
    for volume in vmi.spec.volumes or []:
        existing = old.pop(volume.name, None)
        status = (
            existing.model_copy(deep=True)
            if existing is not None
            else VolumeStatus(name=volume.name, target="")
        )
        if volume.name in hotplugged:
            _hotplugged(status, volume, find_pvc, attachments.active, record)
        name = claim_name(volume)
        if name:
            pvc = find_pvc(name)
            if pvc is not None:
                status.persistent_volume_claim_info = claim_info(pvc, filesystem_overhead(pvc))
        statuses.append(status)
    for entry in old.values():
        unplugged = _unplugged(entry, attachments.pods, record)
        if unplugged is not None:
            statuses.append(unplugged)
    statuses.sort(key=lambda entry: entry.name)
    return statuses


def _hotplugged(
    status: VolumeStatus,
    volume: Volume,
    find_pvc: PvcFinder,
    attachment: Mapping[str, Any] | None,
    record: EventRecord | None,
) -> None:
    if status.hotplug_volume is None:
        status.hotplug_volume = HotplugVolumeStatus()
    if volume.memory_dump is not None and status.memory_dump_volume is None:
        status.memory_dump_volume = DomainMemoryDumpInfo(claim_name=volume.name)
    if attachment is None:
        _hotplug_without_attachment_pod(status, volume, find_pvc)
        return
    meta = View.of(attachment).object("metadata")
    pod_name = meta.string("name")
    status.hotplug_volume.attach_pod_name = pod_name
    # virt-handler takes the claim from this pod's volumes only once its container is ready.
    status.hotplug_volume.attach_pod_uid = (
        (meta.string("uid") or None) if _container_ready(attachment) else None
    )
    if (status.phase or "") in _CONTROLLER_PHASES:
        status.phase = VolumePhase.HOTPLUG_VOLUME_ATTACHED_TO_NODE
        status.reason = SUCCESSFUL_CREATE_POD_REASON
        status.message = f"Created hotplug attachment pod {pod_name}, for volume {volume.name}"
        if record is not None:
            record(status.reason, status.message)


def _unplugged(
    entry: VolumeStatus, attachment_pods: Sequence[Mapping[str, Any]], record: EventRecord | None
) -> VolumeStatus | None:
    """The entry of a volume no longer in the spec while an attachment pod still carries it, else None."""
    pod = next((p for p in attachment_pods if entry.name in _pod_volume_names(p)), None)
    if pod is None:
        return None
    status = entry.model_copy(deep=True)
    meta = View.of(pod).object("metadata")
    status.hotplug_volume = HotplugVolumeStatus(
        attach_pod_name=meta.string("name") or None, attach_pod_uid=meta.string("uid") or None
    )
    if status.phase not in _MOUNTED_PHASES:
        status.phase = VolumePhase.HOTPLUG_VOLUME_DETACHING
        if meta.get("deletionTimestamp") is not None:
            status.reason = SUCCESSFUL_DELETE_POD_REASON
            status.message = f"Deleted hotplug attachment pod {meta.string('name')}, for volume {entry.name}"
            if record is not None:
                record(status.reason, status.message)
    return status


def _pod_volume_names(pod: Mapping[str, Any]) -> set[str]:
    return {volume.string("name") for volume in View.of(pod).object("spec").items("volumes")}


def _container_ready(pod: Mapping[str, Any]) -> bool:
    """KubeVirt's test: the pod's one container reports ready."""
    statuses = View.of(pod).object("status").items("containerStatuses")
    return len(statuses) == 1 and statuses[0].boolean("ready")


def _hotplug_without_attachment_pod(status: VolumeStatus, volume: Volume, find_pvc: PvcFinder) -> None:
    """KubeVirt's hotplug branch when no attachment pod carries the hotplugged volumes: the phase
    follows the claim, unless the volume is Ready already."""
    assert status.hotplug_volume is not None
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
