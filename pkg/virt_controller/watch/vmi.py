"""The VMI controller: creates each VMI's virt-launcher Pod and follows it until the VMI is Scheduled.

Phases: Pending → Scheduling (a pod exists) → Scheduled (its compute container runs), or Failed when
the pod fails or vanishes first; after that virt-handler owns the VMI and this controller only patches
what it still maintains (conditions, active pods, labels, the volume status of :mod:`.volumestatus`).
The pod is deleted when the VMI is deleted or finished, and the VMI's finalizer is dropped once no pod
of it is left. Once the launcher pod is ready, the claims of hotplugged volumes are attached to its node
by attachment pods the launcher pod owns (:mod:`.hotplug`).

Writes are kept few: the API-version annotations ride along with the first status write, the pod just
created counts as active at once, its node is recorded with the next write that has news of its own, and
the status is only written when it changed. Reaching Scheduled takes one pod create and two VMI writes;
Running then takes none here, as virt-handler's Running write already carries the pod's Ready=True.

No pod is made before the claims of CDI's DataVolumes are populated; a claim that binds only once a pod
uses it (WaitForFirstConsumer) first gets a temporary pod that does nothing but make the scheduler bind
it. The VMI's DataVolumesReady condition sums up its DataVolumes' Ready conditions.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Final

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCES, EventSink, KubeApi
from kubevirt.controller import (
    ControllerExpectations,
    Store,
    UIDTrackingControllerExpectations,
    key_for,
    key_of,
)
from kubevirt.controller.store import NAMESPACE_INDEX
from kubevirt.log import get_logger
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_controller.services.errors import PvcNotFoundError
from kubevirt.virt_controller.services.hotplug_pod import render_hotplug_attachment_pod
from kubevirt.virt_controller.services.parameters import DEFAULT_LAUNCHER_IMAGE
from kubevirt.virt_controller.services.volumes import attached_claim_names
from kubevirt.virt_controller.watch import pods as podutil
from kubevirt.virt_controller.watch.common import (
    Clock,
    Enqueue,
    SyncError,
    controlled_pods,
    controller_ref,
    controller_ref_of_dict,
    describe_api_error,
    format_time,
    has_observed_api_version,
    owner_reference,
    stamp_api_version,
    utc_now,
)
from kubevirt.virt_controller.watch.conditions import (
    FALSE,
    TRUE,
    get_condition,
    has_condition,
    not_ready,
    remove_condition,
    update_condition,
)
from kubevirt.virt_controller.watch.datavolumes import (
    FAILED,
    WAIT_FOR_FIRST_CONSUMER,
    DataVolumeCache,
    claim_readiness,
    data_volumes_of_volumes,
    data_volumes_ready_condition,
    finder,
    phase,
)
from kubevirt.virt_controller.watch.hotplug import (
    AttachmentPods,
    RenderAttachmentPod,
    active_and_old,
    attachment_pods,
    is_hotplug_volume,
)
from kubevirt.virt_controller.watch.liveupdate import cpu_hotplug_pending, memory_hotplug_pending
from kubevirt.virt_controller.watch.volumestatus import (
    Attachments,
    FilesystemOverhead,
    hotplug_volumes,
    referenced_claims,
    volume_statuses,
)
from kubevirt_api.core.v1 import (
    VirtualMachine,
    VirtualMachineInstance,
    VirtualMachineInstanceCondition,
    VirtualMachineInstanceConditionType,
    VirtualMachineInstancePhase,
    VirtualMachineInstancePhaseTransitionTimestamp,
    VirtualMachineInstanceStatus,
)
from kubevirt_api.core.v1.constants import (
    API_VERSION,
    GUEST_NOT_RUNNING_REASON,
    KEEP_LAUNCHER_AFTER_FAILURE_ANNOTATION,
    MEMORY_HOTPLUG_OVERHEAD_RATIO_LABEL,
    MIGRATION_TRANSPORT_UNIX_ANNOTATION,
    NODE_NAME_LABEL,
    OUTDATED_LAUNCHER_IMAGE_LABEL,
    POD_CONDITION_MISSING_REASON,
    POD_NOT_EXISTS_REASON,
    POD_TERMINATING_REASON,
    VIRTUAL_MACHINE_CONTROLLER_FINALIZER,
    VIRTUAL_MACHINE_INSTANCE_FINALIZER,
)
from kubevirt_api.k8s.meta_v1 import ObjectMeta

RenderPod = Callable[[VirtualMachineInstance], dict[str, Any]]
Pod = Mapping[str, Any]
_Phase = VirtualMachineInstancePhase

FAILED_CREATE_POD_REASON: Final = "FailedCreate"
SUCCESSFUL_CREATE_POD_REASON: Final = "SuccessfulCreate"
FAILED_DELETE_POD_REASON: Final = "FailedDelete"
SUCCESSFUL_DELETE_POD_REASON: Final = "SuccessfulDelete"
FAILED_GUARANTEE_RESOURCES_REASON: Final = "FailedGuaranteeResources"
FAILED_PVC_NOT_FOUND_REASON: Final = "FailedPvcNotFound"
FAILED_DATA_VOLUME_IMPORT_REASON: Final = "FailedDataVolumeImport"
FAILED_HOTPLUG_SYNC_REASON: Final = "FailedHotplugSync"
# The pod condition that mirrors the VMI's Paused condition; it is the launcher pod's readiness gate.
VIRTUAL_MACHINE_UNPAUSED: Final = "kubevirt.io/virtual-machine-unpaused"
POD_SCHEDULED: Final = "PodScheduled"
EVICT_ANNOTATIONS: Final = (
    "descheduler.alpha.kubernetes.io/evict",
    "descheduler.alpha.kubernetes.io/prefer-no-eviction",
)
DYNAMIC_LABELS: Final = (NODE_NAME_LABEL, OUTDATED_LAUNCHER_IMAGE_LABEL)
# The hotplugged volumes of a running VMI that its VM's template does not have (for metrics).
EPHEMERAL_HOTPLUG_ANNOTATION: Final = "kubevirt.io/ephemeral-hotplug-volumes"


class VMIController:
    """Reconciles VirtualMachineInstances. Informers: VMIs (reconciled), Pods (owned: launcher pods, and
    through them attachment pods), VMs (owners), PVCs, and CDI's DataVolumes, CDI and CDIConfig
    (callables giving their caches, which are absent while CDI is not installed). ``config`` gives the
    cluster's current configuration."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        vmi_store: Store[VirtualMachineInstance],
        pod_store: Store[dict[str, Any]],
        vm_store: Store[VirtualMachine],
        render_pod: RenderPod,
        pod_expectations: UIDTrackingControllerExpectations,
        vmi_expectations: ControllerExpectations,
        enqueue: Enqueue,
        clock: Clock = utc_now,
        launcher_image: str | None = None,
        pvc_store: Store[dict[str, Any]] | None = None,
        cdis: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
        cdi_config: Callable[[str], Mapping[str, Any] | None] | None = None,
        data_volumes: DataVolumeCache | None = None,
        render_attachment_pod: RenderAttachmentPod | None = None,
        config: Callable[[], ClusterConfig] = ClusterConfig,
    ) -> None:
        self._api = api
        self._config = config
        self._events = events
        self._vmis = vmi_store
        self._pods = pod_store
        self._vms = vm_store
        self._render_pod = render_pod
        self._pod_expectations = pod_expectations
        self._vmi_expectations = vmi_expectations
        self._enqueue = enqueue
        self._clock = clock
        self._launcher_image = launcher_image
        self._pvcs = pvc_store
        # Without CDI's informers (CDI not installed) every filesystem claim gets KubeVirt's default.
        self._filesystem_overhead = FilesystemOverhead(cdis=cdis, cdi_config=cdi_config)
        # Without CDI's informer no DataVolume is found, as with KubeVirt's stand-in informer.
        self._find_data_volume = finder(data_volumes or (lambda: None))
        self._log = get_logger(controller="vmi")

        def find_in(store: Store[dict[str, Any]] | None, namespace: str | None, name: str) -> Any:
            return store.get_by_key(key_for(namespace, name)) if store is not None else None

        self._hotplug = AttachmentPods(
            api=api,
            events=events,
            pods=pod_store,
            expectations=pod_expectations,
            render=render_attachment_pod
            or partial(
                render_hotplug_attachment_pod, launcher_image=launcher_image or DEFAULT_LAUNCHER_IMAGE
            ),
            find_pvc=partial(find_in, pvc_store),
            find_data_volume=self._find_data_volume,
        )

    # -- reconcile -------------------------------------------------------------------------------------

    def reconcile(self, key: str) -> None:
        vmi = self._vmis.get_by_key(key)
        if vmi is None:
            self._pod_expectations.delete_expectations(key)
            self._vmi_expectations.delete_expectations(key)
            return
        if not (
            self._pod_expectations.satisfied_expectations(key)
            and self._vmi_expectations.satisfied_expectations(key)
        ):
            return
        pods = controlled_pods(self._pods, _uid(vmi))
        pod = current_pod(vmi, pods)
        dvs = data_volumes_of_volumes(
            _meta(vmi).namespace, vmi.spec.volumes or (), self._find_pvc, self._find_data_volume
        )
        sync_error: SyncError | None = None
        try:
            created = self._sync(vmi, pod, pods, key)
        except SyncError as err:
            sync_error, created = err, None
        if created is not None:
            pod = created
            pods = [*pods, created]
        self._update_status(vmi, pod, pods, dvs, sync_error, key)
        if sync_error is not None and sync_error.requeue:
            raise sync_error

    # -- sync: pods ------------------------------------------------------------------------------------

    def _sync(self, vmi: VirtualMachineInstance, pod: Pod | None, pods: list[Pod], key: str) -> Pod | None:
        """Creates or deletes pods; returns the launcher pod it created, if any."""
        if vmi.is_marked_for_deletion():
            self._delete_pods(vmi, pods, key)
            return None
        if vmi.is_final():
            self._hotplug.delete_all(vmi, pod, key)
            if not _keeps_launcher(vmi):
                self._delete_pods(vmi, pods, key)
            return None
        self._hotplug.delete_orphaned(vmi, pods, key)
        if vmi.is_migration_target() and not vmi.is_migration_target_node_label_set():
            return None  # a receiver waits for its migration source
        if pod is None and vmi.is_unprocessed():
            self._wait_for_claims(vmi)
            populated, waits_for_consumer = self._claims_populated(vmi)
            if not populated:
                self._log.debug("delaying the pod while DataVolumes populate", key=key)
                return None
            return self._create_pod(vmi, key, temporary=waits_for_consumer)
        self._delete_temporary_pods(vmi, pods, key)
        if pod is not None and not podutil.is_temporary_pod(pod) and podutil.is_pod_ready(pod):
            self._hotplug.sync(vmi, pod, key)
        return None

    def _wait_for_claims(self, vmi: VirtualMachineInstance) -> None:
        """No pod before every claim it mounts exists: users and CDI may create them after the VMI."""
        if self._pvcs is None:
            return
        namespace = _meta(vmi).namespace
        for claim in attached_claim_names(vmi):
            if self._pvcs.get_by_key(key_for(namespace, claim)) is None:
                message = f"PVC {namespace}/{claim} does not exist, waiting for it to appear"
                self._events.event(vmi, "Normal", FAILED_PVC_NOT_FOUND_REASON, message)
                raise SyncError(message, FAILED_PVC_NOT_FOUND_REASON, requeue=False)

    def _find_pvc(self, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        return self._pvcs.get_by_key(key_for(namespace, name)) if self._pvcs is not None else None

    def _claims_populated(self, vmi: VirtualMachineInstance) -> tuple[bool, bool]:
        """KubeVirt's ``areDataVolumesReady`` over the claims the pod mounts: (each populated or waiting
        for its first consumer, one waits for its first consumer)."""
        namespace = _meta(vmi).namespace
        populated, waits = True, False
        for claim in attached_claim_names(vmi):
            pvc = self._find_pvc(namespace, claim)
            if pvc is None:
                continue  # missing claims are :meth:`_wait_for_claims`'s
            try:
                ready, wffc = claim_readiness(namespace, pvc, self._find_data_volume)
            except LookupError as err:
                self._events.event(
                    vmi,
                    "Warning",
                    FAILED_PVC_NOT_FOUND_REASON,
                    f"Error determining if volume is ready: {err}",
                )
                raise SyncError(
                    f"Error determining if volume is ready {err}", FAILED_DATA_VOLUME_IMPORT_REASON
                ) from err
            waits = waits or wffc
            populated = populated and (ready or wffc)
        return populated, waits

    def _delete_temporary_pods(self, vmi: VirtualMachineInstance, pods: list[Pod], key: str) -> None:
        """The pod that made the scheduler bind WaitForFirstConsumer claims goes once none waits and it
        ran (KubeVirt's ``cleanupWaitForFirstConsumerTemporaryPods``)."""
        temporary = [
            p
            for p in pods
            if podutil.is_temporary_pod(p) and podutil.pod_phase(p) in _TEMPORARY_POD_DONE_PHASES
        ]
        if not temporary or self._claims_populated(vmi)[1]:
            return
        for pod in temporary:
            uid = podutil.pod_uid(pod)
            name = podutil.pod_name(pod)
            self._pod_expectations.expect_deletions_by_uid(key, [uid])
            try:
                self._api.delete(
                    PODS, pod["metadata"].get("namespace"), name, uid=uid, grace_period_seconds=0
                )
            except Exception as err:
                self._pod_expectations.deletion_observed_uid(key, uid)
                if getattr(err, "status", 0) == 404:
                    continue
                message = f"Failed to delete WaitForFirstConsumer temporary pod {name}"
                self._events.event(vmi, "Warning", FAILED_DELETE_POD_REASON, message)
                raise SyncError(
                    f"failed to clean up temporary pods: {err}", FAILED_HOTPLUG_SYNC_REASON
                ) from err
            message = f"Deleted WaitForFirstConsumer temporary pod {name}"
            self._events.event(vmi, "Normal", SUCCESSFUL_DELETE_POD_REASON, message)

    def _create_pod(self, vmi: VirtualMachineInstance, key: str, *, temporary: bool = False) -> Pod:
        try:
            pod = self._render_pod(vmi)
            if temporary:
                self._log.info("creating a temporary pod for WaitForFirstConsumer claims", key=key)
                pod = podutil.as_temporary_pod(pod)
        except PvcNotFoundError as err:
            message = f"failed to render launch manifest: {err}"
            self._events.event(vmi, "Warning", FAILED_PVC_NOT_FOUND_REASON, message)
            raise SyncError(message, FAILED_PVC_NOT_FOUND_REASON, requeue=False) from err
        except (ValueError, KeyError) as err:
            raise SyncError(f"failed to render launch manifest: {err}", FAILED_CREATE_POD_REASON) from err
        pod = _owned_by(pod, vmi)
        meta = _meta(vmi)
        self._pod_expectations.expect_creations(key, 1)
        try:
            created = self._api.create(PODS, meta.namespace, pod)
        except Exception as err:
            self._pod_expectations.creation_observed(key)
            message = describe_api_error(err)
            if getattr(err, "status", 0) == 403 and "violates PodSecurity" in message:
                message = (
                    f"failed to create pod for vmi {meta.namespace}/{meta.name}, "
                    f"it needs a privileged namespace to run: {message}"
                )
                self._events.event(
                    vmi, "Warning", FAILED_CREATE_POD_REASON, f"failed to render launch manifest: {message}"
                )
                raise SyncError(message, FAILED_CREATE_POD_REASON) from err
            self._events.event(vmi, "Warning", FAILED_CREATE_POD_REASON, f"Error creating pod: {message}")
            raise SyncError(
                f"failed to create virtual machine pod: {message}", FAILED_CREATE_POD_REASON
            ) from err
        self._events.event(
            vmi,
            "Normal",
            SUCCESSFUL_CREATE_POD_REASON,
            f"Created virtual machine pod {podutil.pod_name(created)}",
        )
        return created

    def _delete_pods(self, vmi: VirtualMachineInstance, pods: list[Pod], key: str) -> None:
        for pod in pods:
            if podutil.is_terminating(pod) and not podutil.is_pod_final(pod):
                continue  # already on its way out
            uid = podutil.pod_uid(pod)
            self._pod_expectations.expect_deletions_by_uid(key, [uid])
            try:
                self._api.delete(PODS, pod["metadata"].get("namespace"), podutil.pod_name(pod), uid=uid)
            except Exception as err:
                self._pod_expectations.deletion_observed_uid(key, uid)
                if getattr(err, "status", 0) == 404:
                    continue
                self._events.event(
                    vmi,
                    "Warning",
                    FAILED_DELETE_POD_REASON,
                    f"Failed to delete virtual machine pod {podutil.pod_name(pod)}",
                )
                raise SyncError(f"failed to delete pod: {err}", FAILED_DELETE_POD_REASON) from err
            self._events.event(
                vmi,
                "Normal",
                SUCCESSFUL_DELETE_POD_REASON,
                f"Deleted virtual machine pod {podutil.pod_name(pod)}",
            )

    # -- status ----------------------------------------------------------------------------------------

    def _update_status(
        self,
        cached: VirtualMachineInstance,
        pod: Pod | None,
        pods: list[Pod],
        dvs: Sequence[Mapping[str, Any]],
        sync_error: SyncError | None,
        key: str,
    ) -> None:
        vmi = cached.model_copy(deep=True)
        meta = _meta(vmi)
        if not has_observed_api_version(meta):
            stamp_api_version(meta)
        status = vmi.status or VirtualMachineInstanceStatus()
        vmi.status = status
        now = format_time(self._clock())
        launcher = pod if pod is not None and not podutil.is_temporary_pod(pod) else None

        active = {podutil.pod_uid(p): podutil.pod_node(p) for p in pods}
        if active or status.active_pods is not None:
            status.active_pods = active
        # Compared by status and reason only, as KubeVirt's condition manager does: the Ready=True that
        # virt-handler writes with the first Running (see kubevirt.virt_handler.ready) stays as written,
        # though its times are not the pod's, and costs this controller no write of its own.
        status.conditions = update_condition(status.conditions, _ready_condition(vmi, pod, now))
        if launcher is not None:
            self._set_launcher_image(vmi, podutil.compute_image(launcher))
            if not (cached.is_marked_for_deletion() or cached.is_final() or podutil.is_terminating(launcher)):
                # A pod on its way out needs no readiness gate or labels, and may be gone already.
                self._sync_paused_condition_to_pod(vmi, launcher, now)
                self._sync_dynamic_metadata_to_pod(vmi, launcher)

        dvs_ready = data_volumes_ready_condition(dvs)
        if dvs_ready is not None:
            status.conditions = update_condition(status.conditions, dvs_ready)
        temporary = pod if pod is not None and podutil.is_temporary_pod(pod) else None
        sync_error = self._next_phase(
            cached, vmi, launcher, pods, sync_error, _DataVolumes.of(dvs, temporary)
        )

        if cached.is_running() or cached.is_scheduled():
            # virt-handler owns the VMI now: patch only what changed, guarded by tests of the old values.
            ops = _status_patch(cached, vmi)
            if ops:
                self._api.patch(VIRTUAL_MACHINE_INSTANCES, meta.namespace, meta.name or "", ops)
            return
        status.conditions = _synchronized(status.conditions, sync_error, now)
        if status.phase != cached.phase and not any(
            t.phase == status.phase for t in status.phase_transition_timestamps or ()
        ):
            status.phase_transition_timestamps = [
                *(status.phase_transition_timestamps or ()),
                VirtualMachineInstancePhaseTransitionTimestamp(
                    phase=status.phase, phase_transition_timestamp=now
                ),
            ]
        if vmi.to_dict() != cached.to_dict() and not _only_pod_nodes_changed(cached, vmi):
            self._vmi_expectations.expect_creations(key, 1)  # wait for our own update to come back
            try:
                self._api.update(VIRTUAL_MACHINE_INSTANCES, meta.namespace, vmi.to_dict())
            except Exception:
                self._vmi_expectations.delete_expectations(key)
                raise

    def _next_phase(
        self,
        cached: VirtualMachineInstance,
        vmi: VirtualMachineInstance,
        launcher: Pod | None,
        pods: list[Pod],
        sync_error: SyncError | None,
        dvs: _DataVolumes,
    ) -> SyncError | None:
        """Moves ``vmi`` (a copy of ``cached``) along the phase machine; returns the sync error to report."""
        status = vmi.status
        assert status is not None
        if cached.is_unprocessed():
            if launcher is not None:
                status.phase = _Phase.SCHEDULING
                # Set now what the Scheduling pass would copy next: one VMI write fewer.
                status.qos_class = (launcher.get("status") or {}).get("qosClass") or None
            elif cached.is_marked_for_deletion() or dvs.failed:
                status.phase = _Phase.FAILED
            elif cached.is_migration_target() and not cached.is_migration_target_node_label_set():
                status.phase = _Phase.WAITING_FOR_SYNC
            else:
                status.phase = _Phase.PENDING
                if dvs.waiting_for_consumer:
                    _provisioning(status, dvs.temporary_pod)
                if sync_error is not None and sync_error.reason == FAILED_PVC_NOT_FOUND_REASON:
                    status.conditions = update_condition(
                        remove_condition(status.conditions, POD_SCHEDULED),
                        VirtualMachineInstanceCondition(
                            type=POD_SCHEDULED,
                            status=FALSE,
                            reason="Unschedulable",
                            message=sync_error.message,
                        ),
                    )
        elif cached.is_scheduling():
            status.conditions = remove_condition(
                status.conditions, VirtualMachineInstanceConditionType.PROVISIONING
            )
            if launcher is None:
                status.phase = _Phase.FAILED  # someone else removed the pod
                return sync_error
            status.qos_class = (launcher.get("status") or {}).get("qosClass") or None
            status.conditions = _mirror_pod_scheduled(status.conditions, launcher)
            image_error = podutil.image_pull_error(launcher)
            if image_error is not None:
                sync_error = SyncError(image_error[1], image_error[0])
            if podutil.is_pod_ready(launcher) and not cached.is_marked_for_deletion():
                if cached.is_cpu_dedicated() and status.qos_class != "Guaranteed":
                    self._events.event(
                        cached,
                        "Warning",
                        FAILED_GUARANTEE_RESOURCES_REASON,
                        "failed to guarantee pod resources",
                    )
                    return SyncError("failed to guarantee pod resources", FAILED_GUARANTEE_RESOURCES_REASON)
                # The claims' facts ride with the hand-over, so virt-handler needs no PVC reads.
                self._update_volume_status(vmi, launcher)
                node = podutil.pod_node(launcher)
                status.phase = _Phase.SCHEDULED
                status.node_name = node
                meta = _meta(vmi)
                meta.labels = {**(meta.labels or {}), NODE_NAME_LABEL: node}
                if MIGRATION_TRANSPORT_UNIX_ANNOTATION in (launcher["metadata"].get("annotations") or {}):
                    status.migration_transport = "Unix"
            elif podutil.is_pod_down_or_going_down(launcher):
                status.phase = _Phase.FAILED
        elif cached.is_final():
            meta = _meta(vmi)
            if not pods:
                meta.finalizers = [
                    f for f in meta.finalizers or () if f != VIRTUAL_MACHINE_INSTANCE_FINALIZER
                ] or None
                if meta.labels is not None:
                    meta.labels = {k: v for k, v in meta.labels.items() if k != OUTDATED_LAUNCHER_IMAGE_LABEL}
                status.launcher_container_image_version = None
            if not self._has_owner_vm(cached) and meta.finalizers:
                meta.finalizers = [
                    f for f in meta.finalizers if f != VIRTUAL_MACHINE_CONTROLLER_FINALIZER
                ] or None
        elif cached.is_running() or cached.is_scheduled():
            if launcher is None:
                status.phase = (
                    _Phase.WAITING_FOR_SYNC if cached.is_decentralized_migration() else _Phase.FAILED
                )
            else:
                self._update_volume_status(vmi, launcher)
                if cached.is_running():
                    self._sync_cpu_memory_hotplug(vmi)
                    self._mark_ephemeral_hotplug_volumes(vmi)
        elif cached.is_waiting_for_sync():
            if cached.is_marked_for_deletion():
                meta = _meta(vmi)
                meta.finalizers = [
                    f for f in meta.finalizers or () if f != VIRTUAL_MACHINE_INSTANCE_FINALIZER
                ] or None
                if not self._has_owner_vm(cached) and meta.finalizers:
                    meta.finalizers = [
                        f for f in meta.finalizers if f != VIRTUAL_MACHINE_CONTROLLER_FINALIZER
                    ] or None
            elif launcher is not None:
                status.phase = _Phase.SCHEDULING
        return sync_error

    def _update_volume_status(self, vmi: VirtualMachineInstance, launcher: Pod) -> None:
        """KubeVirt's ``updateVolumeStatus``: one entry per volume, claims' facts from the PVC informer."""
        status = vmi.status
        assert status is not None
        namespace = _meta(vmi).namespace
        pvcs = self._pvcs

        def find_pvc(name: str) -> Mapping[str, Any] | None:
            return pvcs.get_by_key(key_for(namespace, name)) if pvcs is not None else None

        pods = attachment_pods(self._pods, launcher)
        active, _ = active_and_old(hotplug_volumes(vmi, launcher), pods)

        def record(reason: str, message: str) -> None:
            self._events.event(vmi, "Normal", reason, message)

        updated = volume_statuses(
            vmi, launcher, find_pvc, self._filesystem_overhead, Attachments(active, pods), record
        )
        if updated or status.volume_status is not None:  # no volumes: left unset, as Go's omitempty does
            status.volume_status = updated

    def _sync_cpu_memory_hotplug(self, vmi: VirtualMachineInstance) -> None:
        """A spec that asks for more (or fewer) vCPUs or guest memory than the guest has gets
        HotVCPUChange or HotMemoryChange (True) for virt-handler to carry out; it removes them when
        done. The memory overhead ratio the launcher pod was sized with goes with a memory change."""
        status = vmi.status
        assert status is not None
        if cpu_hotplug_pending(vmi):
            status.conditions = _add_hotplug_condition(
                status.conditions, VirtualMachineInstanceConditionType.VCPU_CHANGE
            )
        if memory_hotplug_pending(vmi):
            status.conditions = _add_hotplug_condition(
                status.conditions, VirtualMachineInstanceConditionType.MEMORY_CHANGE
            )
            ratio = self._config().launcher.additional_guest_memory_overhead_ratio
            if ratio is not None:
                meta = _meta(vmi)
                meta.labels = {**(meta.labels or {}), MEMORY_HOTPLUG_OVERHEAD_RATIO_LABEL: ratio}

    def _mark_ephemeral_hotplug_volumes(self, vmi: VirtualMachineInstance) -> None:
        """KubeVirt's ``checkEphemeralHotplugVolumes``: the VMI's annotation lists its hotplugged volumes
        that its VM's template does not have (added without ``--persist``)."""
        vm = self._owner_vm(vmi)
        if vm is None:
            return
        template = vm.spec.template.spec
        in_vm = {volume.name for volume in (template.volumes if template is not None else None) or []}
        ephemeral = [
            volume.name
            for volume in vmi.spec.volumes or []
            if is_hotplug_volume(volume) and volume.name not in in_vm
        ]
        meta = _meta(vmi)
        annotations = dict(meta.annotations or {})
        if ephemeral:
            annotations[EPHEMERAL_HOTPLUG_ANNOTATION] = json.dumps(ephemeral, separators=(",", ":"))
        elif EPHEMERAL_HOTPLUG_ANNOTATION not in annotations:
            return
        else:
            del annotations[EPHEMERAL_HOTPLUG_ANNOTATION]
        meta.annotations = annotations

    def _has_owner_vm(self, vmi: VirtualMachineInstance) -> bool:
        return self._owner_vm(vmi) is not None

    def _owner_vm(self, vmi: VirtualMachineInstance) -> VirtualMachine | None:
        ref = controller_ref(vmi.metadata)
        if ref is None or ref.kind != "VirtualMachine":
            return None
        vm = self._vms.get_by_key(key_for(_meta(vmi).namespace, ref.name))
        return vm if vm is not None and vm.metadata is not None and vm.metadata.uid == ref.uid else None

    def _set_launcher_image(self, vmi: VirtualMachineInstance, image: str) -> None:
        meta = _meta(vmi)
        labels = dict(meta.labels or {})
        if image and self._launcher_image is not None and image != self._launcher_image:
            labels[OUTDATED_LAUNCHER_IMAGE_LABEL] = ""
        else:
            labels.pop(OUTDATED_LAUNCHER_IMAGE_LABEL, None)
        meta.labels = labels or (None if meta.labels is None else {})
        assert vmi.status is not None
        vmi.status.launcher_container_image_version = image or None

    def _sync_paused_condition_to_pod(self, vmi: VirtualMachineInstance, pod: Pod, now: str) -> None:
        """The pod's readiness gate follows the VMI's Paused condition (a paused VMI's pod is NotReady)."""
        paused = vmi.status is not None and get_condition(
            vmi.status.conditions, VirtualMachineInstanceConditionType.PAUSED
        )
        unpaused = podutil.pod_condition(pod, VIRTUAL_MACHINE_UNPAUSED)
        unpaused_true = unpaused is not None and unpaused.get("status") == TRUE
        if paused and paused.status == TRUE:
            if not unpaused_true:
                return
            wanted = {"status": FALSE, "reason": "Paused", "message": "the virtual machine is paused"}
        else:
            if unpaused_true:
                return
            wanted = {"status": TRUE, "reason": "NotPaused", "message": "the virtual machine is not paused"}
        condition = {
            "type": VIRTUAL_MACHINE_UNPAUSED,
            **wanted,
            "lastProbeTime": now,
            "lastTransitionTime": now,
        }
        self._api.patch(
            PODS,
            pod["metadata"].get("namespace"),
            podutil.pod_name(pod),
            {"status": {"conditions": [condition]}},
            patch_type="strategic",
            subresource="status",
        )

    def _sync_dynamic_metadata_to_pod(self, vmi: VirtualMachineInstance, pod: Pod) -> None:
        """Labels and annotations that may change on the VMI after the pod exists are copied to it."""
        meta = _meta(vmi)
        ops: list[dict[str, Any]] = []
        for field, keys, source in (
            ("labels", DYNAMIC_LABELS, meta.labels or {}),
            ("annotations", EVICT_ANNOTATIONS, meta.annotations or {}),
        ):
            current = pod["metadata"].get(field)
            wanted = dict(current or {})
            for name in keys:
                if name in source:
                    wanted[name] = source[name]
                else:
                    wanted.pop(name, None)
            if wanted == (current or {}):
                continue
            if current is None:
                ops.append({"op": "add", "path": f"/metadata/{field}", "value": wanted})
            else:
                ops.append({"op": "test", "path": f"/metadata/{field}", "value": current})
                ops.append({"op": "replace", "path": f"/metadata/{field}", "value": wanted})
        if ops:
            self._api.patch(PODS, pod["metadata"].get("namespace"), podutil.pod_name(pod), ops)

    # -- informer event handlers -----------------------------------------------------------------------

    def on_vmi_add(self, vmi: VirtualMachineInstance) -> None:
        self._observed_vmi(vmi)

    def on_vmi_update(self, old: VirtualMachineInstance, new: VirtualMachineInstance) -> None:
        self._observed_vmi(new)

    def on_vmi_delete(self, vmi: VirtualMachineInstance) -> None:
        self._observed_vmi(vmi)

    def _observed_vmi(self, vmi: VirtualMachineInstance) -> None:
        """Any VMI event shows the cache caught up with our last write of it."""
        key = key_of(vmi)
        self._vmi_expectations.delete_expectations(key)
        self._enqueue(key)

    def on_pod_add(self, pod: Pod) -> None:
        if podutil.is_terminating(pod):
            self.on_pod_delete(pod)  # seen first while being deleted (after a restart): not our creation
            return
        vmi = self._owner(pod)
        if vmi is not None:
            self._pod_expectations.creation_observed(key_of(vmi))
            self._enqueue(key_of(vmi))

    def on_pod_update(self, old: Pod, new: Pod) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if podutil.is_terminating(new):
            self.on_pod_delete(new)  # a pod marked for deletion already counts as deleted
            return
        if controller_ref_of_dict(old) != controller_ref_of_dict(new):
            previous = self._owner(old)
            if previous is not None:
                self._enqueue(key_of(previous))
        vmi = self._owner(new)
        if vmi is not None:
            self._enqueue(key_of(vmi))

    def on_pod_delete(self, pod: Pod) -> None:
        vmi = self._owner(pod)
        if vmi is not None:
            self._pod_expectations.deletion_observed_uid(key_of(vmi), podutil.pod_uid(pod))
            self._enqueue(key_of(vmi))

    def on_pvc_add(self, pvc: Mapping[str, Any]) -> None:
        # A new claim is news for every VMI using it (its volume status), as in KubeVirt's addPVC.
        self._claim_changed(pvc, every_user=not podutil.is_terminating(pvc))

    def on_pvc_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        # KubeVirt's updatePVC: only a changed size (an expansion) concerns the VMIs past Pending.
        resized = (old.get("status") or {}).get("capacity") != (new.get("status") or {}).get("capacity") or (
            ((old.get("spec") or {}).get("resources") or {}).get("requests")
            != ((new.get("spec") or {}).get("resources") or {}).get("requests")
        )
        self._claim_changed(new, every_user=resized and not podutil.is_terminating(new))

    def on_pvc_delete(self, pvc: Mapping[str, Any]) -> None:
        self._claim_changed(pvc, every_user=False)

    def _claim_changed(self, pvc: Mapping[str, Any], *, every_user: bool) -> None:
        """Wakes the VMIs of the claim's namespace still waiting for their pod that mount it, and with
        ``every_user`` all VMIs with a PersistentVolumeClaim or DataVolume volume of that name."""
        meta = pvc["metadata"]
        name = meta.get("name")
        for vmi in self._vmis.by_index(NAMESPACE_INDEX, meta.get("namespace") or ""):
            if (every_user and name in referenced_claims(vmi)) or (
                vmi.is_unprocessed() and name in attached_claim_names(vmi)
            ):
                self._enqueue(key_of(vmi))

    def on_data_volume_add(self, dv: Mapping[str, Any]) -> None:
        self._data_volume_changed(dv)

    def on_data_volume_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return  # a resync, nothing changed
        self._data_volume_changed(new)
        if new["metadata"].get("deletionTimestamp") is not None and (
            old["metadata"].get("labels") != new["metadata"].get("labels")
        ):
            self._data_volume_changed(old)

    def on_data_volume_delete(self, dv: Mapping[str, Any]) -> None:
        self._data_volume_changed(dv)

    def _data_volume_changed(self, dv: Mapping[str, Any]) -> None:
        """Wakes the VMIs of the namespace with a DataVolume or PersistentVolumeClaim volume of the
        DataVolume's name (KubeVirt's ``listVMIsMatchingDV``)."""
        meta = dv["metadata"]
        name = meta.get("name")
        for vmi in self._vmis.by_index(NAMESPACE_INDEX, meta.get("namespace") or ""):
            if name in referenced_claims(vmi):
                self._enqueue(key_of(vmi))

    def on_vm_add(self, vm: VirtualMachine) -> None:
        pass  # a VM's VMI is queued by its own events

    def on_vm_update(self, old: VirtualMachine, new: VirtualMachine) -> None:
        """A VM whose template's volumes changed: its VMI's ephemeral-hotplug annotation may change."""
        if _meta(old).resource_version == _meta(new).resource_version:
            return
        before = old.spec.template.spec.volumes if old.spec.template.spec is not None else None
        after = new.spec.template.spec.volumes if new.spec.template.spec is not None else None
        if before == after:
            return
        vmi = self._vmis.get_by_key(key_of(new))
        ref = controller_ref(vmi.metadata) if vmi is not None else None
        if vmi is not None and ref is not None and ref.uid == _meta(new).uid:
            self._enqueue(key_of(vmi))

    def on_vm_delete(self, vm: VirtualMachine) -> None:
        pass

    def _owner(self, pod: Pod) -> VirtualMachineInstance | None:
        ref = controller_ref_of_dict(pod)
        if ref is not None and ref.get("kind") == "Pod":
            # An attachment pod: its launcher pod's VMI.
            launcher = self._pods.get_by_key(key_for(pod["metadata"].get("namespace"), str(ref.get("name"))))
            if launcher is None or podutil.pod_uid(launcher) != ref.get("uid"):
                return None
            ref = controller_ref_of_dict(launcher)
        if ref is None or ref.get("kind") != "VirtualMachineInstance":
            return None
        vmi = self._vmis.get_by_key(key_for(pod["metadata"].get("namespace"), str(ref.get("name"))))
        return vmi if vmi is not None and _uid(vmi) == ref.get("uid") else None


_TEMPORARY_POD_DONE_PHASES: Final = ("Running", "Succeeded", "Failed")


class _DataVolumes:
    """What the phase machine reads of a VMI's DataVolumes: one failed, or (none failed) one waits for
    its first consumer; the temporary pod made for the latter, if any."""

    def __init__(self, *, failed: bool, waiting_for_consumer: bool, temporary_pod: Pod | None) -> None:
        self.failed = failed
        self.waiting_for_consumer = waiting_for_consumer
        self.temporary_pod = temporary_pod

    @classmethod
    def of(cls, dvs: Sequence[Mapping[str, Any]], temporary_pod: Pod | None) -> _DataVolumes:
        failed = any(phase(dv) == FAILED for dv in dvs)
        waits = not failed and any(phase(dv) == WAIT_FOR_FIRST_CONSUMER for dv in dvs)
        return cls(failed=failed, waiting_for_consumer=waits, temporary_pod=temporary_pod)


def _provisioning(status: VirtualMachineInstanceStatus, temporary_pod: Pod | None) -> None:
    """A Pending VMI whose claims wait for their first consumer is Provisioning; its temporary pod's
    PodScheduled=False shows, and that pod failing fails the VMI."""
    if not has_condition(status.conditions, VirtualMachineInstanceConditionType.PROVISIONING):
        status.conditions = [
            *(status.conditions or ()),
            VirtualMachineInstanceCondition(
                type=VirtualMachineInstanceConditionType.PROVISIONING, status=TRUE
            ),
        ]
    if temporary_pod is None:
        return
    status.conditions = _mirror_pod_scheduled(status.conditions, temporary_pod)
    if podutil.is_pod_failed_or_going_down(temporary_pod):
        status.phase = _Phase.FAILED


def current_pod(vmi: VirtualMachineInstance, pods: list[Pod]) -> Pod | None:
    """The newest pod of the VMI on its node (any node while none is recorded)."""
    node = vmi.status.node_name if vmi.status is not None else None
    candidates = [p for p in pods if not node or podutil.pod_node(p) == node]
    if not candidates:
        return None
    return max(candidates, key=lambda p: str(p["metadata"].get("creationTimestamp") or ""))


def _ready_condition(
    vmi: VirtualMachineInstance, pod: Pod | None, now: str
) -> VirtualMachineInstanceCondition:
    def false(reason: str, message: str) -> VirtualMachineInstanceCondition:
        return not_ready(VirtualMachineInstanceCondition, reason, message, now)

    if pod is None or podutil.is_temporary_pod(pod):
        return false(POD_NOT_EXISTS_REASON, "virt-launcher pod has not yet been scheduled")
    if podutil.is_pod_down_or_going_down(pod):
        return false(POD_TERMINATING_REASON, "virt-launcher pod is terminating")
    if not vmi.is_running():
        return false(GUEST_NOT_RUNNING_REASON, "Guest VM is not reported as running")
    ready = podutil.pod_condition(pod, "Ready")
    if ready is None:
        return false(POD_CONDITION_MISSING_REASON, "virt-launcher pod is missing the Ready condition")
    return VirtualMachineInstanceCondition(
        type=VirtualMachineInstanceConditionType.READY,
        status=str(ready.get("status", FALSE)),
        reason=ready.get("reason"),
        message=ready.get("message"),
        last_probe_time=ready.get("lastProbeTime"),
        last_transition_time=ready.get("lastTransitionTime"),
    )


def _add_hotplug_condition(
    conditions: list[VirtualMachineInstanceCondition] | None, type_: str
) -> list[VirtualMachineInstanceCondition] | None:
    """KubeVirt's ``syncHotplugCondition``: added as True unless one of the type is there already."""
    if has_condition(conditions, type_):
        return conditions
    return [*(conditions or ()), VirtualMachineInstanceCondition(type=type_, status=TRUE)]


def _mirror_pod_scheduled(
    conditions: list[VirtualMachineInstanceCondition] | None, pod: Pod
) -> list[VirtualMachineInstanceCondition] | None:
    """PodScheduled=False (Unschedulable) is copied from the pod; it goes once the pod is scheduled."""
    scheduled = podutil.pod_condition(pod, POD_SCHEDULED)
    if scheduled is not None and scheduled.get("status") == FALSE:
        if get_condition(conditions, POD_SCHEDULED) is not None:
            return conditions
        return [
            *(conditions or ()),
            VirtualMachineInstanceCondition(
                type=POD_SCHEDULED,
                status=FALSE,
                reason=scheduled.get("reason"),
                message=scheduled.get("message"),
                last_probe_time=scheduled.get("lastProbeTime"),
                last_transition_time=scheduled.get("lastTransitionTime"),
            ),
        ]
    return remove_condition(conditions, POD_SCHEDULED)


def _synchronized(
    conditions: list[VirtualMachineInstanceCondition] | None, sync_error: SyncError | None, now: str
) -> list[VirtualMachineInstanceCondition] | None:
    """Synchronized=False carries the last sync error's reason; it is removed once a sync succeeds."""
    type_ = VirtualMachineInstanceConditionType.SYNCHRONIZED
    if sync_error is None:
        return remove_condition(conditions, type_)
    existing = get_condition(conditions, type_)
    if existing is not None and existing.status == FALSE and existing.reason == sync_error.reason:
        return conditions
    return [
        *(remove_condition(conditions, type_) or ()),
        VirtualMachineInstanceCondition(
            type=type_,
            status=FALSE,
            reason=sync_error.reason,
            message=sync_error.message,
            last_transition_time=now,
        ),
    ]


def _only_pod_nodes_changed(cached: VirtualMachineInstance, vmi: VirtualMachineInstance) -> bool:
    """Whether, while still Scheduling, the only news is the node its pod was bound to. No one reads a
    Scheduling VMI's pod nodes (virt-handler starts at Scheduled), so they ride with the next write
    (Scheduled at the latest) instead of costing one of their own."""
    if not (cached.is_scheduling() and vmi.is_scheduling()):
        return False
    before, after = cached.to_dict(), vmi.to_dict()
    was = (before.get("status") or {}).get("activePods") or {}
    now = (after.get("status") or {}).get("activePods") or {}
    if was.keys() != now.keys():
        return False
    after["status"]["activePods"] = was
    return after == before


def _status_patch(old: VirtualMachineInstance, new: VirtualMachineInstance) -> list[dict[str, Any]]:
    """JSON patch ops for the fields this controller keeps on a VMI virt-handler owns, applied only to
    the version they were computed from.

    KubeVirt guards each replaced field with a ``test`` of its old value; that needs the old value as the
    server holds it, byte for byte, and the cached model does not keep it so (it drops the ``null`` times
    virt-handler writes in its conditions, so such a test never passes). A ``test`` of the
    resourceVersion guards the same writes: a stale cache fails the patch, and the watch event that
    refreshes it queues the VMI again."""
    before, after = old.to_dict(), new.to_dict()
    ops: list[dict[str, Any]] = []
    for section, names in (
        ("status", ("volumeStatus", "conditions", "activePods", "phase", "launcherContainerImageVersion")),
        ("metadata", ("labels", "annotations")),
    ):
        was, now = before.get(section) or {}, after.get(section) or {}
        for name in names:
            if was.get(name) == now.get(name):
                continue
            path = f"/{section}/{name}"
            if name not in now:
                ops.append({"op": "remove", "path": path})
            else:  # "add" sets a member whether or not it is there
                ops.append({"op": "add", "path": path, "value": now[name]})
    if not ops:
        return ops
    if "status" not in before:
        ops.insert(0, {"op": "add", "path": "/status", "value": {}})
    version = (before.get("metadata") or {}).get("resourceVersion")
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": version}, *ops]


def _owned_by(pod: Mapping[str, Any], vmi: VirtualMachineInstance) -> dict[str, Any]:
    """The rendered pod with the VMI as its controller (the renderer normally sets it already)."""
    result = copy.deepcopy(dict(pod))
    if controller_ref_of_dict(result) is None:
        meta = _meta(vmi)
        ref = owner_reference(
            API_VERSION, "VirtualMachineInstance", meta.name or "", meta.uid or ""
        ).to_dict()
        metadata = result.setdefault("metadata", {})
        metadata["ownerReferences"] = [*(metadata.get("ownerReferences") or []), ref]
    return result


def _keeps_launcher(vmi: VirtualMachineInstance) -> bool:
    """A failed VMI may ask to keep its launcher pod for debugging."""
    annotations = _meta(vmi).annotations or {}
    return vmi.phase == _Phase.FAILED and annotations.get(KEEP_LAUNCHER_AFTER_FAILURE_ANNOTATION) == "true"


def _uid(vmi: VirtualMachineInstance) -> str:
    return _meta(vmi).uid or ""


def _meta(vmi: VirtualMachineInstance | VirtualMachine) -> ObjectMeta:
    if vmi.metadata is None:
        raise SyncError("metadata: required", FAILED_CREATE_POD_REASON, requeue=False)
    return vmi.metadata
