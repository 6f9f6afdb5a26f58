"""The VirtualMachineInstanceReplicaSet controller: keeps ``spec.replicas`` live VMIs matching the selector.

VMIs are created with ``generateName`` (the template's name, else its generateName, else the replica
set's name), so the API server appends five random characters; finished VMIs are deleted so that new
ones replace them. At most 250 creations or deletions per pass, as KubeVirt's burst limit.
"""

from __future__ import annotations

from typing import Final

from kubevirt.client import (
    VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS,
    VIRTUAL_MACHINE_INSTANCES,
    EventSink,
    KubeApi,
)
from kubevirt.controller import Store, UIDTrackingControllerExpectations, key_for, key_of
from kubevirt.log import get_logger
from kubevirt.virt_controller.watch.common import (
    Clock,
    Enqueue,
    controller_ref,
    describe_api_error,
    format_time,
    owner_reference,
    utc_now,
    write_api_version_stamp,
)
from kubevirt.virt_controller.watch.conditions import (
    FALSE,
    TRUE,
    has_condition,
    has_condition_reason,
    remove_condition,
)
from kubevirt.virt_controller.watch.refmanager import adopt, release
from kubevirt.virt_controller.watch.selector import SelectorError, matches, selector_string
from kubevirt_api.core.v1 import (
    VirtualMachineInstance,
    VirtualMachineInstanceCondition,
    VirtualMachineInstanceConditionType,
    VirtualMachineInstanceReplicaSet,
    VirtualMachineInstanceReplicaSetCondition,
    VirtualMachineInstanceReplicaSetConditionType,
    VirtualMachineInstanceReplicaSetStatus,
)
from kubevirt_api.core.v1.constants import API_VERSION, POD_TERMINATING_REASON
from kubevirt_api.k8s.meta_v1 import ObjectMeta

BURST_REPLICAS: Final = 250
KIND: Final = "VirtualMachineInstanceReplicaSet"
FAILED_CREATE_REASON: Final = "FailedCreate"
FAILED_DELETE_REASON: Final = "FailedDelete"
SUCCESSFUL_CREATE_REASON: Final = "SuccessfulCreate"
SUCCESSFUL_DELETE_REASON: Final = "SuccessfulDelete"
SUCCESSFUL_PAUSED_REASON: Final = "SuccessfulPaused"
SUCCESSFUL_RESUMED_REASON: Final = "SuccessfulResumed"
_READY: Final = VirtualMachineInstanceConditionType.READY


class ScaleError(Exception):
    """A creation or deletion the API refused; the first one is reported."""


class ReplicaSetController:
    """Reconciles VMI replica sets. Informers: replica sets (reconciled) and VMIs (owned)."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        rs_store: Store[VirtualMachineInstanceReplicaSet],
        vmi_store: Store[VirtualMachineInstance],
        expectations: UIDTrackingControllerExpectations,
        enqueue: Enqueue,
        clock: Clock = utc_now,
        burst_replicas: int = BURST_REPLICAS,
    ) -> None:
        self._api = api
        self._events = events
        self._replica_sets = rs_store
        self._vmis = vmi_store
        self._expectations = expectations
        self._enqueue = enqueue
        self._clock = clock
        self._burst = burst_replicas
        self._log = get_logger(controller="replicaset")

    def reconcile(self, key: str) -> None:
        cached = self._replica_sets.get_by_key(key)
        if cached is None:
            self._expectations.delete_expectations(key)
            return
        if write_api_version_stamp(self._api, VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, cached):
            return
        rs = cached.model_copy(deep=True)
        meta = _meta(rs)
        template = rs.spec.template
        labels = template.metadata.labels if template.metadata is not None else None
        try:
            valid = bool(labels) and matches(rs.spec.selector, labels)
        except SelectorError as err:
            self._log.error("invalid selector on the replica set, not retried", key=key, error=str(err))
            return
        if not valid or template.spec is None:
            self._log.error("the selector does not match the template labels, not retried", key=key)
            return
        vmis = self._claim_vmis(rs)
        finished = [
            v for v in vmis if not v.is_marked_for_deletion() and (v.is_final() or _pod_terminating(v))
        ]
        active = [v for v in vmis if _is_active(v)]
        scale_error: ScaleError | None = None
        if (
            self._expectations.satisfied_expectations(key)
            and not rs.spec.paused
            and meta.deletion_timestamp is None
        ):
            try:
                self._scale(rs, active, key)
                if finished:
                    self._delete(rs, finished[: self._burst], key, finished=True)
            except ScaleError as err:
                scale_error = err
        self._update_status(rs, active, scale_error)
        if scale_error is not None:
            raise scale_error

    def _claim_vmis(self, rs: VirtualMachineInstanceReplicaSet) -> list[VirtualMachineInstance]:
        """The VMIs this replica set controls, after adopting matching orphans and releasing mismatches."""
        meta = _meta(rs)
        owner = owner_reference(API_VERSION, KIND, meta.name or "", meta.uid or "")
        claimed: list[VirtualMachineInstance] = []
        for vmi in self._vmis.by_index("namespace", meta.namespace or ""):
            ref = controller_ref(vmi.metadata)
            selected = matches(rs.spec.selector, _meta(vmi).labels)
            if ref is not None and ref.uid == meta.uid:
                if selected or vmi.is_marked_for_deletion():
                    claimed.append(vmi)
                else:
                    release(self._api, VIRTUAL_MACHINE_INSTANCES, vmi, meta.uid or "")
            elif (
                ref is None
                and selected
                and not vmi.is_marked_for_deletion()
                and meta.deletion_timestamp is None
            ):
                adopted = adopt(self._api, VIRTUAL_MACHINE_INSTANCES, vmi, owner)
                claimed.append(VirtualMachineInstance.from_dict(adopted))
        return claimed

    def _scale(
        self, rs: VirtualMachineInstanceReplicaSet, active: list[VirtualMachineInstance], key: str
    ) -> None:
        diff = len(active) - _wanted(rs)
        if diff > 0:
            self._delete(rs, active[: min(diff, self._burst)], key, finished=False)
        elif diff < 0:
            self._create(rs, min(-diff, self._burst), key)

    def _create(self, rs: VirtualMachineInstanceReplicaSet, count: int, key: str) -> None:
        meta = _meta(rs)
        template = rs.spec.template
        template_meta = template.metadata or ObjectMeta()
        base = template_meta.name or template_meta.generate_name or meta.name or ""
        if template.spec is None:
            raise ScaleError("spec.template.spec: required")
        spec = template.spec
        self._expectations.expect_creations(key, count)
        first_error: Exception | None = None
        for _ in range(count):
            vmi_meta = template_meta.model_copy(
                deep=True,
                update={
                    "name": None,
                    "generate_name": base,
                    "namespace": meta.namespace,
                    "owner_references": [owner_reference(API_VERSION, KIND, meta.name or "", meta.uid or "")],
                },
            )
            vmi = VirtualMachineInstance(
                api_version=API_VERSION, kind="VirtualMachineInstance", metadata=vmi_meta, spec=spec
            )
            try:
                created = self._api.create(VIRTUAL_MACHINE_INSTANCES, meta.namespace, vmi.to_dict())
            except Exception as err:
                self._expectations.creation_observed(key)
                self._events.event(
                    rs,
                    "Warning",
                    FAILED_CREATE_REASON,
                    f"Error creating virtual machine instance: {describe_api_error(err)}",
                )
                first_error = first_error or err
                continue
            self._events.event(
                rs,
                "Normal",
                SUCCESSFUL_CREATE_REASON,
                "Started the virtual machine by creating the new virtual machine instance "
                f"{created['metadata']['name']}",
            )
        if first_error is not None:
            raise ScaleError(describe_api_error(first_error))

    def _delete(
        self,
        rs: VirtualMachineInstanceReplicaSet,
        vmis: list[VirtualMachineInstance],
        key: str,
        *,
        finished: bool,
    ) -> None:
        self._expectations.expect_deletions_by_uid(key, [_meta(v).uid or "" for v in vmis])
        first_error: Exception | None = None
        for vmi in vmis:
            vmi_meta = _meta(vmi)
            try:
                self._api.delete(
                    VIRTUAL_MACHINE_INSTANCES, vmi_meta.namespace, vmi_meta.name or "", uid=vmi_meta.uid
                )
            except Exception as err:
                self._expectations.deletion_observed_uid(key, vmi_meta.uid or "")
                what = "finished virtual machine" if finished else "virtual machine instance"
                self._events.event(
                    rs, "Warning", FAILED_DELETE_REASON, f"Error deleting {what} {vmi_meta.name}: {err}"
                )
                first_error = first_error or err
                continue
            message = (
                f"Deleted finished virtual machine: {vmi_meta.uid}"
                if finished
                else f"Stopped the virtual machine by deleting the virtual machine instance {vmi_meta.uid}"
            )
            self._events.event(rs, "Normal", SUCCESSFUL_DELETE_REASON, message)
        if first_error is not None:
            raise ScaleError(describe_api_error(first_error))

    def _update_status(
        self,
        rs: VirtualMachineInstanceReplicaSet,
        active: list[VirtualMachineInstance],
        scale_error: ScaleError | None,
    ) -> None:
        status = rs.status or VirtualMachineInstanceReplicaSetStatus()
        conditions = status.conditions
        ready = sum(1 for v in active if has_condition(_vmi_conditions(v), _READY, TRUE))
        paused = bool(rs.spec.paused)
        label_selector = selector_string(rs.spec.selector)
        failure_type = VirtualMachineInstanceReplicaSetConditionType.FAILURE
        paused_type = VirtualMachineInstanceReplicaSetConditionType.PAUSED
        unchanged = (
            len(active) == (status.replicas or 0)
            and ready == (status.ready_replicas or 0)
            and (scale_error is not None) == has_condition(conditions, failure_type)
            and paused == has_condition(conditions, paused_type)
            and label_selector == (status.label_selector or "")
        )
        if unchanged:
            return
        now = format_time(self._clock())
        status.label_selector = label_selector
        status.replicas = len(active)
        status.ready_replicas = ready
        paused_changed = paused != has_condition(conditions, paused_type)
        if paused and not has_condition(conditions, paused_type):
            conditions = [
                *(conditions or ()),
                VirtualMachineInstanceReplicaSetCondition(
                    type=paused_type,
                    status=TRUE,
                    reason="Paused",
                    message="Controller got paused",
                    last_transition_time=now,
                ),
            ]
        elif not paused:
            conditions = remove_condition(conditions, paused_type)
        if scale_error is not None and not has_condition(conditions, failure_type):
            reason = FAILED_CREATE_REASON if len(active) < _wanted(rs) else FAILED_DELETE_REASON
            conditions = [
                *(conditions or ()),
                VirtualMachineInstanceReplicaSetCondition(
                    type=failure_type,
                    status=TRUE,
                    reason=reason,
                    message=str(scale_error),
                    last_transition_time=now,
                ),
            ]
        elif scale_error is None:
            conditions = remove_condition(conditions, failure_type)
        status.conditions = conditions
        rs.status = status
        self._api.update_status(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, _meta(rs).namespace, rs.to_dict())
        if paused_changed:
            reason, message = (
                (SUCCESSFUL_PAUSED_REASON, "Paused") if paused else (SUCCESSFUL_RESUMED_REASON, "Resumed")
            )
            self._events.event(rs, "Normal", reason, message)

    # -- informer event handlers -----------------------------------------------------------------------

    def on_rs_add(self, rs: VirtualMachineInstanceReplicaSet) -> None:
        self._enqueue(key_of(rs))

    def on_rs_update(
        self, old: VirtualMachineInstanceReplicaSet, new: VirtualMachineInstanceReplicaSet
    ) -> None:
        self._enqueue(key_of(new))

    def on_rs_delete(self, rs: VirtualMachineInstanceReplicaSet) -> None:
        self._enqueue(key_of(rs))

    def on_vmi_add(self, vmi: VirtualMachineInstance) -> None:
        if vmi.is_marked_for_deletion():
            self.on_vmi_delete(vmi)
            return
        rs = self._resolve(vmi)
        if rs is not None:
            self._expectations.creation_observed(key_of(rs))
            self._enqueue(key_of(rs))
        elif controller_ref(vmi.metadata) is None:
            self._enqueue_matching(vmi)

    def on_vmi_update(self, old: VirtualMachineInstance, new: VirtualMachineInstance) -> None:
        if _meta(old).resource_version == _meta(new).resource_version:
            return
        labels_changed = _meta(old).labels != _meta(new).labels
        if new.is_marked_for_deletion():
            # A deletion in progress already frees the slot: replace the VMI without waiting for it to go.
            self.on_vmi_delete(new)
            if labels_changed:
                self.on_vmi_delete(old)
            return
        old_ref, new_ref = controller_ref(old.metadata), controller_ref(new.metadata)
        if old_ref is not None and old_ref != new_ref and (previous := self._resolve(old)) is not None:
            self._enqueue(key_of(previous))
        if new_ref is not None:
            if (rs := self._resolve(new)) is not None:
                self._enqueue(key_of(rs))
        elif labels_changed or old_ref != new_ref:
            self._enqueue_matching(new)

    def on_vmi_delete(self, vmi: VirtualMachineInstance) -> None:
        rs = self._resolve(vmi)
        if rs is not None:
            self._expectations.deletion_observed_uid(key_of(rs), _meta(vmi).uid or "")
            self._enqueue(key_of(rs))

    def _resolve(self, vmi: VirtualMachineInstance) -> VirtualMachineInstanceReplicaSet | None:
        ref = controller_ref(vmi.metadata)
        if ref is None or ref.kind != KIND:
            return None
        rs = self._replica_sets.get_by_key(key_for(_meta(vmi).namespace, ref.name))
        return rs if rs is not None and _meta(rs).uid == ref.uid else None

    def _enqueue_matching(self, vmi: VirtualMachineInstance) -> None:
        for rs in self._replica_sets.by_index("namespace", _meta(vmi).namespace or ""):
            try:
                if matches(rs.spec.selector, _meta(vmi).labels):
                    self._enqueue(key_of(rs))
            except SelectorError:
                continue


def _wanted(rs: VirtualMachineInstanceReplicaSet) -> int:
    return rs.spec.replicas if rs.spec.replicas is not None else 1


def _vmi_conditions(vmi: VirtualMachineInstance) -> list[VirtualMachineInstanceCondition] | None:
    return vmi.status.conditions if vmi.status is not None else None


def _pod_terminating(vmi: VirtualMachineInstance) -> bool:
    """A VMI whose pod is going away (Ready=False, PodTerminating) is as good as finished."""
    return has_condition_reason(_vmi_conditions(vmi), _READY, FALSE, POD_TERMINATING_REASON)


def _is_active(vmi: VirtualMachineInstance) -> bool:
    return not vmi.is_final() and not vmi.is_marked_for_deletion() and not _pod_terminating(vmi)


def _meta(obj: VirtualMachineInstanceReplicaSet | VirtualMachineInstance) -> ObjectMeta:
    if obj.metadata is None:
        raise ValueError("metadata: required")
    return obj.metadata
