"""The evacuation controller: VMIs that must leave a node get a migration, within the migration limits.

A VMI is to leave its node when an eviction marked it (``status.evacuationNodeName``, set by the
eviction webhook on ``kubectl drain``) or, the deprecated way, when the node carries the drain taint
(``migrations.nodeDrainTaintKey``, ``NoSchedule``). For each such VMI that wants to migrate on eviction
(``LiveMigrate``, or ``LiveMigrateIfPossible`` while migratable), is ``LiveMigratable``, has no
unfinished migration and only one launcher pod still running (finished pods of earlier migrations do not
count), a VMIM ``kubevirt-evacuation-*`` is created, annotated
``kubevirt.io/evacuationMigration: <node>``. No more are created than the free spots under
``parallelMigrationsPerCluster`` and ``parallelOutboundMigrationsPerNode``; the node is looked at again
when a spot may have freed. The work queue is keyed by node name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from kubevirt.client import VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, EventSink, KubeApi
from kubevirt.controller import ControllerExpectations, RequeueAfter, Store, key_of
from kubevirt.log import get_logger
from kubevirt.virt_config.migrations import MigrationConfig
from kubevirt.virt_controller.watch.common import (
    Clock,
    Enqueue,
    controlled_pods,
    parse_time,
    utc_now,
)
from kubevirt.virt_controller.watch.migration import is_final, phase_of
from kubevirt.virt_controller.watch.pods import is_pod_final
from kubevirt_api.core.v1 import NOT_RUNNING_MIGRATION_PHASES, VirtualMachineInstance
from kubevirt_api.core.v1.constants import API_VERSION, EVACUATION_MIGRATION_ANNOTATION
from kubevirt_api.view import JSON

GENERATE_NAME: Final = "kubevirt-evacuation-"
SUCCESSFUL_CREATE: Final = "SuccessfulCreate"
FAILED_CREATE: Final = "FailedCreate"
LIMIT_REQUEUE_SECONDS: Final = 5.0
# Unmigratable VMIs are reported again this often, so the warning stays visible during a drain.
UNMIGRATABLE_REPORT_SECONDS: Final = 60.0


def new_evacuation_migration(vmi_name: str, namespace: str, node: str) -> JSON:
    return {
        "apiVersion": API_VERSION,
        "kind": "VirtualMachineInstanceMigration",
        "metadata": {
            "generateName": GENERATE_NAME,
            "namespace": namespace,
            "annotations": {EVACUATION_MIGRATION_ANNOTATION: node},
        },
        "spec": {"vmiName": vmi_name},
    }


def counts_against_limits(migration: Mapping[str, Any]) -> bool:
    # A migration counts against the limits while it runs (KubeVirt's IsRunning()).
    return phase_of(migration) not in NOT_RUNNING_MIGRATION_PHASES


def is_migrating(vmi: VirtualMachineInstance, now: datetime) -> bool:
    """A migration has started on the VMI and not ended yet (by its migrationState timestamps)."""
    state = vmi.status.migration_state if vmi.status is not None else None
    if state is None:
        return False
    start = _time(state.start_timestamp)
    end = _time(state.end_timestamp)
    return start is not None and start <= now and not (end is not None and end <= now)


def _time(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value
    return parse_time(str(value))


class EvacuationController:
    """Creates evacuation VMIMs. Informers: Nodes (keyed), VMIs and VMIMs (enqueue the VMI's node)."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        node_store: Store[JSON],
        vmi_store: Store[VirtualMachineInstance],
        migration_store: Store[JSON],
        pod_store: Store[JSON],
        migration_config: Callable[[], MigrationConfig],
        eviction_strategy: Callable[[], str | None],
        enqueue: Enqueue,
        clock: Clock = utc_now,
    ) -> None:
        self._api = api
        self._events = events
        self._nodes = node_store
        self._vmis = vmi_store
        self._migrations = migration_store
        self._pods = pod_store
        self._migration_config = migration_config
        # The cluster-wide evictionStrategy, for VMIs that set none.
        self._eviction_strategy = eviction_strategy
        self._enqueue = enqueue
        self._clock = clock
        # Migrations just created are not in the cache yet: do not count the same free spot twice.
        self._expectations = ControllerExpectations()
        self._log = get_logger(controller="evacuation")

    # -- informer callbacks ----------------------------------------------------------------------

    def on_node_add(self, node: JSON) -> None:
        self._enqueue(key_of(node))

    def on_node_update(self, _old: JSON, new: JSON) -> None:
        self._enqueue(key_of(new))

    def on_node_delete(self, node: JSON) -> None:
        self._enqueue(key_of(node))

    def on_vmi_add(self, vmi: VirtualMachineInstance) -> None:
        self._enqueue_node_of(vmi)

    def on_vmi_update(self, old: VirtualMachineInstance, new: VirtualMachineInstance) -> None:
        # A VMI that moved frees a spot on the node it left.
        self._enqueue_node_of(old)
        self._enqueue_node_of(new)

    def on_vmi_delete(self, vmi: VirtualMachineInstance) -> None:
        self._enqueue_node_of(vmi)

    def on_migration_add(self, migration: JSON) -> None:
        node = (migration["metadata"].get("annotations") or {}).get(EVACUATION_MIGRATION_ANNOTATION)
        if node:
            self._expectations.creation_observed(node)
        self._enqueue_node_of_migration(migration)

    def on_migration_update(self, _old: JSON, new: JSON) -> None:
        self._enqueue_node_of_migration(new)

    def on_migration_delete(self, migration: JSON) -> None:
        self._enqueue_node_of_migration(migration)

    def _enqueue_node_of(self, vmi: VirtualMachineInstance) -> None:
        node = vmi.status.node_name if vmi.status is not None else None
        if node:
            self._enqueue(node)

    def _enqueue_node_of_migration(self, migration: JSON) -> None:
        vmi = self._vmis.get_by_key(
            f"{migration['metadata'].get('namespace')}/{(migration.get('spec') or {}).get('vmiName')}"
        )
        if vmi is not None:
            self._enqueue_node_of(vmi)

    # -- reconcile -------------------------------------------------------------------------------

    def reconcile(self, key: str) -> None:
        node = self._nodes.get_by_key(key)
        if node is None:
            self._expectations.delete_expectations(key)
            return
        if not self._expectations.satisfied_expectations(key):
            return
        migration_config = self._migration_config()
        cluster_strategy = self._eviction_strategy()
        on_node = self._vmis.by_index("node", key)
        to_leave = self._vmis_to_leave(node, on_node, migration_config)
        if not to_leave:
            return
        unfinished = [m for m in self._migrations.list() if not is_final(m)]
        candidates, unmigratable = self._split_candidates(to_leave, unfinished, cluster_strategy)
        if not candidates and not unmigratable:
            return
        running = [m for m in unfinished if counts_against_limits(m)]
        names_here = {(v.metadata.namespace, v.metadata.name) for v in on_node if v.metadata is not None}
        outbound = sum(
            1
            for m in running
            if (m["metadata"].get("namespace"), (m.get("spec") or {}).get("vmiName")) in names_here
        )
        free = min(
            migration_config.parallel_migrations_per_cluster - len(running),
            migration_config.parallel_outbound_migrations_per_node - outbound,
        )
        if free <= 0:
            raise RequeueAfter(LIMIT_REQUEUE_SECONDS)
        selected = candidates[:free]
        left = free - len(selected)
        for vmi in unmigratable[: max(0, left)]:
            self._events.event(vmi, "Normal", FAILED_CREATE, "VirtualMachineInstance is not migrateable")
        if selected:
            self._create_migrations(key, selected)
        elif left > 0 and unmigratable:
            raise RequeueAfter(UNMIGRATABLE_REPORT_SECONDS)

    def _vmis_to_leave(
        self, node: JSON, on_node: Sequence[VirtualMachineInstance], config: MigrationConfig
    ) -> list[VirtualMachineInstance]:
        if _has_taint(node, config.node_drain_taint_key):
            return list(on_node)
        now = self._clock()
        return [
            vmi
            for vmi in on_node
            if vmi.is_marked_for_eviction()
            and vmi.status is not None
            and vmi.status.evacuation_node_name == vmi.status.node_name
            and not is_migrating(vmi, now)
        ]

    def _split_candidates(
        self,
        vmis: Iterable[VirtualMachineInstance],
        unfinished: Sequence[JSON],
        cluster_strategy: str | None,
    ) -> tuple[list[VirtualMachineInstance], list[VirtualMachineInstance]]:
        migrating = {
            (m["metadata"].get("namespace"), (m.get("spec") or {}).get("vmiName")) for m in unfinished
        }
        candidates: list[VirtualMachineInstance] = []
        unmigratable: list[VirtualMachineInstance] = []
        for vmi in vmis:
            if vmi.metadata is None or vmi.is_final() or vmi.metadata.deletion_timestamp is not None:
                continue  # shutting down
            strategy = (vmi.spec.eviction_strategy if vmi.spec is not None else None) or cluster_strategy
            migratable = vmi.is_migratable()
            wants = strategy == "LiveMigrate" or (strategy == "LiveMigrateIfPossible" and migratable)
            if not wants:
                continue  # does not want to migrate on eviction
            if not migratable:
                unmigratable.append(vmi)
                continue
            if (vmi.metadata.namespace, vmi.metadata.name) in migrating:
                continue
            if self._running_pods(vmi) > 1:
                continue  # the pods of an earlier migration are still going
            candidates.append(vmi)
        return candidates, unmigratable

    def _running_pods(self, vmi: VirtualMachineInstance) -> int:
        """The VMI's launcher pods that have not finished (KubeVirt's VMIActivePodsCount)."""
        assert vmi.metadata is not None
        return sum(1 for pod in controlled_pods(self._pods, vmi.metadata.uid or "") if not is_pod_final(pod))

    def _create_migrations(self, node: str, vmis: Sequence[VirtualMachineInstance]) -> None:
        self._expectations.expect_creations(node, len(vmis))
        errors: list[str] = []
        for vmi in vmis:
            assert vmi.metadata is not None
            namespace = vmi.metadata.namespace or ""
            body = new_evacuation_migration(vmi.metadata.name or "", namespace, node)
            try:
                created: JSON = self._api.create(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, body)
            except Exception as err:  # reported on the VMI, retried through the queue
                self._expectations.creation_observed(node)
                self._events.event(vmi, "Warning", FAILED_CREATE, f"Error creating a Migration: {err}")
                errors.append(f"{namespace}/{vmi.metadata.name}: {err}")
                continue
            self._log.info(
                "created evacuation migration",
                node=node,
                vmi=f"{namespace}/{vmi.metadata.name}",
                migration=created["metadata"]["name"],
            )
            self._events.event(
                vmi, "Normal", SUCCESSFUL_CREATE, f"Created Migration {created['metadata']['name']}"
            )
        if errors:
            raise RuntimeError("creating evacuation migrations failed: " + "; ".join(errors))


def _has_taint(node: Mapping[str, Any], key: str) -> bool:
    return any(
        t.get("key") == key and t.get("effect") == "NoSchedule"
        for t in (node.get("spec") or {}).get("taints") or []
    )
