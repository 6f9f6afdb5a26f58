"""The VirtualMachinePool controller (pool.kubevirt.io/v1alpha1): ``spec.replicas`` VMs named ``<pool>-<n>``.

New VMs take the lowest free indexes, so names are deterministic and a restarted controller finds the
VMs it made. Each VM's DataVolume templates become ``<dv>-<n>`` (and the volumes using them follow), and
ConfigMap and Secret references get ``-<n>`` when ``nameGeneration`` asks for it. Scale-in removes VMs at
random or from the highest index (``scaleInStrategy``), counting VMs already being deleted.
"""

from __future__ import annotations

import random
from typing import Final

from kubevirt.client import VIRTUAL_MACHINE_POOLS, VIRTUAL_MACHINES, EventSink, KubeApi
from kubevirt.controller import Store, UIDTrackingControllerExpectations, key_for, key_of
from kubevirt.log import get_logger
from kubevirt.virt_controller.watch.common import (
    Clock,
    Enqueue,
    SyncError,
    controller_ref,
    describe_api_error,
    format_time,
    owner_reference,
    utc_now,
)
from kubevirt.virt_controller.watch.conditions import TRUE, has_condition, remove_condition, update_condition
from kubevirt.virt_controller.watch.refmanager import release
from kubevirt.virt_controller.watch.selector import SelectorError, matches, selector_string
from kubevirt_api.core.v1 import (
    VirtualMachine,
    VirtualMachineConditionType,
    VirtualMachineInstance,
    VirtualMachineSpec,
)
from kubevirt_api.core.v1.constants import VIRTUAL_MACHINE_POOL_REVISION_NAME
from kubevirt_api.k8s.meta_v1 import ObjectMeta
from kubevirt_api.pool.v1alpha1 import (
    VirtualMachinePool,
    VirtualMachinePoolBasePolicy,
    VirtualMachinePoolCondition,
    VirtualMachinePoolConditionType,
    VirtualMachinePoolSpec,
    VirtualMachinePoolStatus,
)

POOL_API_VERSION: Final = "pool.kubevirt.io/v1alpha1"
KIND: Final = "VirtualMachinePool"
BURST_REPLICAS: Final = 250
FAILED_SCALE_OUT_REASON: Final = "FailedScaleOut"
FAILED_SCALE_IN_REASON: Final = "FailedScaleIn"
SUCCESSFUL_CREATE_REASON: Final = "SuccessfulCreate"
FAILED_CREATE_REASON: Final = "FailedCreate"
SUCCESSFUL_DELETE_REASON: Final = "SuccessfulDelete"
FAILED_DELETE_REASON: Final = "FailedDelete"
SUCCESSFUL_PAUSED_REASON: Final = "SuccessfulPaused"
SUCCESSFUL_RESUME_REASON: Final = "SuccessfulResume"


class PoolController:
    """Reconciles VM pools. Informers: pools (reconciled), VMs (owned), VMIs (to wake the owning pool)."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        pool_store: Store[VirtualMachinePool],
        vm_store: Store[VirtualMachine],
        vmi_store: Store[VirtualMachineInstance],
        expectations: UIDTrackingControllerExpectations,
        enqueue: Enqueue,
        clock: Clock = utc_now,
        rng: random.Random | None = None,
        burst_replicas: int = BURST_REPLICAS,
    ) -> None:
        self._api = api
        self._events = events
        self._pools = pool_store
        self._vms = vm_store
        self._vmis = vmi_store
        self._expectations = expectations
        self._enqueue = enqueue
        self._clock = clock
        self._rng = rng or random.Random()
        self._burst = burst_replicas
        self._log = get_logger(controller="pool")

    def reconcile(self, key: str) -> None:
        pool = self._pools.get_by_key(key)
        if pool is None:
            self._expectations.delete_expectations(key)
            return
        template_meta = pool.spec.virtual_machine_template.metadata
        try:
            valid = matches(pool.spec.selector, template_meta.labels if template_meta is not None else None)
        except SelectorError as err:
            self._log.error("invalid selector on the pool, not retried", key=key, error=str(err))
            return
        if not valid:
            self._log.error("the selector does not match the template labels, not retried", key=key)
            return
        vms = self._owned_vms(pool)
        sync_error: SyncError | None = None
        meta = _meta(pool)
        if (
            self._expectations.satisfied_expectations(key)
            and not pool.spec.paused
            and meta.deletion_timestamp is None
        ):
            try:
                self._scale(pool, vms, key)
            except SyncError as err:
                sync_error = err
        self._update_status(pool, vms, sync_error)
        if sync_error is not None:
            raise sync_error

    def _owned_vms(self, pool: VirtualMachinePool) -> list[VirtualMachine]:
        """The VMs this pool controls; one that no longer matches the selector is released (no adoption)."""
        meta = _meta(pool)
        owned: list[VirtualMachine] = []
        for vm in self._vms.by_index("namespace", meta.namespace or ""):
            ref = controller_ref(vm.metadata)
            if ref is None or ref.uid != meta.uid:
                continue
            if matches(pool.spec.selector, _meta(vm).labels) or _meta(vm).deletion_timestamp is not None:
                owned.append(vm)
            else:
                release(self._api, VIRTUAL_MACHINES, vm, meta.uid or "")
        return owned

    def _scale(self, pool: VirtualMachinePool, vms: list[VirtualMachine], key: str) -> None:
        wanted = pool.spec.replicas if pool.spec.replicas is not None else 1
        diff = len(vms) - wanted
        count = min(abs(diff), self._burst)
        if diff < 0:
            self._scale_out(pool, count, key)
        elif diff > 0:
            self._scale_in(pool, vms, count, key)

    def _scale_out(self, pool: VirtualMachinePool, count: int, key: str) -> None:
        meta = _meta(pool)
        names = new_vm_names(count, meta.name or "", meta.namespace, self._vms)
        revision = f"{meta.name}-{meta.generation or 0}"
        template = pool.spec.virtual_machine_template
        template_meta = template.metadata or ObjectMeta()
        self._expectations.expect_creations(key, len(names))
        first_error: Exception | None = None
        for name in names:
            index = int(name.rsplit("-", 1)[1])
            spec = indexed_vm_spec(pool.spec, index)
            labels = {**(template_meta.labels or {}), VIRTUAL_MACHINE_POOL_REVISION_NAME: revision}
            if spec.template.metadata is None:
                spec.template.metadata = ObjectMeta()
            spec.template.metadata.labels = {
                **(spec.template.metadata.labels or {}),
                VIRTUAL_MACHINE_POOL_REVISION_NAME: revision,
            }
            vm = VirtualMachine(
                api_version="kubevirt.io/v1",
                kind="VirtualMachine",
                metadata=ObjectMeta(
                    name=name,
                    namespace=meta.namespace,
                    labels=labels,
                    annotations=dict(template_meta.annotations) if template_meta.annotations else None,
                    owner_references=[
                        owner_reference(POOL_API_VERSION, KIND, meta.name or "", meta.uid or "")
                    ],
                ),
                spec=spec,
            )
            try:
                self._api.create(VIRTUAL_MACHINES, meta.namespace, vm.to_dict())
            except Exception as err:
                self._expectations.creation_observed(key)
                self._log.error("failed to add a VM to the pool", key=key, vm=name, error=str(err))
                first_error = first_error or err
                continue
            self._events.event(
                pool, "Normal", SUCCESSFUL_CREATE_REASON, f"Created VM {meta.namespace}/{name}"
            )
        if first_error is not None:
            message = describe_api_error(first_error)
            self._events.event(pool, "Warning", FAILED_CREATE_REASON, f"Error creating VM: {message}")
            raise SyncError(f"Error during scale out: {message}", FAILED_SCALE_OUT_REASON)

    def _scale_in(self, pool: VirtualMachinePool, vms: list[VirtualMachine], count: int, key: str) -> None:
        eligible = [vm for vm in vms if _meta(vm).deletion_timestamp is None]
        count = min(count - (len(vms) - len(eligible)), len(eligible))  # deletions under way count
        if count <= 0:
            return
        policy = _base_policy(pool)
        if policy == VirtualMachinePoolBasePolicy.DESCENDING_ORDER:
            eligible.sort(key=lambda vm: _index_of(_meta(vm).name or ""), reverse=True)
        else:
            self._rng.shuffle(eligible)
        doomed = eligible[:count]
        self._expectations.expect_deletions_by_uid(key, [_meta(vm).uid or "" for vm in doomed])
        first_error: Exception | None = None
        for vm in doomed:
            vm_meta = _meta(vm)
            try:
                self._api.delete(
                    VIRTUAL_MACHINES,
                    vm_meta.namespace,
                    vm_meta.name or "",
                    uid=vm_meta.uid,
                    propagation_policy="Foreground",
                )
            except Exception as err:
                self._expectations.deletion_observed_uid(key, vm_meta.uid or "")
                self._events.event(
                    pool,
                    "Warning",
                    FAILED_DELETE_REASON,
                    f"Error deleting virtual machine {vm_meta.namespace}/{vm_meta.name}: {err}",
                )
                first_error = first_error or err
                continue
            self._events.event(
                pool,
                "Normal",
                SUCCESSFUL_DELETE_REASON,
                f"Deleted VM {vm_meta.namespace}/{vm_meta.name} with uid {vm_meta.uid} from pool",
            )
        if first_error is not None:
            raise SyncError(
                f"Error during scale in: {describe_api_error(first_error)}", FAILED_SCALE_IN_REASON
            )

    def _update_status(
        self, pool: VirtualMachinePool, vms: list[VirtualMachine], sync_error: SyncError | None
    ) -> None:
        status = (pool.status or VirtualMachinePoolStatus()).model_copy(deep=True)
        now = format_time(self._clock())
        status.label_selector = selector_string(pool.spec.selector)
        failure, paused_type = VirtualMachinePoolConditionType.FAILURE, VirtualMachinePoolConditionType.PAUSED
        if sync_error is not None and not has_condition(status.conditions, failure):
            status.conditions = update_condition(
                status.conditions,
                VirtualMachinePoolCondition(
                    type=failure,
                    status=TRUE,
                    reason=sync_error.reason,
                    message=sync_error.message,
                    last_transition_time=now,
                ),
            )
            self._events.event(pool, "Warning", sync_error.reason, sync_error.message)
        elif sync_error is None:
            status.conditions = remove_condition(status.conditions, failure)
        if pool.spec.paused and not has_condition(status.conditions, paused_type):
            status.conditions = update_condition(
                status.conditions,
                VirtualMachinePoolCondition(
                    type=paused_type,
                    status=TRUE,
                    reason=SUCCESSFUL_PAUSED_REASON,
                    message="Pool controller is paused",
                    last_transition_time=now,
                ),
            )
            self._events.event(pool, "Normal", SUCCESSFUL_PAUSED_REASON, "Pool is paused")
        elif not pool.spec.paused and has_condition(status.conditions, paused_type):
            status.conditions = remove_condition(status.conditions, paused_type)
            self._events.event(pool, "Normal", SUCCESSFUL_RESUME_REASON, "Pool is unpaused")
        status.replicas = len(vms)
        status.ready_replicas = sum(
            1
            for vm in vms
            if has_condition(
                vm.status.conditions if vm.status else None, VirtualMachineConditionType.READY, TRUE
            )
        )
        before = pool.status.to_dict() if pool.status is not None else {}
        if status.to_dict() != before:
            updated = pool.model_copy(update={"status": status})
            self._api.update_status(VIRTUAL_MACHINE_POOLS, _meta(pool).namespace, updated.to_dict())

    # -- informer event handlers -----------------------------------------------------------------------

    def on_pool_add(self, pool: VirtualMachinePool) -> None:
        self._enqueue(key_of(pool))

    def on_pool_update(self, old: VirtualMachinePool, new: VirtualMachinePool) -> None:
        self._enqueue(key_of(new))

    def on_pool_delete(self, pool: VirtualMachinePool) -> None:
        self._enqueue(key_of(pool))

    def on_vm_add(self, vm: VirtualMachine) -> None:
        if _meta(vm).deletion_timestamp is not None:
            self.on_vm_delete(vm)
            return
        pool = self._resolve(vm)
        if pool is not None:
            self._expectations.creation_observed(key_of(pool))
            self._enqueue(key_of(pool))

    def on_vm_update(self, old: VirtualMachine, new: VirtualMachine) -> None:
        if _meta(old).resource_version == _meta(new).resource_version:
            return
        if _meta(new).deletion_timestamp is not None:
            self.on_vm_delete(new)
            return
        for vm in (old, new):
            pool = self._resolve(vm)
            if pool is not None:
                self._enqueue(key_of(pool))

    def on_vm_delete(self, vm: VirtualMachine) -> None:
        pool = self._resolve(vm)
        if pool is not None:
            self._expectations.deletion_observed_uid(key_of(pool), _meta(vm).uid or "")
            self._enqueue(key_of(pool))

    def on_vmi_add(self, vmi: VirtualMachineInstance) -> None:
        self._enqueue_pool_of_vmi(vmi)

    def on_vmi_update(self, old: VirtualMachineInstance, new: VirtualMachineInstance) -> None:
        self._enqueue_pool_of_vmi(new)

    def on_vmi_delete(self, vmi: VirtualMachineInstance) -> None:
        self._enqueue_pool_of_vmi(vmi)

    def _enqueue_pool_of_vmi(self, vmi: VirtualMachineInstance) -> None:
        """A VMI's readiness shows on its VM, which belongs to a pool."""
        vm = self._vms.get_by_key(key_of(vmi))
        pool = self._resolve(vm) if vm is not None else None
        if pool is not None:
            self._enqueue(key_of(pool))

    def _resolve(self, vm: VirtualMachine) -> VirtualMachinePool | None:
        ref = controller_ref(vm.metadata)
        if ref is None or ref.kind != KIND:
            return None
        pool = self._pools.get_by_key(key_for(_meta(vm).namespace, ref.name))
        return pool if pool is not None and _meta(pool).uid == ref.uid else None


def new_vm_names(count: int, base: str, namespace: str | None, vm_store: Store[VirtualMachine]) -> list[str]:
    """The ``count`` lowest ``<base>-<n>`` names no VM in the namespace uses yet."""
    names: list[str] = []
    index = 0
    while len(names) < count:
        name = f"{base}-{index}"
        if vm_store.get_by_key(key_for(namespace, name)) is None:
            names.append(name)
        index += 1
    return names


def indexed_vm_spec(pool_spec: VirtualMachinePoolSpec, index: int) -> VirtualMachineSpec:
    """The VM spec of pool member ``index``: per-member DataVolumes and, if asked, ConfigMaps and Secrets."""
    template_spec = pool_spec.virtual_machine_template.spec
    if template_spec is None:
        raise SyncError("spec.virtualMachineTemplate.spec: required", FAILED_SCALE_OUT_REASON, requeue=False)
    spec = template_spec.model_copy(deep=True)
    renamed: dict[str, str] = {}
    for dv in spec.data_volume_templates or ():
        if dv.metadata is not None and dv.metadata.name:
            renamed[dv.metadata.name] = f"{dv.metadata.name}-{index}"
            dv.metadata.name = renamed[dv.metadata.name]
    generation = pool_spec.name_generation
    index_config_maps = bool(generation and generation.append_index_to_config_map_refs)
    index_secrets = bool(generation and generation.append_index_to_secret_refs)
    for volume in (spec.template.spec.volumes if spec.template.spec is not None else None) or ():
        if volume.persistent_volume_claim is not None:
            claim = volume.persistent_volume_claim
            claim.claim_name = renamed.get(claim.claim_name, claim.claim_name)
        elif volume.data_volume is not None:
            volume.data_volume.name = renamed.get(volume.data_volume.name, volume.data_volume.name)
        elif volume.config_map is not None and index_config_maps:
            volume.config_map.name = f"{volume.config_map.name or ''}-{index}"
        elif volume.secret is not None and index_secrets:
            volume.secret.secret_name = f"{volume.secret.secret_name or ''}-{index}"
    return spec


def _index_of(name: str) -> int:
    suffix = name.rsplit("-", 1)[-1]
    return int(suffix) if suffix.isdigit() else 0


def _base_policy(pool: VirtualMachinePool) -> str:
    strategy = pool.spec.scale_in_strategy
    proactive = strategy.proactive if strategy is not None else None
    selection = proactive.selection_policy if proactive is not None else None
    return (selection.base_policy if selection is not None else None) or VirtualMachinePoolBasePolicy.RANDOM


def _meta(obj: VirtualMachinePool | VirtualMachine) -> ObjectMeta:
    if obj.metadata is None:
        raise ValueError("metadata: required")
    return obj.metadata
