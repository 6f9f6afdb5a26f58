"""The VM controller: keeps a VM's VMI in line with its run strategy and reports the VM's status.

One VMI per VM, named like the VM and owned by it, so a restarted controller finds what it created
instead of creating it again; expectations hold the VM back until the informer has shown its own
creations and deletions. Volume hotplug requests in the VM's status reach its template and its VMI
through :mod:`.volumerequests`. The DataVolumes of the VM's ``dataVolumeTemplates`` are created and
waited for before the VMI (:mod:`.vmdatavolumes`). Under the LiveUpdate rollout strategy the changes a
running VMI can take (CPU sockets, guest memory, node selector, affinity, tolerations) are patched into it
(:mod:`.liveupdate`); the others set RestartRequired (:mod:`.restartrequired`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES, EventSink, KubeApi
from kubevirt.client.errors import AlreadyExistsError, ApiError, NotFoundError
from kubevirt.client.resources import CONTROLLER_REVISIONS
from kubevirt.controller import RequeueAfter, Store, UIDTrackingControllerExpectations, key_for, key_of
from kubevirt.controller.store import NAMESPACE_INDEX, OWNER_INDEX
from kubevirt.defaults import DefaultingError
from kubevirt.instancetype import expand_vmi
from kubevirt.instancetype.conflict import joined_paths
from kubevirt.instancetype.preference_apply import apply_device_preferences
from kubevirt.log import get_logger
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_controller.watch.cloneauth import CloneAuthorizer
from kubevirt.virt_controller.watch.common import (
    Clock,
    Enqueue,
    SyncError,
    controller_ref,
    controller_ref_of_dict,
    describe_api_error,
    finalizers_patch,
    format_time,
    owner_reference,
    utc_now,
    write_api_version_stamp,
)
from kubevirt.virt_controller.watch.conditions import (
    TRUE,
    get_condition,
    has_condition,
    not_ready,
    remove_condition,
    update_condition,
)
from kubevirt.virt_controller.watch.datavolumes import DataVolumeCache
from kubevirt.virt_controller.watch.evacuation import is_migrating
from kubevirt.virt_controller.watch.firmware import calculate_legacy_uuid
from kubevirt.virt_controller.watch.instancetype import (
    STORE_REVISION_ERROR_FORMAT,
    InstancetypeStores,
    InstancetypeSync,
    Selection,
    StoreRevisionError,
)
from kubevirt.virt_controller.watch.liveupdate import (
    LiveUpdateError,
    Outcome,
    affinity_change,
    annotations_change,
    cpu_change,
    memory_change,
    tolerations_change,
)
from kubevirt.virt_controller.watch.printable import VMState, printable_status
from kubevirt.virt_controller.watch.refmanager import adopt
from kubevirt.virt_controller.watch.restartrequired import (
    latest_start_spec,
    restart_required,
    start_revision,
    start_revisions,
)
from kubevirt.virt_controller.watch.runstrategy import (
    first_request_done,
    has_start_paused_request,
    has_start_request,
    has_stop_request_for,
)
from kubevirt.virt_controller.watch.startfailure import seconds_until_retry, sync_start_failure
from kubevirt.virt_controller.watch.vmdatavolumes import DataVolumeSyncError, VMDataVolumes
from kubevirt.virt_controller.watch.volumerequests import (
    DECLARATIVE_HOTPLUG_VOLUMES_GATE,
    FAILED_UPDATE_ERROR_REASON,
    HOTPLUG_VOLUME_ERROR_REASON,
    HOTPLUG_VOLUMES_GATE,
    UPDATE_VOLUMES_STRATEGY_MIGRATION,
    VMIVolumes,
    apply_volume_request,
    declarative_hotplug_patch,
    pending_requests,
    vmi_volume_calls,
)
from kubevirt.virt_controller.watch.volumestatus import claim_name
from kubevirt_api.core.v1 import (
    Firmware,
    Input,
    StateChangeRequestAction,
    VirtualMachine,
    VirtualMachineCondition,
    VirtualMachineConditionType,
    VirtualMachineInstance,
    VirtualMachineInstanceConditionType,
    VirtualMachineInstancePhase,
    VirtualMachineInstanceSpec,
    VirtualMachineInstanceStatus,
    VirtualMachineRunStrategy,
    VirtualMachineStateChangeRequest,
    VirtualMachineStatus,
)
from kubevirt_api.core.v1.constants import (
    API_VERSION,
    CREATE_MIGRATION_TARGET,
    IMMEDIATE_DATA_VOLUME_CREATION,
    VIRTUAL_MACHINE_CONTROLLER_FINALIZER,
    VIRTUAL_MACHINE_GENERATION_ANNOTATION,
)
from kubevirt_api.core.v1.defaults import set_object_defaults_virtual_machine_instance
from kubevirt_api.instancetype.v1beta1 import (
    VirtualMachineClusterInstancetype,
    VirtualMachineClusterPreference,
    VirtualMachineInstancetype,
    VirtualMachinePreference,
)
from kubevirt_api.k8s.meta_v1 import ObjectMeta

FAILED_CREATE_REASON: Final = "FailedCreate"
FAILED_DELETE_REASON: Final = "FailedDelete"
SUCCESSFUL_CREATE_REASON: Final = "SuccessfulCreate"
SUCCESSFUL_DELETE_REASON: Final = "SuccessfulDelete"
FIRMWARE_UUID_ERROR_REASON: Final = "FirmwareUUIDError"
ORPHAN_FINALIZER: Final = "orphan"
VMI_NOT_EXISTS_REASON: Final = "VMINotExists"
VMI_CONDITION_MISSING_REASON: Final = "VMIConditionMissing"
HOTPLUG_CPU_ERROR_REASON: Final = "HotPlugCPUError"
AFFINITY_CHANGE_ERROR_REASON: Final = "AffinityChangeError"
TOLERATIONS_CHANGE_ERROR_REASON: Final = "TolerationsChangeError"
HOTPLUG_MEMORY_ERROR_REASON: Final = "HotPlugMemoryError"
ANNOTATIONS_CHANGE_ERROR_REASON: Final = "AnnotationsChangeError"
# VM conditions the controller sets itself rather than mirroring them from the VMI.
_NOT_MIRRORED: Final = frozenset(
    {
        VirtualMachineConditionType.READY,
        VirtualMachineConditionType.FAILURE,
        VirtualMachineConditionType.RESTART_REQUIRED,
    }
)
_DECENTRALIZED_MIGRATION_RECHECK_SECONDS: Final = 2.0
_CPU_CHANGE_ERROR: Final = "Error encountered while handling CPU change request"
CLAIM_BOUND: Final = "Bound"  # a PersistentVolumeClaim's status.phase once bound to a volume


class VMController:
    """Reconciles VirtualMachines. Informers: VMs (reconciled) and VMIs (owned, same key), the
    instance types and preferences VMs select (read only; without any of their stores given, VMs'
    selections are not expanded), PVCs (read only, for the printable status) and CDI's DataVolumes
    (owned; ``data_volumes`` gives their cache, None while CDI is not installed)."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        vm_store: Store[VirtualMachine],
        vmi_store: Store[VirtualMachineInstance],
        expectations: UIDTrackingControllerExpectations,
        enqueue: Enqueue,
        clock: Clock = utc_now,
        rng: random.Random | None = None,
        instancetype_store: Store[VirtualMachineInstancetype] | None = None,
        cluster_instancetype_store: Store[VirtualMachineClusterInstancetype] | None = None,
        preference_store: Store[VirtualMachinePreference] | None = None,
        cluster_preference_store: Store[VirtualMachineClusterPreference] | None = None,
        revision_store: Store[Any] | None = None,
        config: Callable[[], ClusterConfig] = ClusterConfig,
        vmi_volumes: VMIVolumes | None = None,
        pvc_store: Store[dict[str, Any]] | None = None,
        data_volumes: DataVolumeCache | None = None,
        clone_authorizer: CloneAuthorizer | None = None,
    ) -> None:
        self._config = config
        # The claims the VMs' templates name (the printable status WaitingForVolumeBinding); read only.
        self._pvcs = pvc_store
        # virt-api's addvolume/removevolume subresources of VMIs, which volume requests are handed to.
        self._vmi_volumes = vmi_volumes
        stores = (instancetype_store, cluster_instancetype_store, preference_store, cluster_preference_store)
        self._instancetypes = (
            InstancetypeSync(api=api, stores=InstancetypeStores(*stores, revisions=revision_store))
            if any(store is not None for store in stores)
            else None
        )
        # Start revisions (what a running VMI started from) are kept only with a revision cache.
        self._revisions = revision_store
        self._api = api
        self._events = events
        self._vms = vm_store
        self._vmis = vmi_store
        self._expectations = expectations
        # The DataVolumes each VM created and has not seen in the cache yet.
        self._dv_expectations = UIDTrackingControllerExpectations()
        self._data_volumes = VMDataVolumes(
            api=api,
            events=events,
            expectations=self._dv_expectations,
            data_volumes=data_volumes or (lambda: None),
            pvc_store=pvc_store,
            authorizer=clone_authorizer,
        )
        self._enqueue = enqueue
        self._clock = clock
        self._rng = rng or random.Random()
        self._log = get_logger(controller="vm")

    # -- reconcile -------------------------------------------------------------------------------------

    def reconcile(self, key: str) -> None:
        cached = self._vms.get_by_key(key)
        if cached is None:
            self._expectations.delete_expectations(key)
            self._dv_expectations.delete_expectations(key)
            return
        if write_api_version_stamp(self._api, VIRTUAL_MACHINES, cached):
            return
        vm = cached.model_copy(deep=True)
        vmi = self._claimed_vmi(vm, key)
        self._data_volumes.claim(vm)
        run = _Run(vm=vm, now=self._clock())
        sync_error: SyncError | None = None
        try:
            self._sync(run, vmi, key)
        except SyncError as err:
            sync_error = err
            self._log.info(
                "reconciling the VirtualMachine failed", key=key, reason=err.reason, error=err.message
            )
        self._update_status(cached, run, vmi, sync_error, key)
        if sync_error is not None and sync_error.requeue:
            raise sync_error
        if run.requeue_after is not None:
            raise RequeueAfter(run.requeue_after)

    def _claimed_vmi(self, vm: VirtualMachine, key: str) -> VirtualMachineInstance | None:
        """The VMI of the same name if this VM controls it; an orphan is adopted, another's ignored."""
        vmi = self._vmis.get_by_key(key)
        if vmi is None:
            return None
        ref = controller_ref(vmi.metadata)
        vm_uid = _meta(vm).uid
        if ref is not None:
            return vmi if ref.uid == vm_uid else None
        if _meta(vm).deletion_timestamp is not None or vmi.is_marked_for_deletion():
            return None
        return self._adopt(vm, vmi)

    def _adopt(self, vm: VirtualMachine, vmi: VirtualMachineInstance) -> VirtualMachineInstance:
        meta = _meta(vm)
        owner = owner_reference(API_VERSION, "VirtualMachine", meta.name or "", meta.uid or "")
        return VirtualMachineInstance.from_dict(adopt(self._api, VIRTUAL_MACHINE_INSTANCES, vmi, owner))

    def _sync(self, run: _Run, vmi: VirtualMachineInstance | None, key: str) -> None:
        if not self._satisfied_expectations(key):
            return
        meta = _meta(run.vm)
        if meta.deletion_timestamp is not None:
            if vmi is None or ORPHAN_FINALIZER in (meta.finalizers or ()):
                self._set_vm_finalizer(run, present=False)
            else:
                self._stop(run, vmi, key)
            return
        self._set_vm_finalizer(run, present=True)
        if self._sync_instancetypes(run):
            return  # the VM itself was rewritten: its update brings it back
        try:
            strategy = run.vm.run_strategy()
        except ValueError as err:
            raise SyncError(f"Error fetching RunStrategy: {err}", FAILED_CREATE_REASON) from None
        if not self._sync_data_volumes(run, strategy, key):
            return
        self._sync_run_strategy(run, vmi, strategy, key)
        self._sync_firmware_uuid(run)
        restart_required = self._sync_restart_required(run, vmi)
        if not run.started_or_stopped:
            # A VMI created or deleted in this pass is not in the cache yet: its volumes wait for the next.
            self._sync_volume_requests(run, vmi)
            self._sync_declarative_hotplug(run, vmi)
            self._sync_annotations_to_vmi(run, vmi)
            # Live updates wait while the VM needs a restart anyway.
            kind = VirtualMachineConditionType.RESTART_REQUIRED
            if (
                self._config().live_update
                and not restart_required
                and not has_condition(run.status.conditions, kind)
            ):
                self._sync_live_updates(run, vmi)

    def _satisfied_expectations(self, key: str) -> bool:
        return self._expectations.satisfied_expectations(
            key
        ) and self._dv_expectations.satisfied_expectations(key)

    def _sync_data_volumes(self, run: _Run, strategy: str, key: str) -> bool:
        """Creates the templates' DataVolumes up front (unless the VM's annotation defers that to its
        start); False while they are not ready and the VM is not halted (the pass stops there)."""
        annotations = _meta(run.vm).annotations or {}
        if annotations.get(IMMEDIATE_DATA_VOLUME_CREATION) == "false":
            return True
        try:
            ready = self._data_volumes.ensure(run.vm, key)
        except DataVolumeSyncError as err:
            raise SyncError(
                f"Error encountered while creating DataVolumes: {err}", FAILED_CREATE_REASON
            ) from err
        # KubeVirt goes on for a halted VM, so that one with a VMI still stops it.
        return ready or strategy == VirtualMachineRunStrategy.HALTED

    def _sync_instancetypes(self, run: _Run) -> bool:
        """Checks that what the VM selects exists, stores ControllerRevisions of it and records them in
        the status (one status patch), then selects the stored copies for the VMI. Under the
        ``expand`` policies the selection is written into the VM instead; True when the VM was
        rewritten so (this pass stops there)."""
        vm = run.vm
        sync = self._instancetypes
        if sync is None or (vm.spec.instancetype is None and vm.spec.preference is None):
            return False
        sync.select(vm)
        cluster = self._config()
        if cluster.instancetype_reference_policy in ("expand", "expandAll"):
            written = sync.expand_into_vm(vm, cluster)
            if written is not None:
                run.replace(written, take_status=True)
                return True
            run.selection = sync.select(vm)
            return False
        try:
            status_patch = sync.store(vm)
            if status_patch:
                meta = _meta(vm)
                patched = self._api.patch(
                    VIRTUAL_MACHINES,
                    meta.namespace,
                    meta.name or "",
                    status_patch,
                    patch_type="merge",
                    subresource="status",
                )
                run.replace(VirtualMachine.from_dict(patched), take_status=True)
        except (StoreRevisionError, ApiError) as err:
            message = STORE_REVISION_ERROR_FORMAT.format(
                describe_api_error(err) if isinstance(err, ApiError) else err
            )
            self._events.event(vm, "Warning", FAILED_CREATE_REASON, message)
            raise SyncError(message, FAILED_CREATE_REASON) from err
        run.selection = sync.select(run.vm)
        return False

    # -- run strategies --------------------------------------------------------------------------------

    def _sync_run_strategy(
        self, run: _Run, vmi: VirtualMachineInstance | None, strategy: str, key: str
    ) -> None:
        vm = run.vm
        if strategy == VirtualMachineRunStrategy.ALWAYS:
            if vmi is not None:
                if has_stop_request_for(vm, vmi) or vmi.is_final():
                    if vmi.is_decentralized_migration():
                        self._finish_decentralized_migration(run, vmi)
                        return
                    self._stop(run, vmi, key)
                return
            self._start_after_backoff(run, key)
        elif strategy == VirtualMachineRunStrategy.RERUN_ON_FAILURE:
            if vmi is not None:
                failed = vmi.phase == VirtualMachineInstancePhase.FAILED
                if not vmi.is_marked_for_deletion() and (has_stop_request_for(vm, vmi) or vmi.is_final()):
                    self._stop(run, vmi, key)
                    if failed:
                        self._append_start_request(run)
                return
            recorded = vm.status.run_strategy if vm.status is not None else None
            if has_start_request(vm) or recorded != strategy:
                self._start_after_backoff(run, key)
        elif strategy == VirtualMachineRunStrategy.MANUAL:
            if vmi is not None:
                if has_stop_request_for(vm, vmi):
                    self._stop(run, vmi, key)
            elif has_start_request(vm):
                self._start(run, key)
        elif strategy == VirtualMachineRunStrategy.HALTED:
            if vmi is not None:
                self._stop(run, vmi, key)
            elif has_start_request(vm):
                self._switch_halted_to_running(run)
        elif strategy == VirtualMachineRunStrategy.ONCE:
            if vmi is None:
                self._start(run, key)
        elif strategy == VirtualMachineRunStrategy.WAIT_AS_RECEIVER:
            if vmi is None:
                self._start(run, key)
            elif not vmi.is_migration_target() and not vmi.is_migration_completed():
                raise SyncError("Found non receiver VMI while VM is receiver", FAILED_CREATE_REASON)
        else:
            raise SyncError(f"unknown runstrategy: {strategy}", FAILED_CREATE_REASON)

    def _start_after_backoff(self, run: _Run, key: str) -> None:
        wait = seconds_until_retry(run.vm, run.now)
        if wait > 0:
            self._log.info("delaying the start after failed starts", key=key, seconds=wait)
            run.requeue_after = float(wait)
            return
        self._start(run, key)

    def _finish_decentralized_migration(self, run: _Run, vmi: VirtualMachineInstance) -> None:
        if vmi.is_migration_completed():
            # The VM now runs elsewhere: halting it lets the next pass remove this VMI.
            spec = run.vm.spec.model_copy(update={"run_strategy": VirtualMachineRunStrategy.HALTED})
            updated = run.vm.model_copy(update={"spec": spec}).to_dict()
            run.replace(
                VirtualMachine.from_dict(self._api.update(VIRTUAL_MACHINES, _meta(run.vm).namespace, updated))
            )
            return
        run.requeue_after = _DECENTRALIZED_MIGRATION_RECHECK_SECONDS

    def _switch_halted_to_running(self, run: _Run) -> None:
        """A start request on a halted VM (virtctl start --paused) flips it to running, then requeues."""
        vm = run.vm.model_copy(deep=True)
        if vm.spec.run_strategy is not None:
            vm.spec.run_strategy = VirtualMachineRunStrategy.ALWAYS
        else:
            vm.spec.running = True
        try:
            run.replace(
                VirtualMachine.from_dict(
                    self._api.update(VIRTUAL_MACHINES, _meta(vm).namespace, vm.to_dict())
                )
            )
        except Exception as err:
            raise SyncError(f"Failure while starting VMI: {err}", FAILED_CREATE_REASON) from err
        # The update's watch event brings the VM back; the next pass starts it.

    def _sync_firmware_uuid(self, run: _Run) -> None:
        """A VM without a firmware UUID gets the one its VMIs use, so the guest sees one machine."""
        template_spec = run.vm.spec.template.spec
        if template_spec is None:
            return
        current = template_spec.domain.firmware
        if current is not None and current.uuid:
            return
        meta = _meta(run.vm)
        firmware = (current or Firmware()).model_copy(update={"uuid": calculate_legacy_uuid(meta.name or "")})
        path = "/spec/template/spec/domain/firmware"
        ops = [
            {"op": "test", "path": path, "value": current.to_dict() if current is not None else None},
            {"op": "add", "path": path, "value": firmware.to_dict()},
        ]
        try:
            patched = self._api.patch(VIRTUAL_MACHINES, meta.namespace, meta.name or "", ops)
        except Exception as err:
            raise SyncError(
                f"error encountered when trying to patch VM firmware: {err}", FIRMWARE_UUID_ERROR_REASON
            ) from err
        run.replace(VirtualMachine.from_dict(patched))

    # -- volume hotplug --------------------------------------------------------------------------------

    def _sync_volume_requests(self, run: _Run, vmi: VirtualMachineInstance | None) -> None:
        """KubeVirt's ``handleVolumeRequests``: each request goes into the template and to the VMI."""
        requests = run.status.volume_requests or []
        if not requests:
            return
        template = run.vm.spec.template.spec
        if template is None:
            return
        spec = template.model_copy(deep=True)
        for request in requests:
            apply_volume_request(spec, request)
        for call in vmi_volume_calls(requests, vmi):
            assert vmi is not None
            self._hand_to_vmi(vmi, call)
        self._write_template_storage(run, template.to_dict(), spec.to_dict())

    def _hand_to_vmi(self, vmi: VirtualMachineInstance, call: tuple[str, dict[str, Any]]) -> None:
        action, options = call
        meta = _meta(vmi)
        try:
            if self._vmi_volumes is None:
                raise RuntimeError("the VMI volume subresources are not configured")
            if action == "add":
                self._vmi_volumes.add_volume(meta.namespace, meta.name or "", options)
            else:
                self._vmi_volumes.remove_volume(meta.namespace, meta.name or "", options)
        except Exception as err:
            message = describe_api_error(err)
            raise SyncError(
                f"Error encountered while handling volume hotplug requests: {message}",
                HOTPLUG_VOLUME_ERROR_REASON,
            ) from err

    def _write_template_storage(self, run: _Run, before: dict[str, Any], after: dict[str, Any]) -> None:
        """Writes the template's volumes and disks if they changed, only onto the version they were
        computed from (a ``test`` of the resourceVersion; a stale cache fails it and the VM comes back)."""
        ops: list[dict[str, Any]] = []
        base = "/spec/template/spec"
        was_devices = (before.get("domain") or {}).get("devices")
        now_devices = (after.get("domain") or {}).get("devices") or {}
        if (before.get("volumes") or []) != (after.get("volumes") or []):
            ops.extend(_set_or_remove(f"{base}/volumes", "volumes" in before, after.get("volumes") or []))
        if ((was_devices or {}).get("disks") or []) != (now_devices.get("disks") or []):
            if was_devices is None:
                ops.append({"op": "add", "path": f"{base}/domain/devices", "value": now_devices})
            else:
                present = "disks" in was_devices
                ops.extend(
                    _set_or_remove(f"{base}/domain/devices/disks", present, now_devices.get("disks") or [])
                )
        if not ops:
            return
        meta = _meta(run.vm)
        ops.insert(0, {"op": "test", "path": "/metadata/resourceVersion", "value": meta.resource_version})
        try:
            patched = self._api.patch(VIRTUAL_MACHINES, meta.namespace, meta.name or "", ops)
        except Exception as err:
            raise SyncError(
                "Error encountered when trying to update vm according to add volume and/or memory dump "
                f"requests: {describe_api_error(err)}",
                FAILED_UPDATE_ERROR_REASON,
            ) from err
        run.replace(VirtualMachine.from_dict(patched))

    def _sync_declarative_hotplug(self, run: _Run, vmi: VirtualMachineInstance | None) -> None:
        """Under DeclarativeHotplugVolumes alone, the running VMI takes the template's hotpluggable
        volumes (``storagehotplug.HandleDeclarativeVolumes``)."""
        config = self._config()
        if config.enabled(HOTPLUG_VOLUMES_GATE) or not config.enabled(DECLARATIVE_HOTPLUG_VOLUMES_GATE):
            return
        if run.vm.spec.update_volumes_strategy == UPDATE_VOLUMES_STRATEGY_MIGRATION:
            return
        ops = declarative_hotplug_patch(run.vm, vmi)
        if not ops or vmi is None:
            return
        meta = _meta(vmi)
        try:
            self._api.patch(VIRTUAL_MACHINE_INSTANCES, meta.namespace, meta.name or "", ops)
        except Exception as err:
            raise SyncError(
                f"Error encountered while handling declarative hotplug volumes: {describe_api_error(err)}",
                HOTPLUG_VOLUME_ERROR_REASON,
            ) from err

    # -- start and stop --------------------------------------------------------------------------------

    def _start(self, run: _Run, key: str) -> None:
        vm = run.vm
        status = run.status
        try:
            ready = self._data_volumes.ensure(vm, key)
        except DataVolumeSyncError as err:
            raise SyncError(f"Failure while starting VMI: {err}", FAILED_CREATE_REASON) from err
        if not ready:
            self._log.debug("waiting for the DataVolumes to be created, delaying the start", key=key)
            return
        if has_condition(status.conditions, VirtualMachineConditionType.MANUAL_RECOVERY_REQUIRED, TRUE):
            self._log.error("the VM has the ManualRecoveryRequired condition set and is not started", key=key)
            return
        status.conditions = remove_condition(status.conditions, VirtualMachineConditionType.RESTART_REQUIRED)
        try:
            vmi = build_vmi(vm, run.selection)
        except SyncError as err:
            message = f"Error creating virtual machine instance: Failed to apply instancetype: {err.message}"
            self._events.event(vm, "Warning", FAILED_CREATE_REASON, message)
            raise
        meta = _meta(vm)
        revision_name = self._record_start(vm)
        if revision_name is not None:
            # No status subresource on VMIs: the status written with the new object is kept.
            vmi.status = (vmi.status or VirtualMachineInstanceStatus()).model_copy(
                update={"virtual_machine_revision_name": revision_name}
            )
        run.started_or_stopped = True
        self._expectations.expect_creations(key, 1)
        try:
            created = self._api.create(VIRTUAL_MACHINE_INSTANCES, meta.namespace, vmi.to_dict())
        except Exception as err:
            self._expectations.creation_observed(key)
            message = describe_api_error(err)
            self._events.event(
                vm, "Warning", FAILED_CREATE_REASON, f"Error creating virtual machine instance: {message}"
            )
            raise SyncError(f"Failure while starting VMI: {message}", FAILED_CREATE_REASON) from err
        name = created.get("metadata", {}).get("name", "")
        self._log.info("started the VM by creating its VMI", key=key, vmi=name)
        self._events.event(
            vm,
            "Normal",
            SUCCESSFUL_CREATE_REASON,
            f"Started the virtual machine by creating the new virtual machine instance {name}",
        )

    def _stop(self, run: _Run, vmi: VirtualMachineInstance | None, key: str) -> None:
        if vmi is None or vmi.is_marked_for_deletion():
            return
        vmi_meta = _meta(vmi)
        uid = vmi_meta.uid or ""
        self._expectations.expect_deletions_by_uid(key, [uid])
        try:
            self._api.delete(VIRTUAL_MACHINE_INSTANCES, vmi_meta.namespace, vmi_meta.name or "", uid=uid)
        except Exception as err:
            self._expectations.deletion_observed_uid(key, uid)
            self._events.event(
                run.vm,
                "Warning",
                FAILED_DELETE_REASON,
                f"Error deleting virtual machine instance {vmi_meta.name}: {describe_api_error(err)}",
            )
            raise SyncError(f"Failure attempting to delete VMI: {err}", FAILED_DELETE_REASON) from err
        status = run.status
        status.conditions = remove_condition(status.conditions, VirtualMachineConditionType.RESTART_REQUIRED)
        self._delete_start_revisions(run.vm)
        run.started_or_stopped = True
        self._events.event(
            run.vm,
            "Normal",
            SUCCESSFUL_DELETE_REASON,
            f"Stopped the virtual machine by deleting the virtual machine instance {uid}",
        )

    # -- restart required ------------------------------------------------------------------------------

    def _record_start(self, vm: VirtualMachine) -> str | None:
        """Stores the spec the VMI about to be created starts from, replacing older records; returns the
        ControllerRevision's name, which the VMI's status names."""
        if self._revisions is None:
            return None
        wanted = start_revision(vm)
        self._delete_start_revisions(vm, keep=wanted["metadata"]["name"])
        try:
            self._api.create(CONTROLLER_REVISIONS, wanted["metadata"]["namespace"], wanted)
        except AlreadyExistsError:
            pass  # this generation's start was recorded by an earlier pass
        except ApiError as err:
            message = f"Failed to create controller revision for VirtualMachine: {describe_api_error(err)}"
            raise SyncError(message, FAILED_CREATE_REASON) from err
        return str(wanted["metadata"]["name"])

    def _delete_start_revisions(self, vm: VirtualMachine, keep: str | None = None) -> None:
        if self._revisions is None:
            return
        for revision in start_revisions(vm, self._owned_revisions(vm)):
            name = revision["metadata"]["name"]
            if name == keep:
                continue
            try:
                self._api.delete(CONTROLLER_REVISIONS, _meta(vm).namespace, name)
            except NotFoundError:
                continue

    def _owned_revisions(self, vm: VirtualMachine) -> list[Any]:
        assert self._revisions is not None
        return self._revisions.by_index(OWNER_INDEX, _meta(vm).uid or "")

    def _sync_restart_required(self, run: _Run, vmi: VirtualMachineInstance | None) -> bool:
        """Sets RestartRequired while a VMI runs when a field it cannot take changed, and clears it
        otherwise (the live updates may set it again); True when it was set. Starts and stops clear it
        themselves."""
        if self._revisions is None or vmi is None or vmi.is_marked_for_deletion() or run.started_or_stopped:
            return False
        started = latest_start_spec(run.vm, self._owned_revisions(run.vm))
        if started is None:
            return False
        try:
            message = restart_required(
                started, run.vm, vmi, self._expanded, live_update=self._config().live_update
            )
        except SyncError as err:
            # What the VM selects cannot be expanded right now: the condition stays as it is.
            self._log.info("cannot tell whether a restart is required", reason=err.message)
            return False
        status = run.status
        kind = VirtualMachineConditionType.RESTART_REQUIRED
        conditions = list(status.conditions or ())
        for index, condition in enumerate(conditions):
            if condition.type == kind:
                run.cleared_restart_required = (index, condition)
        status.conditions = remove_condition(conditions, kind)
        if message is None:
            return False
        self._set_restart_required(run, message)
        return True

    def _set_restart_required(self, run: _Run, message: str) -> None:
        """KubeVirt's ``setRestartRequired``: the first message of a pass stays. The condition cleared
        earlier in this pass comes back as it was when its message is the same, so that an unchanged
        outcome costs no status write."""
        status = run.status
        kind = VirtualMachineConditionType.RESTART_REQUIRED
        if has_condition(status.conditions, kind):
            return
        conditions = list(status.conditions or ())
        cleared = run.cleared_restart_required
        if cleared is not None and cleared[1].status == TRUE and cleared[1].message == message:
            conditions.insert(cleared[0], cleared[1])
        else:
            conditions.append(
                VirtualMachineCondition(
                    type=kind, status=TRUE, message=message, last_transition_time=format_time(run.now)
                )
            )
        status.conditions = conditions

    def _sync_annotations_to_vmi(self, run: _Run, vmi: VirtualMachineInstance | None) -> None:
        """The annotations a running VMI follows its VM in (see :func:`.liveupdate.annotations_change`)."""
        if vmi is None or vmi.is_marked_for_deletion():
            return
        patch = annotations_change(run.vm, vmi)
        if not patch:
            return
        meta = _meta(vmi)
        try:
            self._api.patch(VIRTUAL_MACHINE_INSTANCES, meta.namespace, meta.name or "", patch)
        except Exception as err:  # a stale cache fails the patch's test: the retry reads again
            message = f"Error encountered while handling annotation sync request: {describe_api_error(err)}"
            raise SyncError(message, ANNOTATIONS_CHANGE_ERROR_REASON) from err

    # -- live updates ----------------------------------------------------------------------------------

    def _sync_live_updates(self, run: _Run, vmi: VirtualMachineInstance | None) -> None:
        """KubeVirt's CPU, node affinity, tolerations and memory change handlers, in its order: each
        patches the running VMI to the template (instance type and preference applied) or sets
        RestartRequired; a change that has to wait fails the pass, which is retried."""
        if vmi is None or vmi.is_marked_for_deletion():
            return
        config = self._config()
        architecture = config.default_architecture
        migrating = is_migrating(vmi, run.now)
        try:
            spec = self._expanded(run.vm)
        except SyncError as err:
            # KubeVirt's first handler, the CPU one, is where applying the instance type fails.
            message = f"{_CPU_CHANGE_ERROR}: {err.message}"
            raise SyncError(message, HOTPLUG_CPU_ERROR_REASON, requeue=err.requeue) from err
        handlers: tuple[tuple[str, str, Callable[[], Outcome]], ...] = (
            (
                _CPU_CHANGE_ERROR,
                HOTPLUG_CPU_ERROR_REASON,
                lambda: cpu_change(
                    spec,
                    vmi,
                    migrating=migrating,
                    cpu_allocation_ratio=config.launcher.cpu_allocation_ratio,
                    default_architecture=architecture,
                ),
            ),
            (
                "Error encountered while handling node affinity change request",
                AFFINITY_CHANGE_ERROR_REASON,
                lambda: affinity_change(spec, vmi, migrating=migrating),
            ),
            (
                "Error encountered while handling tolerations change request",
                TOLERATIONS_CHANGE_ERROR_REASON,
                lambda: tolerations_change(spec, vmi, migrating=migrating),
            ),
            (
                "error encountered while handling memory hotplug requests",
                HOTPLUG_MEMORY_ERROR_REASON,
                lambda: memory_change(spec, vmi, migrating=migrating, default_architecture=architecture),
            ),
        )
        meta = _meta(vmi)
        for prefix, reason, handle in handlers:
            try:
                outcome = handle()
            except LiveUpdateError as err:
                raise SyncError(f"{prefix}: {err}", reason) from err
            for patch in outcome.patches:
                try:
                    self._api.patch(VIRTUAL_MACHINE_INSTANCES, meta.namespace, meta.name or "", patch)
                except Exception as err:  # a stale cache fails the patch's tests: the retry sees more
                    raise SyncError(f"{prefix}: {describe_api_error(err)}", reason) from err
            if outcome.summary is not None:
                self._log.info(outcome.summary, key=key_of(vmi))
            if outcome.restart_required is not None:
                self._set_restart_required(run, outcome.restart_required)

    def _expanded(self, vm: VirtualMachine) -> VirtualMachineInstanceSpec:
        selection = None
        if self._instancetypes is not None and (vm.spec.instancetype or vm.spec.preference):
            selection = self._instancetypes.select(vm)
        return build_vmi(vm, selection).spec

    def _append_start_request(self, run: _Run) -> None:
        """After a failed VMI under RerunOnFailure: queue a start so the next VMI follows the deletion."""
        requests = [r.to_dict() for r in run.status.state_change_requests or ()]
        requests.append(
            VirtualMachineStateChangeRequest(action=StateChangeRequestAction.START_REQUEST).to_dict()
        )
        meta = _meta(run.vm)
        try:
            patched = self._api.patch(
                VIRTUAL_MACHINES,
                meta.namespace,
                meta.name or "",
                [{"op": "add", "path": "/status/stateChangeRequests", "value": requests}],
                subresource="status",
            )
        except Exception as err:
            raise SyncError(f"failed to patch VM with start action: {err}", FAILED_DELETE_REASON) from err
        run.replace(VirtualMachine.from_dict(patched), take_status=True)

    def _set_vm_finalizer(self, run: _Run, *, present: bool) -> None:
        meta = _meta(run.vm)
        finalizers = list(meta.finalizers or ())
        has = VIRTUAL_MACHINE_CONTROLLER_FINALIZER in finalizers
        if has == present:
            return
        wanted = (
            [*finalizers, VIRTUAL_MACHINE_CONTROLLER_FINALIZER]
            if present
            else [f for f in finalizers if f != VIRTUAL_MACHINE_CONTROLLER_FINALIZER]
        )
        patched = self._api.patch(
            VIRTUAL_MACHINES, meta.namespace, meta.name or "", finalizers_patch(meta.finalizers, wanted)
        )
        run.replace(VirtualMachine.from_dict(patched))

    # -- status ----------------------------------------------------------------------------------------

    def _update_status(
        self,
        cached: VirtualMachine,
        run: _Run,
        vmi: VirtualMachineInstance | None,
        sync_error: SyncError | None,
        key: str,
    ) -> None:
        vm = run.vm
        status = run.status
        status.created = True if vmi is not None else None
        ready = (
            vmi is not None and _vmi_condition_status(vmi, VirtualMachineInstanceConditionType.READY) == TRUE
        )
        status.ready = True if ready else None
        if vmi is not None:
            generation = (_meta(vmi).annotations or {}).get(VIRTUAL_MACHINE_GENERATION_ANNOTATION)
            if generation is not None and generation.isdigit():
                status.observed_generation = int(generation)
                status.desired_generation = _meta(vm).generation
        try:
            strategy: str | None = cached.run_strategy()
        except ValueError:
            strategy = None
        if strategy is not None and (status.run_strategy or status.created):
            status.run_strategy = strategy
        if first_request_done(vm, vmi):
            status.state_change_requests = (status.state_change_requests or [])[1:] or None
        if status.volume_requests:
            status.volume_requests = pending_requests(vm) or None
        sync_start_failure(status, strategy or "", vmi, run.now, self._rng)
        _sync_conditions(status, vmi, sync_error, run.now)
        adds, deletes = self._expectations.pending(key)
        state = VMState(
            vm=vm,
            vmi=vmi,
            start_expected=adds > 0,
            stop_expected=deletes > 0,
            now=run.now,
            unbound_claim=self._has_unbound_claim(vm),
            data_volume_error=self._data_volume_error(vm),
            provisioning=self._data_volumes.provisioning(vm),
        )
        status.printable_status = printable_status(state)
        before = cached.status.to_dict() if cached.status is not None else {}
        if status.to_dict() != before:
            self._api.update_status(VIRTUAL_MACHINES, _meta(vm).namespace, vm.to_dict())
        if vmi is not None and (
            vmi.is_final() or (vmi.is_waiting_for_sync() and vmi.is_marked_for_deletion())
        ):
            self._remove_vmi_finalizer(vmi)

    def _data_volume_error(self, vm: VirtualMachine) -> bool:
        message = self._data_volumes.error(vm)
        if message is not None:
            self._log.error("a DataVolume of the VM failed", key=key_of(vm), reason=message)
        return message is not None

    def _has_unbound_claim(self, vm: VirtualMachine) -> bool:
        """KubeVirt's ``HasUnboundPVC``: a claim the template names exists and is not Bound (a missing
        one does not count: the VMI reports that as FailedPvcNotFound)."""
        if self._pvcs is None:
            return False
        namespace = _meta(vm).namespace
        for name in template_claim_names(vm):
            pvc = self._pvcs.get_by_key(key_for(namespace, name))
            if pvc is not None and (pvc.get("status") or {}).get("phase") != CLAIM_BOUND:
                return True
        return False

    def _remove_vmi_finalizer(self, vmi: VirtualMachineInstance) -> None:
        """Once the final VMI is recorded on the VM, it may go."""
        meta = _meta(vmi)
        if VIRTUAL_MACHINE_CONTROLLER_FINALIZER not in (meta.finalizers or ()):
            return
        wanted = [f for f in meta.finalizers or () if f != VIRTUAL_MACHINE_CONTROLLER_FINALIZER]
        self._api.patch(
            VIRTUAL_MACHINE_INSTANCES,
            meta.namespace,
            meta.name or "",
            finalizers_patch(meta.finalizers, wanted),
        )

    # -- informer event handlers -----------------------------------------------------------------------

    def on_vm_add(self, vm: VirtualMachine) -> None:
        self._enqueue(key_of(vm))

    def on_vm_update(self, old: VirtualMachine, new: VirtualMachine) -> None:
        self._enqueue(key_of(new))

    def on_vm_delete(self, vm: VirtualMachine) -> None:
        self._enqueue(key_of(vm))

    def on_vmi_add(self, vmi: VirtualMachineInstance) -> None:
        if vmi.is_marked_for_deletion():
            # Seen first while already being deleted (after a restart): that is no creation of ours.
            self.on_vmi_delete(vmi)
            return
        ref = controller_ref(vmi.metadata)
        if ref is None:
            self._enqueue_same_name(vmi)
            return
        vm = self._resolve(_meta(vmi).namespace, ref.kind, ref.name, ref.uid)
        if vm is not None:
            self._expectations.creation_observed(key_of(vm))
            self._enqueue(key_of(vm))

    def on_vmi_update(self, old: VirtualMachineInstance, new: VirtualMachineInstance) -> None:
        if _meta(old).resource_version == _meta(new).resource_version:
            return  # a resync, nothing changed
        labels_changed = _meta(old).labels != _meta(new).labels
        if new.is_marked_for_deletion():
            self.on_vmi_delete(new)
            if labels_changed:
                self.on_vmi_delete(old)
            return
        new_ref, old_ref = controller_ref(new.metadata), controller_ref(old.metadata)
        if old_ref is not None and old_ref != new_ref:
            previous = self._resolve(_meta(old).namespace, old_ref.kind, old_ref.name, old_ref.uid)
            if previous is not None:
                self._enqueue(key_of(previous))
        if new_ref is not None:
            vm = self._resolve(_meta(new).namespace, new_ref.kind, new_ref.name, new_ref.uid)
            if vm is not None:
                self._enqueue(key_of(vm))
            return
        if labels_changed or old_ref != new_ref:
            self._enqueue_same_name(new)

    def on_vmi_delete(self, vmi: VirtualMachineInstance) -> None:
        ref = controller_ref(vmi.metadata)
        if ref is None:
            return
        vm = self._resolve(_meta(vmi).namespace, ref.kind, ref.name, ref.uid)
        if vm is None:
            return
        self._expectations.deletion_observed_uid(key_of(vm), _meta(vmi).uid or "")
        self._enqueue(key_of(vm))

    def on_pvc_add(self, pvc: dict[str, Any]) -> None:
        """A claim that appears may be the one a VM waits for (KubeVirt's ``addPVC``)."""
        if pvc["metadata"].get("deletionTimestamp") is None:
            self._enqueue_claim_users(pvc)

    def on_pvc_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """A claim that got bound ends WaitingForVolumeBinding. KubeVirt waits for the VMI's next change
        instead; this VM controller skips the VMI write of a pod merely bound to a node (see
        ``vmi._only_pod_nodes_changed``), so the claim's own change is what shows it."""
        if (old.get("status") or {}).get("phase") != (new.get("status") or {}).get("phase"):
            self._enqueue_claim_users(new)

    def on_pvc_delete(self, pvc: dict[str, Any]) -> None:
        pass  # the VMI reports a missing claim; its change brings the VM back

    def on_data_volume_add(self, dv: dict[str, Any]) -> None:
        """KubeVirt's ``addDataVolume``: a DataVolume seen being deleted counts as a deletion."""
        if dv["metadata"].get("deletionTimestamp") is not None:
            self.on_data_volume_delete(dv)
            return
        vm = self._data_volume_owner(dv)
        if vm is not None:
            self._dv_expectations.creation_observed(key_of(vm))
        self._enqueue_data_volume_users(dv)

    def on_data_volume_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return  # a resync, nothing changed
        if new["metadata"].get("deletionTimestamp") is not None:
            self.on_data_volume_delete(new)
            if old["metadata"].get("labels") != new["metadata"].get("labels"):
                self.on_data_volume_delete(old)
            return
        if controller_ref_of_dict(old) != controller_ref_of_dict(new):
            previous = self._data_volume_owner(old)
            if previous is not None:
                self._enqueue(key_of(previous))
        self._enqueue_data_volume_users(new)

    def on_data_volume_delete(self, dv: dict[str, Any]) -> None:
        vm = self._data_volume_owner(dv)
        if vm is not None:
            self._dv_expectations.deletion_observed_uid(key_of(vm), dv["metadata"].get("uid") or "")
        self._enqueue_data_volume_users(dv)

    def _data_volume_owner(self, dv: dict[str, Any]) -> VirtualMachine | None:
        ref = controller_ref_of_dict(dv)
        if ref is None:
            return None
        namespace = dv["metadata"].get("namespace")
        return self._resolve(namespace, str(ref.get("kind")), str(ref.get("name")), str(ref.get("uid")))

    def _enqueue_data_volume_users(self, dv: dict[str, Any]) -> None:
        """The VM owning the DataVolume and the VMs whose templates use it (KubeVirt's
        ``queueVMsForDataVolume``)."""
        owner = self._data_volume_owner(dv)
        if owner is not None:
            self._enqueue(key_of(owner))
        self._enqueue_claim_users(dv)

    def _enqueue_claim_users(self, pvc: dict[str, Any]) -> None:
        meta = pvc["metadata"]
        name = meta.get("name")
        for vm in self._vms.by_index(NAMESPACE_INDEX, meta.get("namespace") or ""):
            if name in template_claim_names(vm):
                self._enqueue(key_of(vm))

    def _resolve(self, namespace: str | None, kind: str, name: str, uid: str) -> VirtualMachine | None:
        if kind != "VirtualMachine":
            return None
        vm = self._vms.get_by_key(key_for(namespace, name))
        return vm if vm is not None and _meta(vm).uid == uid else None

    def _enqueue_same_name(self, vmi: VirtualMachineInstance) -> None:
        """An orphan VMI may be adopted by the VM of its name."""
        key = key_of(vmi)
        if self._vms.get_by_key(key) is not None:
            self._enqueue(key)


class _Run:
    """The VM being worked on in one pass; writes replace it with the server's answer."""

    def __init__(self, *, vm: VirtualMachine, now: datetime) -> None:
        self.vm = vm
        self.now = now
        self.requeue_after: float | None = None
        # The instance type and preference the VM selects, once found.
        self.selection = Selection()
        # A VMI was created or deleted in this pass: the caches do not show it yet.
        self.started_or_stopped = False
        # The RestartRequired condition this pass cleared, and where it stood among the conditions.
        self.cleared_restart_required: tuple[int, VirtualMachineCondition] | None = None
        if vm.status is None:
            vm.status = VirtualMachineStatus()

    @property
    def status(self) -> VirtualMachineStatus:
        assert self.vm.status is not None
        return self.vm.status

    def replace(self, fresh: VirtualMachine, *, take_status: bool = False) -> None:
        """Takes the written object's metadata and spec; the status too when the write was to it."""
        status = fresh.status if take_status and fresh.status is not None else self.status
        self.vm = fresh.model_copy(update={"status": status})


def build_vmi(vm: VirtualMachine, selection: Selection | None = None) -> VirtualMachineInstance:
    """The VMI a VM starts: its template with the scheme's defaults, named and owned like the VM.

    The firmware UUID, when the template has none, is derived from the VM's name so that it stays the
    same across restarts. The selected instance type and preference, if any, are applied as KubeVirt
    does; a conflict with the template fails the start.
    """
    selection = selection or Selection()
    preference = selection.preference.spec if selection.preference is not None else None
    meta = _meta(vm)
    template = vm.spec.template
    template_meta = template.metadata.model_copy(deep=True) if template.metadata is not None else ObjectMeta()
    if template.spec is None:
        raise SyncError("spec.template.spec: required", FAILED_CREATE_REASON, requeue=False)
    spec = template.spec.model_copy(deep=True)
    if has_start_paused_request(vm):
        spec.start_strategy = "Paused"
    if preference is not None:
        # Before any device is added: the preference decides which ones are attached.
        apply_device_preferences(preference, spec)
    devices = spec.domain.devices
    if devices.autoattach_input_device and not devices.inputs:
        devices.inputs = [Input(name="default-0", type="")]  # bus and type come from the VMI mutator
    annotations = dict(template_meta.annotations or {})
    annotations[VIRTUAL_MACHINE_GENERATION_ANNOTATION] = str(meta.generation or 0)
    if vm.spec.run_strategy == VirtualMachineRunStrategy.WAIT_AS_RECEIVER:
        annotations[CREATE_MIGRATION_TARGET] = "true"
    vmi_meta = template_meta.model_copy(
        update={
            "name": meta.name,
            "generate_name": None,
            "namespace": meta.namespace,
            "annotations": annotations,
            "owner_references": [
                owner_reference(API_VERSION, "VirtualMachine", meta.name or "", meta.uid or "")
            ],
            "finalizers": [*(template_meta.finalizers or ()), VIRTUAL_MACHINE_CONTROLLER_FINALIZER],
        }
    )
    vmi = VirtualMachineInstance(
        api_version=API_VERSION, kind="VirtualMachineInstance", metadata=vmi_meta, spec=spec
    )
    _expand(vm, vmi, selection)
    # The scheme's defaults; an empty firmware UUID becomes the VM's stable one, not a random one.
    name = meta.name or ""
    set_object_defaults_virtual_machine_instance(vmi, new_uuid=lambda: calculate_legacy_uuid(name))
    return vmi


def _expand(vm: VirtualMachine, vmi: VirtualMachineInstance, selection: Selection) -> None:
    instancetype = selection.instancetype.spec if selection.instancetype is not None else None
    preference = selection.preference.spec if selection.preference is not None else None
    assert vmi.metadata is not None
    try:
        conflicts = expand_vmi(vm, instancetype, preference, vmi.spec, vmi.metadata)
    except DefaultingError as err:
        raise SyncError(f"{err.field}: {err.message}", FAILED_CREATE_REASON) from None
    if conflicts:
        message = f"VMI conflicts with instancetype spec in fields: [{joined_paths(conflicts)}]"
        raise SyncError(message, FAILED_CREATE_REASON)


def _sync_conditions(
    status: VirtualMachineStatus,
    vmi: VirtualMachineInstance | None,
    sync_error: SyncError | None,
    now: datetime,
) -> None:
    """Ready from the VMI, Failure from the sync error, every other VMI condition mirrored."""
    stamp = format_time(now)

    ready = _vmi_condition(vmi, VirtualMachineInstanceConditionType.READY)
    if vmi is None:
        ready_condition = not_ready(
            VirtualMachineCondition, VMI_NOT_EXISTS_REASON, "VMI does not exist", stamp
        )
    elif ready is None:
        ready_condition = not_ready(
            VirtualMachineCondition, VMI_CONDITION_MISSING_REASON, "VMI is missing the Ready condition", stamp
        )
    else:
        ready_condition = VirtualMachineCondition.from_dict(ready.to_dict())
    conditions = update_condition(status.conditions, ready_condition)
    if sync_error is None:
        conditions = remove_condition(conditions, VirtualMachineConditionType.FAILURE) or []
    else:
        conditions = update_condition(
            conditions,
            VirtualMachineCondition(
                type=VirtualMachineConditionType.FAILURE,
                status=TRUE,
                reason=sync_error.reason,
                message=sync_error.message,
                last_transition_time=stamp,
            ),
        )
    if vmi is not None:
        mirrored = [
            c for c in (vmi.status.conditions if vmi.status else None) or () if c.type not in _NOT_MIRRORED
        ]
        for condition in mirrored:
            conditions = update_condition(conditions, VirtualMachineCondition.from_dict(condition.to_dict()))
        present = {c.type for c in mirrored}
        conditions = [c for c in conditions if c.type in _NOT_MIRRORED or c.type in present]
    status.conditions = conditions or None


def template_claim_names(vm: VirtualMachine) -> list[str]:
    """The claims the VM's template names: KubeVirt's ``PVCNameFromVirtVolume`` of each volume (a
    DataVolume's claim has its name; memory dumps count too)."""
    spec = vm.spec.template.spec
    volumes = (spec.volumes if spec is not None else None) or []
    return [name for name in map(claim_name, volumes) if name]


def _vmi_condition(vmi: VirtualMachineInstance | None, type_: str) -> Any:
    if vmi is None or vmi.status is None:
        return None
    return get_condition(vmi.status.conditions, type_)


def _vmi_condition_status(vmi: VirtualMachineInstance, type_: str) -> str | None:
    condition = _vmi_condition(vmi, type_)
    return condition.status if condition is not None else None


def _set_or_remove(path: str, present: bool, value: list[Any]) -> list[dict[str, Any]]:
    """Sets a list member (``add`` replaces one that is there); an empty list is left out, as Go's
    ``omitempty`` writes it."""
    if value:
        return [{"op": "add", "path": path, "value": value}]
    return [{"op": "remove", "path": path}] if present else []


def _meta(obj: VirtualMachine | VirtualMachineInstance) -> ObjectMeta:
    if obj.metadata is None:
        raise SyncError("metadata: required", FAILED_CREATE_REASON, requeue=False)
    return obj.metadata
