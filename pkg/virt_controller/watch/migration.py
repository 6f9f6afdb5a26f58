"""The migration controller: drives each VirtualMachineInstanceMigration (VMIM) through KubeVirt's phases.

Pending → Scheduling (a target pod exists) → Scheduled (it runs) → PreparingTarget (the VMI's
``migrationState`` names this migration and the target node: the hand-off to the target virt-handler) →
TargetReady (the target published its address) → Running (the source started) → Succeeded, or Failed
when anything on the way breaks. Failure checks come first on every pass, as in KubeVirt, and each sets
a ``FailedMigration`` event. Deleting the VMIM cancels it: before the hand-off the target pod is
deleted, after it the VMI's ``migrationState.abortRequested`` asks the source virt-handler to abort.
The finalizer ``kubevirt.io/migrationJobFinalize`` keeps a deleted VMIM until it is final.

A VMI with hotplugged volumes takes them along: once the target pod is ready the controller gives it an
attachment pod of its own (labelled and annotated as this migration's, owned by the target pod, so it
goes with it), waits for that pod to be ready before Scheduling and Scheduled, and names it in
``migrationState.targetAttachmentPodUID`` at the hand-off, so the target virt-handler mounts the claims
from it. Once the VMI runs on the target, the VMI controller finds that pod as its launcher's own.

A VMI in the middle of a CPU or memory hotplug (the workload updater migrates it for that) tells the target
at the hand-off what its pod got: the compute container's memory request (``kubevirt.io/vmi-pod-memory-
resource-requests``) and, with dedicated CPUs, its CPU limit (``kubevirt.io/vmi-pod-cpu-resource-limits``).
Such a migration becomes Succeeded only once the target virt-handler finished the hotplug and dropped its
condition.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final

from kubevirt.client import (
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCES,
    EventSink,
    KubeApi,
)
from kubevirt.client.errors import ConflictError, NotFoundError
from kubevirt.client.resources import NAMESPACES
from kubevirt.controller import ControllerExpectations, RequeueAfter, Store, key_for, key_of, split_key
from kubevirt.log import get_logger
from kubevirt.virt_config.migrations import MigrationConfig
from kubevirt.virt_controller.services.errors import TemplateError
from kubevirt.virt_controller.services.hotplug_pod import render_hotplug_attachment_pod
from kubevirt.virt_controller.services.parameters import DEFAULT_LAUNCHER_IMAGE
from kubevirt.virt_controller.watch import pods as podutil
from kubevirt.virt_controller.watch.common import (
    Clock,
    Enqueue,
    SyncError,
    controlled_pods,
    describe_api_error,
    format_time,
    parse_time,
    utc_now,
)
from kubevirt.virt_controller.watch.conditions import TRUE, has_condition
from kubevirt.virt_controller.watch.hotplug import RenderAttachmentPod, attachment_pods
from kubevirt.virt_controller.watch.migrationpolicy import configuration_by_policy, match_policy
from kubevirt.virt_controller.watch.vmi import current_pod
from kubevirt.virt_controller.watch.volumestatus import claim_name, hotplug_volumes, vmi_has_hotplug_volumes
from kubevirt_api.core.v1 import (
    FINAL_MIGRATION_PHASES,
    FINAL_VMI_PHASES,
    VirtualMachineInstance,
    VirtualMachineInstanceConditionType,
    VirtualMachineInstanceMigrationConditionType,
    VirtualMachineInstanceMigrationPhase,
)
from kubevirt_api.core.v1.constants import (
    API_VERSION,
    APP_LABEL,
    MIGRATION_JOB_LABEL,
    MIGRATION_JOB_NAME_ANNOTATION,
    MIGRATION_PENDING_POD_TIMEOUT_SECONDS_ANNOTATION,
    MIGRATION_TARGET_NODE_NAME_LABEL,
    MIGRATION_UNSCHEDULABLE_POD_TIMEOUT_SECONDS_ANNOTATION,
    VIRTUAL_MACHINE_INSTANCE_MIGRATION_FINALIZER,
    VIRTUAL_MACHINE_POD_CPU_LIMITS_LABEL,
    VIRTUAL_MACHINE_POD_MEMORY_REQUESTS_LABEL,
)
from kubevirt_api.core.v1.volumes import Volume
from kubevirt_api.resource import Quantity, QuantityError
from kubevirt_api.view import JSON

RenderPod = Callable[[VirtualMachineInstance], JSON]

_Phase = VirtualMachineInstanceMigrationPhase
_BEFORE_TARGET_CREATED: Final = (_Phase.PHASE_UNSET, _Phase.PENDING)
_BEFORE_HAND_OFF: Final = (_Phase.PHASE_UNSET, _Phase.PENDING, _Phase.SCHEDULING, _Phase.SCHEDULED)

ABORT_REQUESTED: Final = "migrationAbortRequested"
FAILED_MIGRATION: Final = "FailedMigration"
SUCCESSFUL_MIGRATION: Final = "SuccessfulMigration"
SUCCESSFUL_HAND_OVER: Final = "SuccessfulHandOver"
SUCCESSFUL_ABORT: Final = "SuccessfulAbortMigration"
SUCCESSFUL_CREATE_POD: Final = "SuccessfulCreate"
FAILED_CREATE_POD: Final = "FailedCreate"
FAILED_HAND_OVER: Final = "FailedHandOver"
SUCCESSFUL_DELETE_POD: Final = "SuccessfulDelete"
TARGET_POD_UNSCHEDULABLE: Final = "migrationTargetPodUnschedulable"
CREATED_BY_LABEL: Final = "kubevirt.io/created-by"
HOSTNAME_TOPOLOGY: Final = "kubernetes.io/hostname"
# The ``kubevirt.io`` label of launcher pods: a migration's attachment pod carries its job label too.
LAUNCHER_APP: Final = "virt-launcher"

# KubeVirt's pending target pod timeouts, overridable per VMIM by annotation.
UNSCHEDULABLE_POD_TIMEOUT_SECONDS: Final = 300
PENDING_POD_TIMEOUT_SECONDS: Final = 900
REJECTED_BY_RESOURCE_QUOTA: Final = VirtualMachineInstanceMigrationConditionType.REJECTED_BY_RESOURCE_QUOTA
# Finished migrations kept per VMI; older ones are deleted.
KEPT_FINISHED_MIGRATIONS: Final = 5
# How long a migration held back by the parallel limits waits before it looks again.
LIMIT_REQUEUE_SECONDS: Final = 5.0


def phase_of(migration: Mapping[str, Any]) -> str:
    return str((migration.get("status") or {}).get("phase") or "")


def is_final(migration: Mapping[str, Any]) -> bool:
    return phase_of(migration) in FINAL_MIGRATION_PHASES


def migration_state(vmi: Mapping[str, Any] | None) -> JSON:
    return dict(((vmi or {}).get("status") or {}).get("migrationState") or {})


def is_hotplug_in_progress(vmi: VirtualMachineInstance) -> bool:
    """A CPU or memory hotplug, or another change needing a migration, is not finished yet: a vCPU change
    is pending while its condition is there at all, the others while theirs is True."""
    conditions = vmi.status.conditions if vmi.status is not None else None
    return (
        has_condition(conditions, VirtualMachineInstanceConditionType.VCPU_CHANGE)
        or has_condition(conditions, VirtualMachineInstanceConditionType.MEMORY_CHANGE, TRUE)
        or has_condition(conditions, VirtualMachineInstanceConditionType.MIGRATION_REQUIRED, TRUE)
    )


def _compute_resources(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    container = podutil.compute_container(pod)
    if container is None:
        raise SyncError("Could not find VMI compute container", FAILED_HAND_OVER)
    return dict((container.get("resources") or {}).get(kind) or {})


def target_pod_cpu_limits(pod: Mapping[str, Any]) -> int:
    """The whole CPUs the target's compute container is limited to (its dedicated CPUs)."""
    cpu = _compute_resources(pod, "limits").get("cpu")
    if cpu is None:
        raise SyncError("Could not find dedicated CPU limit in VMI compute container", FAILED_HAND_OVER)
    return _quantity(cpu).value()


def target_pod_memory_requests(pod: Mapping[str, Any]) -> str:
    """The memory the target's compute container requests, its hugepages included."""
    requests = _compute_resources(pod, "requests")
    memory = requests.get("memory")
    if memory is None:
        raise SyncError("Could not find memory request in VMI compute container", FAILED_HAND_OVER)
    total = _quantity(memory)
    for hugepages in ("hugepages-2Mi", "hugepages-1Gi"):
        if hugepages in requests:
            total = total + _quantity(requests[hugepages])
    return str(total)


def _quantity(value: object) -> Quantity:
    try:
        return Quantity.coerce(value)
    except QuantityError as err:
        raise SyncError(f"invalid quantity in the target pod: {err}", FAILED_HAND_OVER) from err


def render_target_pod(
    vmi: VirtualMachineInstance, migration: Mapping[str, Any], render_pod: RenderPod
) -> JSON:
    """The launcher pod for the VMI, marked as this migration's target and kept off the source's node."""
    vmi_json = vmi.to_dict()
    meta = vmi_json["metadata"]
    pod = copy.deepcopy(render_pod(vmi))
    pod_meta = pod.setdefault("metadata", {})
    pod_meta.setdefault("generateName", f"virt-launcher-{meta['name']}-")
    pod_meta.pop("name", None)
    pod_meta["labels"] = {**(pod_meta.get("labels") or {}), MIGRATION_JOB_LABEL: migration["metadata"]["uid"]}
    pod_meta["annotations"] = {
        **(pod_meta.get("annotations") or {}),
        MIGRATION_JOB_NAME_ANNOTATION: migration["metadata"]["name"],
    }
    if not any(ref.get("controller") for ref in pod_meta.get("ownerReferences") or []):
        pod_meta["ownerReferences"] = [
            *(pod_meta.get("ownerReferences") or []),
            {
                "apiVersion": API_VERSION,
                "kind": "VirtualMachineInstance",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            },
        ]
    spec = pod.setdefault("spec", {})
    added = (migration.get("spec") or {}).get("addedNodeSelector") or {}
    vmi_selector = (vmi_json.get("spec") or {}).get("nodeSelector") or {}
    spec["nodeSelector"] = {**added, **(spec.get("nodeSelector") or {}), **vmi_selector}  # the VMI's keys win
    if not spec["nodeSelector"]:
        del spec["nodeSelector"]
    anti = spec.setdefault("affinity", {}).setdefault("podAntiAffinity", {})
    anti.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(
        {
            "labelSelector": {
                "matchExpressions": [{"key": CREATED_BY_LABEL, "operator": "In", "values": [meta["uid"]]}]
            },
            "topologyKey": HOSTNAME_TOPOLOGY,
        }
    )
    return pod


class MigrationController:
    """Reconciles VMIMs. Informers: VMIMs (reconciled), VMIs and Pods (watched: target launcher pods and
    their attachment pods), PVCs (read for the attachment pods)."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        migration_store: Store[JSON],
        vmi_store: Store[VirtualMachineInstance],
        pod_store: Store[JSON],
        render_pod: RenderPod,
        config: Callable[[], MigrationConfig],
        enqueue: Enqueue,
        policy_store: Store[JSON] | None = None,
        clock: Clock = utc_now,
        pvc_store: Store[JSON] | None = None,
        launcher_image: str | None = None,
        render_attachment_pod: RenderAttachmentPod | None = None,
    ) -> None:
        self._api = api
        self._events = events
        self._migrations = migration_store
        # MigrationPolicies (cluster-scoped); None: the cluster configuration applies to every VMI.
        self._policies = policy_store
        self._vmis = vmi_store
        self._pods = pod_store
        self._render_pod = render_pod
        self._config = config
        self._enqueue = enqueue
        self._clock = clock
        # Without a PVC informer no claim is found, and a VMI with hotplugged volumes cannot migrate.
        self._pvcs = pvc_store
        self._render_attachment_pod = render_attachment_pod or partial(
            render_hotplug_attachment_pod, launcher_image=launcher_image or DEFAULT_LAUNCHER_IMAGE
        )
        # A target pod just created is not in the pod cache yet: no second one until it is.
        self._expectations = ControllerExpectations()
        self._log = get_logger(controller="migration")

    # -- informer callbacks ----------------------------------------------------------------------

    def on_migration_add(self, obj: Any) -> None:
        self._enqueue(key_of(obj))

    def on_migration_update(self, _old: Any, new: Any) -> None:
        self._enqueue(key_of(new))

    def on_migration_delete(self, obj: Any) -> None:
        self._enqueue(key_of(obj))

    def on_vmi_add(self, obj: Any) -> None:
        self._enqueue_for_vmi(obj)

    def on_vmi_update(self, _old: Any, new: Any) -> None:
        self._enqueue_for_vmi(new)

    def on_vmi_delete(self, obj: Any) -> None:
        self._enqueue_for_vmi(obj)

    def on_pod_add(self, obj: Any) -> None:
        key = self._migration_key_of_pod(obj)
        if key is not None:
            self._expectations.creation_observed(key)
            self._enqueue(key)

    def on_pod_update(self, _old: Any, new: Any) -> None:
        self._enqueue_for_pod(new)

    def on_pod_delete(self, obj: Any) -> None:
        self._enqueue_for_pod(obj)

    def _enqueue_for_vmi(self, vmi: Any) -> None:
        namespace, name = split_key(key_of(vmi))
        for migration in self._migrations.list():
            meta = migration["metadata"]
            if meta.get("namespace") == namespace and (migration.get("spec") or {}).get("vmiName") == name:
                self._enqueue(key_of(migration))

    def _enqueue_for_pod(self, pod: Any) -> None:
        key = self._migration_key_of_pod(pod)
        if key is not None:
            self._enqueue(key)

    @staticmethod
    def _migration_key_of_pod(pod: Mapping[str, Any]) -> str | None:
        meta = pod.get("metadata") or {}
        name = (meta.get("annotations") or {}).get(MIGRATION_JOB_NAME_ANNOTATION)
        if name and (meta.get("labels") or {}).get(MIGRATION_JOB_LABEL):
            return key_for(meta.get("namespace"), name)
        return None

    # -- reconcile -------------------------------------------------------------------------------

    def reconcile(self, key: str) -> None:
        cached = self._migrations.get_by_key(key)
        if cached is None:
            self._expectations.delete_expectations(key)
            return
        migration = copy.deepcopy(cached)
        namespace = migration["metadata"].get("namespace")
        vmi_model = self._vmis.get_by_key(
            key_for(namespace, (migration.get("spec") or {}).get("vmiName") or "")
        )
        vmi = vmi_model.to_dict() if vmi_model is not None else None
        if vmi is None and not migration["metadata"].get("deletionTimestamp") and not is_final(migration):
            # A migration of a VMI that is gone has nothing to do: KubeVirt deletes it (the finalizer
            # then lets it fail and go).
            self._api.delete(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, migration["metadata"]["name"])
            return
        pod = self._target_pod(migration)
        requeue: float | None = None
        failure: Exception | None = None
        if not is_final(migration) and self._expectations.satisfied_expectations(key):
            try:
                pod = self._sync(migration, vmi_model, vmi, pod)
            except RequeueAfter as wait:
                requeue = wait.seconds
            except Exception as err:  # reported on the migration, then retried with backoff
                failure = err
        hotplugged = vmi_model is not None and vmi_has_hotplug_volumes(vmi_model)
        # The target virt-handler finishes a CPU or memory hotplug after the move and then drops the
        # condition: only then is the migration done.
        changing = vmi_model is not None and is_hotplug_in_progress(vmi_model)
        self._update_status(
            cached, migration, vmi, pod, failure, hotplugged=hotplugged, hotplug_in_progress=changing
        )
        if failure is not None:
            raise failure
        if requeue is not None:
            raise RequeueAfter(requeue)
        if is_final(cached) and vmi is not None:
            self._collect_finished(migration)

    def _collect_finished(self, migration: Mapping[str, Any]) -> None:
        """Keeps the newest finished migrations of a VMI (KubeVirt keeps five), deletes older ones."""
        namespace = migration["metadata"].get("namespace")
        vmi_name = (migration.get("spec") or {}).get("vmiName")
        finished = sorted(
            (
                m
                for m in self._migrations.list()
                if m["metadata"].get("namespace") == namespace
                and (m.get("spec") or {}).get("vmiName") == vmi_name
                and is_final(m)
                and not m["metadata"].get("deletionTimestamp")
            ),
            key=lambda m: str(m["metadata"].get("creationTimestamp") or ""),
        )
        for old in finished[: max(0, len(finished) - KEPT_FINISHED_MIGRATIONS)]:
            try:
                self._api.delete(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, old["metadata"]["name"])
            except NotFoundError:
                continue  # collected already

    def _target_pod(self, migration: Mapping[str, Any]) -> JSON | None:
        uid = migration["metadata"].get("uid")
        namespace = migration["metadata"].get("namespace")
        found = [
            p
            for p in self._pods.list()
            if p["metadata"].get("namespace") == namespace
            and (p["metadata"].get("labels") or {}).get(MIGRATION_JOB_LABEL) == uid
            and (p["metadata"].get("labels") or {}).get(APP_LABEL) == LAUNCHER_APP
        ]
        if not found:
            return None
        newest: JSON = max(found, key=lambda p: str(p["metadata"].get("creationTimestamp") or ""))
        return newest

    def _attachment_pod(self, pod: Mapping[str, Any] | None) -> JSON | None:
        """The first attachment pod the target pod owns, as KubeVirt takes it."""
        if pod is None:
            return None
        found = attachment_pods(self._pods, pod)
        return dict(found[0]) if found else None

    # -- sync: what the controller does to pods and to the VMI ------------------------------------

    def _sync(
        self,
        migration: JSON,
        vmi_model: VirtualMachineInstance | None,
        vmi: JSON | None,
        pod: JSON | None,
    ) -> JSON | None:
        if vmi is None or vmi_model is None:
            return pod
        phase = phase_of(migration)
        deleting = migration["metadata"].get("deletionTimestamp") is not None
        if phase in _BEFORE_HAND_OFF and deleting:
            if pod is not None and not podutil.is_terminating(pod):
                self._delete_pod(migration, pod, f"migration canceled and pod {_pod_ref(pod)} is deleted")
                return None
            return pod
        if phase == _Phase.PENDING and pod is None:
            self._check_limits(migration, vmi)
            self._create_target_pod(migration, vmi_model)
            return None
        if phase == _Phase.PENDING and pod is not None and podutil.is_pod_ready(pod):
            if vmi_has_hotplug_volumes(vmi_model) and not attachment_pods(self._pods, pod):
                self._create_attachment_pod(migration, vmi_model, pod)
        elif phase in (_Phase.PENDING, _Phase.SCHEDULING) and pod is not None:
            if self._pending_timed_out(migration, vmi, pod):
                return None
        elif phase == _Phase.SCHEDULED and pod is not None and podutil.is_pod_ready(pod):
            if migration_state(vmi).get("migrationUid") != migration["metadata"]["uid"]:
                self._hand_off(migration, vmi_model, vmi, pod)
        elif phase in (_Phase.PREPARING_TARGET, _Phase.TARGET_READY, _Phase.RUNNING) and deleting:
            state = migration_state(vmi)
            if state.get("migrationUid") == migration["metadata"]["uid"] and not state.get("abortRequested"):
                self._patch_migration_state(vmi, {**state, "abortRequested": True})
                self._events.event(
                    migration,
                    "Normal",
                    SUCCESSFUL_ABORT,
                    "Migration is ready to be canceled by virt-handler.",
                )
        return pod

    def _check_limits(self, migration: Mapping[str, Any], vmi: Mapping[str, Any]) -> None:
        """Hold the migration back while the cluster or the source node already runs its share."""
        config = self._config()
        source_node = (vmi.get("status") or {}).get("nodeName")
        running = 0
        outbound = 0
        for other in self._migrations.list():
            if other["metadata"].get("uid") == migration["metadata"].get("uid") or is_final(other):
                continue
            if phase_of(other) in _BEFORE_TARGET_CREATED and self._target_pod(other) is None:
                continue
            running += 1
            other_vmi = self._vmis.get_by_key(
                key_for(other["metadata"].get("namespace"), (other.get("spec") or {}).get("vmiName") or "")
            )
            if (
                other_vmi is not None
                and other_vmi.status is not None
                and other_vmi.status.node_name == source_node
            ):
                outbound += 1
        if (
            running >= config.parallel_migrations_per_cluster
            or outbound >= config.parallel_outbound_migrations_per_node
        ):
            self._log.info(
                "waiting for other migrations to finish",
                migration=key_of(migration),
                running=running,
                outbound=outbound,
            )
            raise RequeueAfter(LIMIT_REQUEUE_SECONDS)

    def _create_target_pod(self, migration: JSON, vmi: VirtualMachineInstance) -> None:
        pod = render_target_pod(vmi, migration, self._render_pod)
        key = key_of(migration)
        self._expectations.expect_creations(key, 1)
        try:
            created: JSON = self._api.create(PODS, migration["metadata"].get("namespace"), pod)
        except Exception:
            self._expectations.creation_observed(key)  # nothing is coming to observe
            raise
        self._events.event(
            migration,
            "Normal",
            SUCCESSFUL_CREATE_POD,
            f"Created migration target pod {podutil.pod_name(created)}",
        )
        # The phase moves on when the pod cache has it (the pod informer brings the key back).

    def _create_attachment_pod(self, migration: JSON, vmi: VirtualMachineInstance, pod: JSON) -> None:
        """KubeVirt's ``createAttachmentPod``: the target pod's own attachment pod for the volumes
        hotplugged into the source pod, mounting every claim (the VMI's volume status left out: none is
        mounted into the target launcher yet)."""
        meta = vmi.metadata
        assert meta is not None
        source = current_pod(vmi, controlled_pods(self._pods, str(meta.uid)))
        if source is None:
            return  # the VMI lost its pod: the migration fails with it
        volumes = hotplug_volumes(vmi, source)
        claims = self._claims_of(volumes, meta.namespace)
        bare = vmi.model_copy(deep=True)
        if bare.status is not None:
            bare.status.volume_status = []
        try:
            template = copy.deepcopy(self._render_attachment_pod(volumes, pod, bare, claims))
        except TemplateError as err:
            raise SyncError(f"failed to render attachment pod template: {err}", FAILED_CREATE_POD) from err
        pod_meta = template.setdefault("metadata", {})
        pod_meta["labels"] = {
            **(pod_meta.get("labels") or {}),
            MIGRATION_JOB_LABEL: migration["metadata"]["uid"],
        }
        pod_meta["annotations"] = {
            **(pod_meta.get("annotations") or {}),
            MIGRATION_JOB_NAME_ANNOTATION: migration["metadata"]["name"],
        }
        key = key_of(migration)
        self._expectations.expect_creations(key, 1)
        try:
            created: JSON = self._api.create(PODS, meta.namespace, template)
        except Exception as err:
            self._expectations.creation_observed(key)  # nothing is coming to observe
            message = describe_api_error(err)
            self._events.event(vmi, "Warning", FAILED_CREATE_POD, f"Error creating attachment pod: {message}")
            raise SyncError(f"failed to create attachment pod: {message}", FAILED_CREATE_POD) from err
        self._log.info("created the target's attachment pod", migration=key, pod=podutil.pod_name(created))
        self._events.event(
            migration, "Normal", SUCCESSFUL_CREATE_POD, f"Created attachment pod {podutil.pod_name(created)}"
        )

    def _claims_of(self, volumes: list[Volume], namespace: str | None) -> dict[str, JSON]:
        """Each volume's claim (``VirtVolumesToPVCMap``); every one must be in the PVC informer."""
        claims: dict[str, JSON] = {}
        for volume in volumes:
            name = claim_name(volume)
            if not name:
                raise SyncError(
                    f"failed to get PVC map: volume {volume.name} is not a PVC or Datavolume",
                    FAILED_CREATE_POD,
                )
            pvc = self._pvcs.get_by_key(key_for(namespace, name)) if self._pvcs is not None else None
            if pvc is None:
                raise SyncError(f"failed to get PVC map: claim {name} not found", FAILED_CREATE_POD)
            claims[volume.name] = dict(pvc)
        return claims

    def _delete_pod(self, migration: Mapping[str, Any], pod: Mapping[str, Any], message: str) -> None:
        try:
            self._api.delete(
                PODS, pod["metadata"].get("namespace"), podutil.pod_name(pod), uid=podutil.pod_uid(pod)
            )
        except NotFoundError:
            return  # gone already: nothing to report
        self._log.info("deleted the migration target pod", migration=key_of(migration), reason=message)
        self._events.event(migration, "Normal", SUCCESSFUL_DELETE_POD, message)

    def _pending_timed_out(self, migration: JSON, vmi: Mapping[str, Any], pod: JSON) -> bool:
        """Deletes a target pod pending for too long (True); otherwise looks again when it would be."""
        if podutil.pod_phase(pod) != "Pending" or podutil.is_terminating(pod):
            return False
        created = pod["metadata"].get("creationTimestamp")
        if not created:
            return False
        pending = max(0.0, (self._clock() - parse_time(str(created))).total_seconds())
        annotations = migration["metadata"].get("annotations") or {}
        unschedulable_timeout = _seconds(
            annotations.get(MIGRATION_UNSCHEDULABLE_POD_TIMEOUT_SECONDS_ANNOTATION),
            UNSCHEDULABLE_POD_TIMEOUT_SECONDS,
        )
        pending_timeout = _seconds(
            annotations.get(MIGRATION_PENDING_POD_TIMEOUT_SECONDS_ANNOTATION), PENDING_POD_TIMEOUT_SECONDS
        )
        waits = [pending_timeout - pending]
        if _unschedulable(pod):
            meta = vmi["metadata"]
            self._events.event(
                migration,
                "Warning",
                TARGET_POD_UNSCHEDULABLE,
                f"Migration target pod for VMI [{meta['namespace']}/{meta['name']}] "
                "is currently unschedulable.",
            )
            if pending >= unschedulable_timeout:
                self._delete_pod(migration, pod, f"unschedulable pod {_pod_ref(pod)} timeout period exceeded")
                return True
            waits.append(unschedulable_timeout - pending)
        if pending >= pending_timeout:
            self._delete_pod(migration, pod, f"pending pod {_pod_ref(pod)} timeout period exceeded")
            return True
        raise RequeueAfter(max(0.1, min(waits)))

    def _hand_off(self, migration: JSON, vmi_model: VirtualMachineInstance, vmi: JSON, pod: JSON) -> None:
        """Give the VMI to the target virt-handler: a fresh migrationState and the target node label.
        With hotplugged volumes it waits (an error, retried) until the target pod has its attachment pod."""
        status = vmi.get("status") or {}
        source_pod = next(
            (
                p["metadata"]["name"]
                for p in self._pods.list()
                if p["metadata"].get("uid") in (status.get("activePods") or {})
                and podutil.pod_node(p) == status.get("nodeName")
                and not (p["metadata"].get("labels") or {}).get(MIGRATION_JOB_LABEL)
            ),
            None,
        )
        state: JSON = {
            "migrationUid": migration["metadata"]["uid"],
            "targetNode": podutil.pod_node(pod),
            "sourceNode": status.get("nodeName"),
            "targetPod": podutil.pod_name(pod),
            "migrationConfiguration": self._config().to_status(),
        }
        if source_pod:
            state["sourcePod"] = source_pod
        if vmi_has_hotplug_volumes(vmi_model):
            attachment = self._attachment_pod(pod)
            if attachment is None:
                raise SyncError("target attachment pod not found", FAILED_HAND_OVER)
            self._log.info(
                "target attachment pod", migration=key_of(migration), pod=podutil.pod_name(attachment)
            )
            state["targetAttachmentPodUID"] = podutil.pod_uid(attachment)
        policy = self._matching_policy(vmi)
        if policy is not None:
            tuned = configuration_by_policy(policy, state["migrationConfiguration"])
            if tuned is not None:
                state["migrationConfiguration"] = tuned
                state["migrationPolicyName"] = policy["metadata"]["name"]
                self._log.info(
                    "migration tuned by a migration policy",
                    migration=key_of(migration),
                    policy=policy["metadata"]["name"],
                )
        # A merge patch keeps what it does not name: every field of an earlier migration's state (its
        # target's address and ports, its end and outcome) is named with null, so the state is all new.
        stale = {field: None for field in status.get("migrationState") or {} if field not in state}
        patch = {
            "metadata": {
                "resourceVersion": vmi["metadata"].get("resourceVersion"),
                "labels": {
                    MIGRATION_TARGET_NODE_NAME_LABEL: podutil.pod_node(pod),
                    **self._hotplug_labels(vmi_model, pod),
                },
            },
            "status": {"migrationState": {**stale, **state}},
        }
        meta = vmi["metadata"]
        self._api.patch(VIRTUAL_MACHINE_INSTANCES, meta["namespace"], meta["name"], patch, patch_type="merge")
        self._events.event(
            migration,
            "Normal",
            SUCCESSFUL_HAND_OVER,
            "Migration target pod is ready for preparation by virt-handler.",
        )

    @staticmethod
    def _hotplug_labels(vmi: VirtualMachineInstance, pod: Mapping[str, Any]) -> dict[str, str]:
        """What a hotplug in progress tells the target virt-handler about the target pod's resources:
        its memory request (a memory hotplug), its CPU limit (a vCPU hotplug with dedicated CPUs)."""
        conditions = vmi.status.conditions if vmi.status is not None else None
        labels: dict[str, str] = {}
        if (
            has_condition(conditions, VirtualMachineInstanceConditionType.VCPU_CHANGE)
            and vmi.is_cpu_dedicated()
        ):
            labels[VIRTUAL_MACHINE_POD_CPU_LIMITS_LABEL] = str(target_pod_cpu_limits(pod))
        if has_condition(conditions, VirtualMachineInstanceConditionType.MEMORY_CHANGE):
            labels[VIRTUAL_MACHINE_POD_MEMORY_REQUESTS_LABEL] = target_pod_memory_requests(pod)
        return labels

    def _matching_policy(self, vmi: JSON) -> JSON | None:
        policies = self._policies.list() if self._policies is not None else []
        if not policies:
            return None  # no namespace to read either
        namespace = self._api.get(NAMESPACES, None, vmi["metadata"]["namespace"])
        labels = vmi["metadata"].get("labels")
        matched = match_policy(policies, labels, namespace["metadata"].get("labels") or {})
        return dict(matched) if matched is not None else None

    def _patch_migration_state(self, vmi: JSON, state: JSON) -> None:
        # The whole migrationState, guarded by the resourceVersion it was computed from.
        meta = vmi["metadata"]
        patch = {
            "metadata": {"resourceVersion": meta.get("resourceVersion")},
            "status": {"migrationState": state},
        }
        self._api.patch(VIRTUAL_MACHINE_INSTANCES, meta["namespace"], meta["name"], patch, patch_type="merge")

    # -- status: failure detection first, then the phase machine ---------------------------------

    def _update_status(
        self,
        cached: JSON,
        migration: JSON,
        vmi: JSON | None,
        pod: JSON | None,
        failure: Exception | None = None,
        *,
        hotplugged: bool = False,
        hotplug_in_progress: bool = False,
    ) -> None:
        # Events and the failed target's deletion wait for the status write: a pass on a stale
        # cache ends in a conflict and must leave no trace.
        effects: list[Callable[[], None]] = []
        status = migration.setdefault("status", {})
        phase = phase_of(migration)
        meta = migration["metadata"]
        uid = meta["uid"]
        state = migration_state(vmi)
        ours = state.get("migrationUid") == uid
        attachment = self._attachment_pod(pod)
        if phase in FINAL_MIGRATION_PHASES:
            pass  # only the copy of the final migrationState and the cleanup below are left to do
        elif vmi is None:
            self._fail(migration, "Migration failed because vmi does not exist.", effects)
        elif (vmi.get("status") or {}).get("phase") in FINAL_VMI_PHASES and not ours:
            self._fail(migration, "Migration failed vmi shutdown during migration.", effects)
        elif meta.get("deletionTimestamp") and phase in _BEFORE_HAND_OFF:
            self._add_abort_condition(migration)
            self._fail(migration, "Migration failed due to being canceled", effects)
        elif pod is not None and podutil.is_pod_down_or_going_down(pod):
            message = "Migration failed because target pod shutdown during migration"
            self._interrupt(migration, vmi, message, effects)
        elif pod is None and phase not in _BEFORE_TARGET_CREATED:
            message = "Migration target pod was removed during active migration."
            self._interrupt(migration, vmi, message, effects)
        elif phase not in _BEFORE_HAND_OFF and not state:
            self._fail(migration, "VMI's migration state was cleared during the active migration.", effects)
        elif phase not in _BEFORE_HAND_OFF and not ours:
            self._fail(
                migration,
                "VMI's migration state was taken over by another migration job during active migration.",
                effects,
            )
        elif ours and state.get("failed"):
            self._fail(migration, "source node reported migration failed", effects)
        elif attachment is not None and podutil.is_pod_final(attachment):
            if meta.get("deletionTimestamp"):
                self._add_abort_condition(migration)
            message = "Migration failed because target attachment pod shutdown during migration"
            self._fail(migration, message, effects)
        else:
            if meta.get("deletionTimestamp"):
                self._add_abort_condition(migration)
            # With hotplugged volumes the target is only there once its attachment pod is ready too.
            attached = not hotplugged or (attachment is not None and podutil.is_pod_ready(attachment))
            self._advance(
                migration, pod, state, effects, attached=attached, hotplug_in_progress=hotplug_in_progress
            )
            self._sync_quota_condition(migration, pod, failure)
        if is_final(migration) and ours and (state.get("completed") or state.get("failed")):
            status["migrationState"] = state
        if self._target_to_clean_up(migration, vmi, pod) and pod is not None:
            message = f"migration failed and pod {_pod_ref(pod)} is deleted"
            effects.append(lambda: self._delete_pod(migration, pod, message))
        self._write(cached, migration)
        for effect in effects:
            effect()

    def _advance(
        self,
        migration: JSON,
        pod: JSON | None,
        state: JSON,
        effects: list[Callable[[], None]],
        *,
        attached: bool = True,
        hotplug_in_progress: bool = False,
    ) -> None:
        phase = phase_of(migration)
        ours = state.get("migrationUid") == migration["metadata"]["uid"]
        nxt: str | None = None
        if phase == "":
            other = state.get("migrationUid")
            busy = (
                other
                and not (state.get("completed") or state.get("failed"))
                and any(
                    m["metadata"].get("uid") == other and not is_final(m) for m in self._migrations.list()
                )
            )
            if busy:
                self._fail(
                    migration,
                    "VMI is not eligible for migration because another migration job is in progress.",
                    effects,
                )
                return
            nxt = _Phase.PENDING
        elif phase == _Phase.PENDING and pod is not None and attached:
            nxt = _Phase.SCHEDULING
        elif phase == _Phase.SCHEDULING and pod is not None and podutil.is_pod_ready(pod) and attached:
            nxt = _Phase.SCHEDULED
        elif phase == _Phase.SCHEDULED and ours and state.get("targetNode"):
            nxt = _Phase.PREPARING_TARGET
        elif phase == _Phase.PREPARING_TARGET and state.get("targetNode") and state.get("targetNodeAddress"):
            nxt = _Phase.TARGET_READY
        elif phase == _Phase.TARGET_READY and state.get("startTimestamp"):
            nxt = _Phase.RUNNING
        elif phase == _Phase.RUNNING and state.get("completed") and not hotplug_in_progress:
            nxt = _Phase.SUCCEEDED
            effects.append(
                lambda: self._events.event(
                    migration, "Normal", SUCCESSFUL_MIGRATION, "Source node reported migration succeeded"
                )
            )
        if nxt is not None:
            self._set_phase(migration, nxt)
        if phase_of(migration) not in FINAL_MIGRATION_PHASES:
            finalizers = migration["metadata"].setdefault("finalizers", [])
            if VIRTUAL_MACHINE_INSTANCE_MIGRATION_FINALIZER not in finalizers:
                finalizers.append(VIRTUAL_MACHINE_INSTANCE_MIGRATION_FINALIZER)

    def _sync_quota_condition(self, migration: JSON, pod: JSON | None, failure: Exception | None) -> None:
        """KubeVirt's RejectedByResourceQuota: set while a pending migration's target pod is refused by a
        ResourceQuota (the API server's "exceeded quota"), removed once a target pod is scheduling."""
        status = migration.setdefault("status", {})
        conditions = status.get("conditions") or []
        present = any(c.get("type") == REJECTED_BY_RESOURCE_QUOTA for c in conditions)
        phase = phase_of(migration)
        if phase == _Phase.PENDING and pod is None and failure is not None and not present:
            if "exceeded quota" in str(failure):
                now = format_time(self._clock())
                condition = {"type": REJECTED_BY_RESOURCE_QUOTA, "status": "True", "lastProbeTime": now}
                status["conditions"] = [*conditions, condition]
        elif phase == _Phase.SCHEDULING and present:
            status["conditions"] = [c for c in conditions if c.get("type") != REJECTED_BY_RESOURCE_QUOTA]

    def _set_phase(self, migration: JSON, phase: str) -> None:
        status = migration.setdefault("status", {})
        status["phase"] = phase
        status["phaseTransitionTimestamps"] = [
            *(status.get("phaseTransitionTimestamps") or []),
            {"phase": phase, "phaseTransitionTimestamp": format_time(self._clock())},
        ]

    def _fail(self, migration: JSON, message: str, effects: list[Callable[[], None]]) -> None:
        self._set_phase(migration, _Phase.FAILED)

        def report() -> None:
            self._events.event(migration, "Warning", FAILED_MIGRATION, message)
            self._log.warning("migration failed", migration=key_of(migration), reason=message)

        effects.append(report)

    def _interrupt(self, migration: JSON, vmi: JSON, message: str, effects: list[Callable[[], None]]) -> None:
        """Fail the migration, and tell the VMI when it was handed off already (the handlers stop)."""
        state = migration_state(vmi)
        if state.get("migrationUid") == migration["metadata"]["uid"] and not state.get("completed"):
            failed = {**state, "failed": True, "completed": True}
            failed.setdefault("failureReason", "Target pod is down")
            failed.setdefault("endTimestamp", format_time(self._clock()))
            self._patch_migration_state(vmi, failed)
        self._fail(migration, message, effects)

    @staticmethod
    def _add_abort_condition(migration: JSON) -> None:
        conditions = migration.setdefault("status", {}).setdefault("conditions", [])
        if not any(c.get("type") == ABORT_REQUESTED for c in conditions):
            conditions.append({"type": ABORT_REQUESTED, "status": "True", "lastProbeTime": None})

    @staticmethod
    def _target_to_clean_up(migration: JSON, vmi: JSON | None, pod: JSON | None) -> bool:
        """A failed migration's target pod goes, unless the VMI moved there after all."""
        if phase_of(migration) != _Phase.FAILED or pod is None or podutil.is_terminating(pod):
            return False
        return vmi is None or (vmi.get("status") or {}).get("nodeName") != podutil.pod_node(pod)

    def _write(self, cached: JSON, migration: JSON) -> None:
        try:
            self._write_changes(cached, migration)
        except NotFoundError:
            return  # released by its finalizer and gone
        except ConflictError:
            raise RequeueAfter(0.1) from None  # the cache was behind: look again at what is there now

    def _write_changes(self, cached: JSON, migration: JSON) -> None:
        namespace = migration["metadata"].get("namespace")
        if is_final(migration):
            finalizers = migration["metadata"].get("finalizers") or []
            migration["metadata"]["finalizers"] = [
                f for f in finalizers if f != VIRTUAL_MACHINE_INSTANCE_MIGRATION_FINALIZER
            ]
        if migration.get("status") != cached.get("status"):
            written = self._api.update_status(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, migration)
            migration["metadata"]["resourceVersion"] = written["metadata"]["resourceVersion"]
        if (migration["metadata"].get("finalizers") or []) != (cached["metadata"].get("finalizers") or []):
            self._api.update(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, migration)


def _seconds(value: object, default: int) -> float:
    try:
        return float(str(value)) if value is not None else float(default)
    except ValueError:
        return float(default)


def _unschedulable(pod: Mapping[str, Any]) -> bool:
    condition = podutil.pod_condition(pod, "PodScheduled")
    return (
        condition is not None
        and condition.get("status") == "False"
        and condition.get("reason") == "Unschedulable"
    )


def _pod_ref(pod: Mapping[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace')}/{podutil.pod_name(pod)}"
