"""The workload-update controller: running VMIs that must move to a new launcher pod get one.

A VMI needs a new launcher pod when its launcher runs an image other than the one this virt-controller
deploys (``status.launcherContainerImageVersion``, which the VMI controller keeps), or while a change it
cannot take in place is in progress: a vCPU hotplug (``HotVCPUChange`` present), a memory hotplug
(``HotMemoryChange`` True), another live update needing a migration (``MigrationRequired`` True) or a
volumes update (``VolumesChange`` True). The KubeVirt CR's ``spec.workloadUpdateStrategy`` says how:
``LiveMigrate`` creates a VMIM ``kubevirt-workload-update-*`` (annotated
``kubevirt.io/workloadUpdateMigration``) for a migratable VMI, no more than the free spots under
``parallelMigrationsPerCluster``; ``Evict`` evicts the launcher pod of the others, ``batchEvictionSize``
(10) VMIs every ``batchEvictionInterval`` (1m). The count of such VMIs is written to the CR's
``status.outdatedVirtualMachineInstanceWorkloads`` and the ``kubevirt_vmi_number_of_outdated`` gauge.

A workload-update migration whose reason went away (the hotplug was reverted) is deleted, which cancels
it, unless the domain already runs on the target. Nothing is done while KubeVirt itself is being
deployed or updated. The work queue is keyed by the KubeVirt CR; there is one.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

from prometheus_client import Gauge

from kubevirt.client import KUBEVIRTS, PODS, VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, EventSink, KubeApi
from kubevirt.client.errors import NotFoundError
from kubevirt.controller import ControllerExpectations, RequeueAfter, Store, key_of
from kubevirt.log import get_logger
from kubevirt.service.durations import SECOND, parse_go_duration
from kubevirt.virt_config.migrations import MigrationConfig
from kubevirt.virt_controller.watch.common import Clock, Enqueue, controlled_pods, describe_api_error, utc_now
from kubevirt.virt_controller.watch.conditions import TRUE, has_condition
from kubevirt.virt_controller.watch.evacuation import counts_against_limits, is_migrating
from kubevirt.virt_controller.watch.migration import is_final, is_hotplug_in_progress
from kubevirt.virt_controller.watch.vmi import current_pod
from kubevirt_api.core.v1 import (
    KubeVirtPhase,
    VirtualMachineInstance,
    VirtualMachineInstanceConditionType,
)
from kubevirt_api.core.v1.constants import (
    API_VERSION,
    VOLUMES_UPDATE_MIGRATION,
    WORKLOAD_UPDATE_MIGRATION_ABORTION_ANNOTATION,
    WORKLOAD_UPDATE_MIGRATION_ANNOTATION,
)
from kubevirt_api.core.v1.kubevirt import WorkloadUpdateMethod
from kubevirt_api.view import JSON

GENERATE_NAME: Final = "kubevirt-workload-update-"
SUCCESSFUL_CREATE: Final = "SuccessfulCreate"
FAILED_CREATE: Final = "FailedCreate"
SUCCESSFUL_EVICT: Final = "SuccessfulEvict"
FAILED_EVICT: Final = "FailedEvict"
SUCCESSFUL_CHANGE_ABORTION: Final = "SuccessfulChangeAbortion"
FAILED_CHANGE_ABORTION: Final = "FailedChangeAbortion"

# Events are taken in with this delay, so a burst of them makes one pass (the queue runs one at a time).
THROTTLE_SECONDS: Final = 5.0
# While VMIs are left to update, the CR is looked at again this often.
PERIODIC_REQUEUE_SECONDS: Final = 30.0
DEFAULT_BATCH_EVICTION_SIZE: Final = 10
DEFAULT_BATCH_EVICTION_INTERVAL_SECONDS: Final = 60.0
# A label value's limit: longer VMI names are stood in for by the VMI's uid.
_LABEL_VALUE_MAX: Final = 63
_PERSISTENT_STATE_PREFIX: Final = "persistent-state-for"
_SHARED_ACCESS_MODES: Final = frozenset({"ReadOnlyMany", "ReadWriteMany"})
_OUTDATED_PATH: Final = "/status/outdatedVirtualMachineInstanceWorkloads"

OUTDATED_WORKLOADS = Gauge(
    "kubevirt_vmi_number_of_outdated",
    "Indication for the total number of VirtualMachineInstance workloads that are not running within "
    "the most up-to-date version of the virt-launcher environment.",
)


class PodEvictor(Protocol):
    def evict(self, namespace: str, name: str) -> None:
        """Asks the API server to evict the pod (PodDisruptionBudgets and eviction webhooks apply)."""
        ...


class _Requester(Protocol):
    def request(self, method: str, path: str, *, body: Any = None) -> bytes: ...


class SubresourceEvictor:
    """:class:`PodEvictor` through the pods' ``eviction`` subresource."""

    def __init__(self, client: _Requester) -> None:
        self._client = client

    def evict(self, namespace: str, name: str) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {},
        }
        self._client.request("POST", PODS.path(namespace, name, "eviction"), body=body)


def new_workload_update_migration(vmi: VirtualMachineInstance) -> JSON:
    assert vmi.metadata is not None
    meta: JSON = {
        "generateName": GENERATE_NAME,
        "namespace": vmi.metadata.namespace,
        "annotations": {WORKLOAD_UPDATE_MIGRATION_ANNOTATION: ""},
    }
    if is_volumes_update_in_progress(vmi):
        # The volume-migration code finds its migration by this label.
        name = vmi.metadata.name or ""
        meta["labels"] = {
            VOLUMES_UPDATE_MIGRATION: name if len(name) <= _LABEL_VALUE_MAX else str(vmi.metadata.uid)
        }
    return {
        "apiVersion": API_VERSION,
        "kind": "VirtualMachineInstanceMigration",
        "metadata": meta,
        "spec": {"vmiName": vmi.metadata.name},
    }


def is_volumes_update_in_progress(vmi: VirtualMachineInstance) -> bool:
    conditions = vmi.status.conditions if vmi.status is not None else None
    return has_condition(conditions, VirtualMachineInstanceConditionType.VOLUMES_CHANGE, TRUE)


def volumes_migratable(vmi: VirtualMachineInstance) -> bool:
    """A volumes update can migrate the VMI: volumes are being migrated, storage live migration is not
    ruled out, and every volume only one node may use is among those copied."""
    status = vmi.status
    if status is None or not status.migrated_volumes:
        return False
    if has_condition(
        status.conditions, VirtualMachineInstanceConditionType.IS_STORAGE_LIVE_MIGRATABLE, "False"
    ):
        return False
    copied = {v.volume_name for v in status.migrated_volumes}
    for volume in status.volume_status or []:
        claim = volume.persistent_volume_claim_info
        if claim is None or volume.name.startswith(_PERSISTENT_STATE_PREFIX):
            continue
        single_node = not _SHARED_ACCESS_MODES & set(claim.access_modes or [])
        if single_node and volume.name not in copied:
            return False
    return True


def _has_annotation(vmi: VirtualMachineInstance, annotation: str) -> bool:
    return vmi.metadata is not None and annotation in (vmi.metadata.annotations or {})


def _vmi_key_of_migration(migration: Mapping[str, Any]) -> tuple[str | None, str | None]:
    return migration["metadata"].get("namespace"), (migration.get("spec") or {}).get("vmiName")


@dataclass
class UpdateData:
    """One pass's view: the VMIs to update (all, and those to migrate or evict now), the VMIs whose
    workload-update migration is to be cancelled, and the migrations running in the cluster."""

    outdated: list[VirtualMachineInstance] = field(default_factory=list)
    migratable: list[VirtualMachineInstance] = field(default_factory=list)
    evictable: list[VirtualMachineInstance] = field(default_factory=list)
    abort: list[VirtualMachineInstance] = field(default_factory=list)
    active_migrations: int = 0


class WorkloadUpdateController:
    """Migrates or evicts VMIs to update. Informers: the KubeVirt CR (keyed), VMIs (updates only, of VMIs
    with a change in progress), VMIMs and Pods (read)."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        kubevirt_store: Store[JSON],
        vmi_store: Store[VirtualMachineInstance],
        migration_store: Store[JSON],
        pod_store: Store[JSON],
        launcher_image: str,
        migration_config: Callable[[], MigrationConfig],
        evictor: PodEvictor | None,
        enqueue: Enqueue,
        clock: Clock = utc_now,
        rng: random.Random | None = None,
    ) -> None:
        self._api = api
        self._events = events
        self._kubevirts = kubevirt_store
        self._vmis = vmi_store
        self._migrations = migration_store
        self._pods = pod_store
        self._launcher_image = launcher_image
        self._migration_config = migration_config
        # Without one (a client that cannot reach the eviction subresource) evictions are reported failed.
        self._evictor = evictor
        self._enqueue = enqueue
        self._clock = clock
        self._rng = rng or random.Random()
        # Migrations just created are not in the cache yet: no second one for the same VMI meanwhile.
        self._expectations = ControllerExpectations()
        self._last_eviction_batch: datetime | None = None
        self._log = get_logger(controller="workload-update")

    # -- informer callbacks ----------------------------------------------------------------------

    def on_kubevirt_add(self, kubevirt: JSON) -> None:
        self._enqueue(key_of(kubevirt))

    def on_kubevirt_update(self, _old: JSON, new: JSON) -> None:
        self._enqueue(key_of(new))

    def on_kubevirt_delete(self, kubevirt: JSON) -> None:
        self._enqueue(key_of(kubevirt))

    def on_vmi_update(self, _old: VirtualMachineInstance, new: VirtualMachineInstance) -> None:
        # Only a change in progress on a VMI not migrating yet is news; outdated launchers are found by
        # the periodic passes.
        if new.is_final() or is_migrating(new, self._clock()):
            return
        if is_hotplug_in_progress(new) or is_volumes_update_in_progress(new):
            self._enqueue_kubevirt()

    def on_migration_add(self, migration: JSON) -> None:
        key = self._kubevirt_key()
        if key is None:
            return
        if WORKLOAD_UPDATE_MIGRATION_ANNOTATION in (migration["metadata"].get("annotations") or {}):
            self._expectations.creation_observed(key)
        self._enqueue(key)

    def on_migration_update(self, _old: JSON, _new: JSON) -> None:
        self._enqueue_kubevirt()

    def on_migration_delete(self, _migration: JSON) -> None:
        self._enqueue_kubevirt()

    def _enqueue_kubevirt(self) -> None:
        key = self._kubevirt_key()
        if key is not None:
            self._enqueue(key)

    def _kubevirt_key(self) -> str | None:
        kubevirts = self._kubevirts.list()
        if len(kubevirts) > 1:
            self._log.error("more than one KubeVirt custom resource detected", count=len(kubevirts))
            return None
        return key_of(kubevirts[0]) if kubevirts else None

    # -- what each VMI needs ---------------------------------------------------------------------

    def is_outdated(self, vmi: VirtualMachineInstance) -> bool:
        """The launcher runs another image than ours (unknown until the VMI controller recorded it)."""
        if vmi.is_final() or vmi.status is None:
            return False
        image = vmi.status.launcher_container_image_version
        return bool(image) and image != self._launcher_image

    def requires_migration(self, vmi: VirtualMachineInstance) -> bool:
        if vmi.is_final() or is_migrating(vmi, self._clock()):
            return False
        if _has_annotation(vmi, WORKLOAD_UPDATE_MIGRATION_ABORTION_ANNOTATION):
            return False
        return is_hotplug_in_progress(vmi) or is_volumes_update_in_progress(vmi)

    def should_abort_migration(self, vmi: VirtualMachineInstance) -> bool:
        """The VMI has an unfinished workload-update migration it no longer needs."""
        has_migration = bool(self._workload_update_migrations(vmi))
        if _has_annotation(vmi, WORKLOAD_UPDATE_MIGRATION_ABORTION_ANNOTATION):
            return has_migration
        if is_hotplug_in_progress(vmi) or is_volumes_update_in_progress(vmi):
            return False
        state = vmi.status.migration_state if vmi.status is not None else None
        if state is not None and state.target_node_domain_ready_timestamp is not None:
            return False  # the domain runs on the target already: the migration is as good as done
        return has_migration

    def _workload_update_migrations(self, vmi: VirtualMachineInstance) -> list[JSON]:
        assert vmi.metadata is not None
        wanted = (vmi.metadata.namespace, vmi.metadata.name)
        return [
            m
            for m in self._migrations.list()
            if _vmi_key_of_migration(m) == wanted
            and not is_final(m)
            and WORKLOAD_UPDATE_MIGRATION_ANNOTATION in (m["metadata"].get("annotations") or {})
        ]

    def update_data(self, kubevirt: Mapping[str, Any]) -> UpdateData:
        data = UpdateData()
        unfinished = [m for m in self._migrations.list() if not is_final(m)]
        with_migration = {_vmi_key_of_migration(m) for m in unfinished}
        methods = set(_strategy(kubevirt).get("workloadUpdateMethods") or [])
        may_migrate = WorkloadUpdateMethod.LIVE_MIGRATE in methods
        may_evict = WorkloadUpdateMethod.EVICT in methods
        data.active_migrations = sum(1 for m in unfinished if counts_against_limits(m))
        now = self._clock()
        for vmi in self._vmis.list():
            if vmi.metadata is None or not vmi.is_running() or vmi.is_marked_for_deletion():
                continue  # only running VMIs that are not shutting down
            outdated = self.is_outdated(vmi)
            if not outdated and self.should_abort_migration(vmi):
                data.abort.append(vmi)
                continue
            if not outdated and not self.requires_migration(vmi):
                continue
            data.outdated.append(vmi)
            # Counted, but left alone while a migration of it is under way.
            if is_migrating(vmi, now) or (vmi.metadata.namespace, vmi.metadata.name) in with_migration:
                continue
            if may_migrate and (vmi.is_migratable() or volumes_migratable(vmi)):
                data.migratable.append(vmi)
            elif may_evict:
                data.evictable.append(vmi)
        return data

    # -- reconcile -------------------------------------------------------------------------------

    def reconcile(self, key: str) -> None:
        kubevirt = self._kubevirts.get_by_key(key)
        if kubevirt is None:
            self._expectations.delete_expectations(key)
            return
        # Until the migrations created last are in the cache, a VMI could get a second one.
        if not self._expectations.satisfied_expectations(key):
            return
        status = kubevirt.get("status") or {}
        if status.get("phase") != KubeVirtPhase.DEPLOYED:
            return  # KubeVirt is not (fully) deployed
        if status.get("observedDeploymentID") != status.get("targetDeploymentID"):
            return  # KubeVirt is being updated: its workloads are updated once that is over
        self._sync(key, kubevirt)

    def _sync(self, key: str, kubevirt: JSON) -> None:
        data = self.update_data(kubevirt)
        OUTDATED_WORKLOADS.set(len(data.outdated))
        self._write_outdated_count(kubevirt, len(data.outdated))
        self._rng.shuffle(data.migratable)  # not always the same VMIs first, should some keep failing

        strategy = _strategy(kubevirt)
        batch_size = _int(strategy.get("batchEvictionSize"), DEFAULT_BATCH_EVICTION_SIZE)
        batch_interval = self._batch_interval(strategy.get("batchEvictionInterval"))
        now = self._clock()
        evict_count = 0
        last = self._last_eviction_batch
        if data.evictable and (last is None or now > last + batch_interval):
            evict_count = min(batch_size, len(data.evictable))
            self._last_eviction_batch = now

        # Only as many as can run now: more would just wait in Pending (the migration controller holds
        # them back anyway).
        free = max(0, self._migration_config().parallel_migrations_per_cluster - data.active_migrations)
        to_migrate = data.migratable[:free]
        to_evict = data.evictable[: max(0, evict_count)]

        errors: list[str] = []
        self._expectations.expect_creations(key, len(to_migrate))
        for vmi in to_migrate:
            errors += self._migrate(key, vmi)
        for vmi in to_evict:
            errors += self._evict(vmi)
        for vmi in data.abort:
            errors += self._abort(vmi)
        if errors:
            raise RuntimeError("workload update: " + "; ".join(errors))
        if data.migratable or data.evictable or data.abort:
            raise RequeueAfter(PERIODIC_REQUEUE_SECONDS)

    def _batch_interval(self, value: object) -> timedelta:
        if value is None:
            return timedelta(seconds=DEFAULT_BATCH_EVICTION_INTERVAL_SECONDS)
        try:
            return timedelta(seconds=parse_go_duration(str(value)) / SECOND)
        except ValueError as err:
            self._log.warning("invalid batchEvictionInterval, using the default", reason=str(err))
            return timedelta(seconds=DEFAULT_BATCH_EVICTION_INTERVAL_SECONDS)

    def _write_outdated_count(self, kubevirt: JSON, count: int) -> None:
        current = (kubevirt.get("status") or {}).get("outdatedVirtualMachineInstanceWorkloads")
        if current == count:
            return
        if current is None:
            patch: list[JSON] = [{"op": "add", "path": _OUTDATED_PATH, "value": count}]
        else:
            # Only over the value this pass saw: a concurrent writer makes the test fail, and we retry.
            patch = [
                {"op": "test", "path": _OUTDATED_PATH, "value": current},
                {"op": "replace", "path": _OUTDATED_PATH, "value": count},
            ]
        meta = kubevirt["metadata"]
        try:
            self._api.patch(
                KUBEVIRTS, meta.get("namespace"), meta["name"], patch, patch_type="json", subresource="status"
            )
        except Exception as err:
            raise RuntimeError(
                f"unable to patch the KubeVirt status' outdatedVirtualMachineInstanceWorkloads: {err}"
            ) from err

    def _migrate(self, key: str, vmi: VirtualMachineInstance) -> list[str]:
        assert vmi.metadata is not None
        namespace = vmi.metadata.namespace
        try:
            created: JSON = self._api.create(
                VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, new_workload_update_migration(vmi)
            )
        except Exception as err:  # reported on the VMI, retried through the queue
            self._expectations.creation_observed(key)  # nothing is coming to observe
            message = describe_api_error(err)
            self._events.event(
                vmi,
                "Warning",
                FAILED_CREATE,
                f"Error creating a Migration for automated workload update: {message}",
            )
            return [f"{namespace}/{vmi.metadata.name}: {message}"]
        name = created["metadata"]["name"]
        self._log.info(
            "migrating the VMI for a workload update", vmi=f"{namespace}/{vmi.metadata.name}", migration=name
        )
        self._events.event(
            vmi, "Normal", SUCCESSFUL_CREATE, f"Created Migration {name} for automated workload update"
        )
        return []

    def _evict(self, vmi: VirtualMachineInstance) -> list[str]:
        assert vmi.metadata is not None
        ref = f"{vmi.metadata.namespace}/{vmi.metadata.name}"
        pod = current_pod(vmi, controlled_pods(self._pods, vmi.metadata.uid or ""))
        if pod is None:
            message = "Error detecting active pod for VMI during workload update: no launcher pod found"
            self._events.event(vmi, "Warning", FAILED_EVICT, message)
            return [f"{ref}: no launcher pod found"]
        if self._evictor is None:
            message = "Error deleting VMI during automated workload update: evictions are not available"
            self._events.event(vmi, "Warning", FAILED_EVICT, message)
            return [f"{ref}: evictions are not available"]
        pod_meta = pod["metadata"]
        try:
            self._evictor.evict(pod_meta.get("namespace") or vmi.metadata.namespace or "", pod_meta["name"])
        except NotFoundError:
            pass  # the pod is gone already: as good as evicted
        except Exception as err:  # refused (a disruption budget, the eviction webhook): tried again later
            message = describe_api_error(err)
            self._events.event(
                vmi,
                "Warning",
                FAILED_EVICT,
                f"Error deleting VMI during automated workload update: {message}",
            )
            return [f"{ref}: {message}"]
        self._log.info("evicted the VMI's launcher pod for a workload update", vmi=ref, pod=pod_meta["name"])
        self._events.event(
            vmi, "Normal", SUCCESSFUL_EVICT, "Initiated eviction of VMI as part of automated workload update"
        )
        return []

    def _abort(self, vmi: VirtualMachineInstance) -> list[str]:
        """Deletes the VMI's workload-update migrations: the migration controller cancels them."""
        assert vmi.metadata is not None
        errors: list[str] = []
        for migration in self._workload_update_migrations(vmi):
            namespace, name = migration["metadata"].get("namespace"), migration["metadata"]["name"]
            try:
                self._api.delete(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, name)
            except NotFoundError:
                continue
            except Exception as err:
                message = describe_api_error(err)
                self._events.event(
                    vmi,
                    "Normal",
                    FAILED_CHANGE_ABORTION,
                    f"Failed to abort change for vmi: {vmi.metadata.name}: {message}",
                )
                errors.append(f"{namespace}/{name}: {message}")
                continue
            self._log.info(
                "deleted a workload-update migration no longer needed", migration=f"{namespace}/{name}"
            )
            self._events.event(
                vmi, "Normal", SUCCESSFUL_CHANGE_ABORTION, f"Aborted change for vmi: {vmi.metadata.name}"
            )
        return errors


def _strategy(kubevirt: Mapping[str, Any]) -> Mapping[str, Any]:
    return dict((kubevirt.get("spec") or {}).get("workloadUpdateStrategy") or {})


def _int(value: object, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value
