"""The hotplug attachment pods of a VMI (KubeVirt's ``handleHotplugVolumes``,
``pkg/virt-controller/watch/vmi/volume-hotplug.go``).

The claims of hotplugged volumes (claim volumes the launcher pod does not mount) are attached to the
launcher's node by one attachment pod that mounts all of them, owned by the launcher pod. When the set
changes, a pod for the new set is made, and the old one is deleted once the new one runs, or at once when
no volume is left, but never while a volume removed from the VMI is still in use in the launcher pod
(``Ready`` or ``MountedToPod``). A volume is attached once its claim exists and, if a DataVolume made it,
that DataVolume succeeded (or waits for its populator); a plain claim does not need to be bound first:
the attachment pod is the consumer a ``WaitForFirstConsumer`` storage class waits for.

Pods are created and deleted under the VMI's pod expectations, as the launcher pod is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kubevirt.client import PODS, EventSink, KubeApi
from kubevirt.client.errors import NotFoundError
from kubevirt.controller import Store, UIDTrackingControllerExpectations
from kubevirt.log import get_logger
from kubevirt.virt_controller.services.errors import TemplateError
from kubevirt.virt_controller.watch import pods as podutil
from kubevirt.virt_controller.watch.common import SyncError, controlled_pods, describe_api_error
from kubevirt.virt_controller.watch.datavolumes import claim_readiness
from kubevirt.virt_controller.watch.volumestatus import claim_name, hotplug_volumes
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.volumes import Volume, VolumePhase
from kubevirt_api.view import JSON, View

Pod = Mapping[str, Any]
# A namespaced object (a claim, a DataVolume) by namespace and name, or None when it does not exist.
Finder = Callable[[str | None, str], Mapping[str, Any] | None]
RenderAttachmentPod = Callable[
    [Sequence[Volume], Pod, VirtualMachineInstance, Mapping[str, Mapping[str, Any]]], JSON
]

FAILED_CREATE_POD_REASON: Final = "FailedCreate"
SUCCESSFUL_CREATE_POD_REASON: Final = "SuccessfulCreate"
FAILED_DELETE_POD_REASON: Final = "FailedDelete"
SUCCESSFUL_DELETE_POD_REASON: Final = "SuccessfulDelete"
PVC_NOT_READY_REASON: Final = "PVCNotReady"
FAILED_HOTPLUG_SYNC_REASON: Final = "FailedHotplugSync"
# CDI's DataVolume phases in which the claim may be attached (IsSucceededOrPendingPopulation).
_IN_USE_PHASES: Final = (VolumePhase.VOLUME_READY, VolumePhase.HOTPLUG_VOLUME_MOUNTED)


def is_hotplug_volume(volume: Volume) -> bool:
    """A volume marked hotpluggable (``storagetypes.IsHotplugVolume``)."""
    return bool(
        (volume.persistent_volume_claim is not None and volume.persistent_volume_claim.hotpluggable)
        or (volume.data_volume is not None and volume.data_volume.hotpluggable)
        or (volume.memory_dump is not None and volume.memory_dump.hotpluggable)
    )


def attachment_pods(pods: Store[Any], launcher: Pod) -> list[Pod]:
    """The pods the launcher pod controls (``controller.AttachmentPods``)."""
    return controlled_pods(pods, podutil.pod_uid(launcher))


def claim_volume_names(pod: Pod) -> set[str]:
    return {
        v.string("name")
        for v in View.of(pod).object("spec").items("volumes")
        if v.has("persistentVolumeClaim")
    }


def carries_exactly(pod: Pod, volumes: Sequence[Volume]) -> bool:
    """Whether the pod's claims are those of ``volumes`` (``podVolumesMatchesReadyVolumes``).

    KubeVirt counts the pod's volumes less two (its emptyDir and the service-account token the API server
    adds); comparing the claim volumes by name is the same where the token is added and also holds where
    it is not."""
    return claim_volume_names(pod) == {volume.name for volume in volumes}


def active_and_old(volumes: Sequence[Volume], pods: Sequence[Pod]) -> tuple[Pod | None, list[Pod]]:
    """The attachment pod carrying exactly ``volumes`` (not one being deleted), and every other one,
    newest first (``getActiveAndOldAttachmentPods``)."""
    active: Pod | None = None
    old: list[Pod] = []
    for pod in pods:
        if not carries_exactly(pod, volumes):
            old.append(pod)
        elif not podutil.is_terminating(pod):
            active = pod
    old.sort(key=lambda p: str(p["metadata"].get("creationTimestamp") or ""), reverse=True)
    return active, old


def needs_handling(volumes: Sequence[Volume], pods: Sequence[Pod]) -> bool:
    """``needsHandleHotplug``: more than one attachment pod, or one that does not carry exactly the
    hotplugged volumes, or volumes but no pod."""
    if len(pods) > 1:
        return True
    if len(pods) == 1 and carries_exactly(pods[0], volumes):
        return False
    return bool(volumes) or bool(pods)


def _has_pending(pods: Sequence[Pod]) -> bool:
    return any(podutil.pod_phase(p) not in ("Running", "Succeeded", "Failed") for p in pods)


class AttachmentPods:
    """Creates and deletes one VMI's attachment pods; reads only the informers' caches."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        pods: Store[Any],
        expectations: UIDTrackingControllerExpectations,
        render: RenderAttachmentPod,
        find_pvc: Finder,
        find_data_volume: Finder | None = None,
    ) -> None:
        self._api = api
        self._events = events
        self._pods = pods
        self._expectations = expectations
        self._render = render
        self._find_pvc = find_pvc
        # Without CDI's informer no DataVolume is found, as with KubeVirt's stand-in informer.
        self._find_data_volume: Finder = find_data_volume or (lambda _namespace, _name: None)
        self._log = get_logger(controller="vmi")

    def sync(self, vmi: VirtualMachineInstance, launcher: Pod, key: str) -> None:
        """Brings the launcher pod's attachment pods in line with the VMI's hotplugged volumes."""
        volumes = hotplug_volumes(vmi, launcher)
        pods = attachment_pods(self._pods, launcher)
        if podutil.is_terminating(launcher) or not needs_handling(volumes, pods):
            return
        namespace = _namespace(vmi)
        ready: list[Volume] = []
        for volume in volumes:
            attachable, waits = self._attachable(namespace, volume)
            if waits:
                # KubeVirt starts a short-lived pod here to have the DataVolume populated; without CDI's
                # informer no DataVolume is ever found in this state.
                self._log.info("hotplugged volume waits for its first consumer", volume=volume.name)
                continue
            if attachable:
                ready.append(volume)
        active, old = active_and_old(ready, pods)
        if active is None and not _has_pending(old) and ready:
            active = self._create(vmi, launcher, ready, key)
        self._clean_up(vmi, active, old, len(ready), key)

    def _attachable(self, namespace: str | None, volume: Volume) -> tuple[bool, bool]:
        """(ready to attach, waits for its first consumer) (``VolumeReadyToAttachToNode``)."""
        name = claim_name(volume)
        pvc = self._find_pvc(namespace, name)
        if pvc is None:
            raise SyncError(f"Error determining volume status didn't find PVC {name}", PVC_NOT_READY_REASON)
        try:
            return claim_readiness(namespace, pvc, self._find_data_volume)
        except LookupError as err:
            raise SyncError(f"Error determining volume status {err}", PVC_NOT_READY_REASON) from err

    def _create(
        self, vmi: VirtualMachineInstance, launcher: Pod, volumes: list[Volume], key: str
    ) -> Pod | None:
        template = self._template(vmi, launcher, volumes)
        if template is None:
            return None
        self._expectations.expect_creations(key, 1)
        namespace = launcher["metadata"].get("namespace")
        try:
            created = self._api.create(PODS, namespace, template)
        except Exception as err:
            self._expectations.creation_observed(key)
            message = describe_api_error(err)
            self._events.event(
                vmi, "Warning", FAILED_CREATE_POD_REASON, f"Error creating attachment pod: {message}"
            )
            raise SyncError(f"Error creating attachment pod {message}", FAILED_CREATE_POD_REASON) from err
        self._events.event(
            vmi, "Normal", SUCCESSFUL_CREATE_POD_REASON, f"Created attachment pod {podutil.pod_name(created)}"
        )
        return created

    def _template(self, vmi: VirtualMachineInstance, launcher: Pod, volumes: list[Volume]) -> JSON | None:
        """The pod for ``volumes``, or None when it cannot be made yet (KubeVirt drops the reason):
        a claim is gone, none is populated, or the VMI has no SELinux context from virt-handler yet."""
        namespace = launcher["metadata"].get("namespace")
        claims: dict[str, Mapping[str, Any]] = {}
        for volume in volumes:
            pvc = self._find_pvc(namespace, claim_name(volume))
            if pvc is None:
                return None
            try:
                populated, _ = claim_readiness(namespace, pvc, self._find_data_volume)
            except LookupError:
                return None
            if populated:
                claims[volume.name] = pvc
        if not claims:
            return None
        try:
            return self._render(volumes, launcher, vmi, claims)
        except TemplateError as err:
            self._log.info("no hotplug attachment pod yet", reason=str(err))
            return None

    def _clean_up(
        self, vmi: VirtualMachineInstance, active: Pod | None, old: list[Pod], ready: int, key: str
    ) -> None:
        """``cleanupAttachmentPods``: old pods go, except the newest running one while the new pod does
        not run yet, and any pod still carrying a removed volume that is in use in the launcher."""
        hotplugged = {volume.name for volume in vmi.spec.volumes or [] if is_hotplug_volume(volume)}
        removed = {
            status.name: status.phase
            for status in (vmi.status.volume_status if vmi.status is not None else None) or []
            if status.hotplug_volume is not None and status.name not in hotplugged
        }
        waiting_for_active = active is None or podutil.pod_phase(active) != "Running"
        kept_running = False
        for pod in old:
            if (
                not kept_running
                and podutil.pod_phase(pod) == "Running"
                and not podutil.is_terminating(pod)
                and ready > 0
                and waiting_for_active
            ):
                kept_running = True
                continue
            in_use = [
                name for name in _pod_volume_names(pod) if name in removed and removed[name] in _IN_USE_PHASES
            ]
            if in_use:
                self._log.info(
                    "attachment pod kept until its volumes are unmounted",
                    pod=podutil.pod_name(pod),
                    volumes=in_use,
                )
                continue
            try:
                self.delete(vmi, pod, key)
            except SyncError as err:
                raise SyncError(
                    f"Error deleting attachment pod {err.message}", FAILED_DELETE_POD_REASON
                ) from err

    def delete(self, vmi: VirtualMachineInstance, pod: Pod, key: str) -> None:
        """``deleteAttachmentPod``: at once (no grace period); a pod already going is left alone."""
        if podutil.is_terminating(pod):
            return
        uid = podutil.pod_uid(pod)
        name = podutil.pod_name(pod)
        self._expectations.expect_deletions_by_uid(key, [uid])
        try:
            self._api.delete(PODS, pod["metadata"].get("namespace"), name, uid=uid, grace_period_seconds=0)
        except NotFoundError:
            self._expectations.deletion_observed_uid(key, uid)
        except Exception as err:
            self._expectations.deletion_observed_uid(key, uid)
            self._events.event(
                vmi, "Warning", FAILED_DELETE_POD_REASON, f"Failed to delete attachment pod {name}"
            )
            raise SyncError(describe_api_error(err), FAILED_DELETE_POD_REASON) from err
        self._events.event(vmi, "Normal", SUCCESSFUL_DELETE_POD_REASON, f"Deleted attachment pod {name}")

    def delete_all(self, vmi: VirtualMachineInstance, launcher: Pod | None, key: str) -> None:
        """``deleteAllAttachmentPods``: those of the VMI's current launcher pod (a finished VMI)."""
        if launcher is None:
            return
        for pod in attachment_pods(self._pods, launcher):
            try:
                self.delete(vmi, pod, key)
            except SyncError as err:
                raise SyncError(
                    f"failed to delete attachment pods: {err.message}", FAILED_HOTPLUG_SYNC_REASON
                ) from err

    def delete_orphaned(self, vmi: VirtualMachineInstance, launchers: Sequence[Pod], key: str) -> None:
        """``deleteOrphanedAttachmentPods``: those of the VMI's launcher pods that finished; failures are
        logged and the rest carries on."""
        for launcher in launchers:
            if not podutil.is_pod_final(launcher):
                continue
            for pod in attachment_pods(self._pods, launcher):
                try:
                    self.delete(vmi, pod, key)
                except SyncError as err:
                    self._log.warning(
                        "failed to delete an orphaned attachment pod",
                        pod=podutil.pod_name(pod),
                        error=err.message,
                    )


def _pod_volume_names(pod: Pod) -> list[str]:
    return [v.string("name") for v in View.of(pod).object("spec").items("volumes")]


def _namespace(vmi: VirtualMachineInstance) -> str | None:
    return vmi.metadata.namespace if vmi.metadata is not None else None
