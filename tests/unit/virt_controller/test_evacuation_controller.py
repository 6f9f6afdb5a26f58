"""The evacuation controller against a fake API server: which VMIs get an evacuation migration, and how
many at once."""

from __future__ import annotations

from typing import Any

from kubevirt.client import NODES, PODS, VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, VIRTUAL_MACHINE_INSTANCES
from kubevirt.controller import RequeueAfter
from kubevirt.virt_config.migrations import MigrationConfig
from kubevirt.virt_controller.watch.evacuation import EvacuationController

from .fakes import JSON, Cluster, FakeEvents, FakeQueue

NS = "default"


class World:
    def __init__(self, config: MigrationConfig | None = None, strategy: str | None = None) -> None:
        self.cluster = Cluster()
        self.api = self.cluster.api
        self.events = FakeEvents()
        self.queue = FakeQueue()
        self.config = config or MigrationConfig()
        self.strategy = strategy
        self.nodes = self.cluster.informer(NODES)
        self.vmis = self.cluster.informer(VIRTUAL_MACHINE_INSTANCES)
        self.migrations = self.cluster.informer(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS)
        self.pods = self.cluster.informer(PODS)
        self.controller = EvacuationController(
            api=self.api,
            events=self.events,
            node_store=self.nodes.store,
            vmi_store=self.vmis.store,
            migration_store=self.migrations.store,
            pod_store=self.pods.store,
            migration_config=lambda: self.config,
            eviction_strategy=lambda: self.strategy,
            enqueue=self.queue.add,
            clock=self.api.clock,
        )
        for informer, kind in ((self.nodes, "node"), (self.vmis, "vmi"), (self.migrations, "migration")):
            informer.add_event_handler(
                getattr(self.controller, f"on_{kind}_add"),
                getattr(self.controller, f"on_{kind}_update"),
                getattr(self.controller, f"on_{kind}_delete"),
            )
        self.requeued: list[float] = []
        for node in ("node-a", "node-b"):
            self.api.put(NODES, {"metadata": {"name": node}, "spec": {}})

    def vmi(
        self,
        name: str,
        *,
        node: str = "node-a",
        strategy: str | None = "LiveMigrate",
        migratable: bool = True,
        evacuate: bool = True,
        **status: Any,
    ) -> JSON:
        spec: JSON = {"domain": {"devices": {}}}
        if strategy:
            spec["evictionStrategy"] = strategy
        return self.api.put(
            VIRTUAL_MACHINE_INSTANCES,
            {
                "metadata": {"name": name, "namespace": NS},
                "spec": spec,
                "status": {
                    "phase": "Running",
                    "nodeName": node,
                    "activePods": {f"{name}-pod": node},
                    "conditions": [{"type": "LiveMigratable", "status": "True" if migratable else "False"}],
                    **({"evacuationNodeName": node} if evacuate else {}),
                    **status,
                },
            },
        )

    def launcher_pod(self, vmi: JSON, name: str, phase: str) -> None:
        """A launcher pod the VMI controls, in ``phase``."""
        meta = vmi["metadata"]
        owner = {
            "kind": "VirtualMachineInstance",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
        }
        self.api.put(
            PODS,
            {
                "metadata": {"name": name, "namespace": NS, "ownerReferences": [owner]},
                "spec": {"nodeName": "node-a"},
                "status": {"phase": phase},
            },
        )

    def settle(self) -> None:
        for _ in range(50):
            self.cluster.sync()
            key = self.queue.pop()
            if key is None:
                return
            try:
                self.controller.reconcile(key)
            except RequeueAfter as wait:
                self.requeued.append(wait.seconds)
        raise AssertionError("the controller did not settle")

    def created(self) -> list[JSON]:
        return self.api.find(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, NS)


def test_an_evicted_live_migrate_vmi_gets_one_evacuation_migration() -> None:
    world = World()
    world.vmi("vm1")
    world.settle()
    world.settle()  # the new migration's events bring the node back: still one migration

    [migration] = world.created()
    assert migration["metadata"]["name"].startswith("kubevirt-evacuation-")
    assert migration["metadata"]["annotations"] == {"kubevirt.io/evacuationMigration": "node-a"}
    assert migration["spec"] == {"vmiName": "vm1"}
    assert (
        "default/vm1",
        "Normal",
        "SuccessfulCreate",
        f"Created Migration {migration['metadata']['name']}",
    ) in (world.events.recorded)


def test_vmis_not_marked_or_not_wanting_to_migrate_are_left_alone() -> None:
    world = World()
    world.vmi("unmarked", evacuate=False)
    world.vmi("no-strategy", strategy=None)
    world.vmi("if-possible-but-not", strategy="LiveMigrateIfPossible", migratable=False)
    world.vmi("moved-already", evacuationNodeName="node-b")
    world.vmi("migrating", migrationState={"startTimestamp": "2026-01-01T00:00:00Z"})
    two = world.vmi("two-pods")
    world.launcher_pod(two, "a", "Running")
    world.launcher_pod(two, "b", "Pending")
    world.settle()
    assert world.created() == []


def test_finished_pods_of_earlier_migrations_do_not_hold_an_evacuation_back() -> None:
    world = World()
    # activePods lists every pod the VMI controls, finished ones too (as virt-controller writes it).
    vmi = world.vmi("moved-before", activePods={"old-source": "node-b", "current": "node-a"})
    world.launcher_pod(vmi, "old-source", "Succeeded")
    world.launcher_pod(vmi, "current", "Running")
    world.settle()
    assert [m["spec"]["vmiName"] for m in world.created()] == ["moved-before"]


def test_the_cluster_wide_strategy_applies_to_vmis_without_their_own() -> None:
    world = World(strategy="LiveMigrate")
    world.vmi("vm1", strategy=None)
    world.settle()
    assert [m["spec"]["vmiName"] for m in world.created()] == ["vm1"]


def test_an_unmigratable_live_migrate_vmi_is_reported_not_migrated() -> None:
    world = World()
    world.vmi("stuck", migratable=False)
    world.settle()
    assert world.created() == []
    assert ("default/stuck", "Normal", "FailedCreate", "VirtualMachineInstance is not migrateable") in (
        world.events.recorded
    )
    assert 60.0 in world.requeued


def test_no_more_than_two_leave_one_node_at_once() -> None:
    world = World()
    for i in range(4):
        world.vmi(f"vm{i}")
    world.cluster.sync()
    world.queue.keys[:] = ["node-a"]
    world.controller.reconcile("node-a")
    assert len(world.created()) == 2  # one pass fills the node's two outbound spots

    # Both running from node-a: the other two wait and the node is looked at again later.
    for migration in world.created():
        world.api.edit(
            VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
            NS,
            migration["metadata"]["name"],
            lambda m: m.setdefault("status", {}).update(phase="Running"),
        )
    world.settle()
    assert len(world.created()) == 2
    assert 5.0 in world.requeued

    # One finishes and its VMI now lives on node-b: a spot frees. As in KubeVirt only migrations past
    # Pending count here, so the rest get theirs one pass after another; the migration controller
    # holds their target pods back until a running spot is free.
    first = world.created()[0]
    world.api.edit(
        VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
        NS,
        first["metadata"]["name"],
        lambda m: m["status"].update(phase="Succeeded"),
    )

    def moved(vmi: JSON) -> None:
        vmi["status"].update(nodeName="node-b", activePods={"new": "node-b"})
        vmi["status"].pop("evacuationNodeName")

    world.api.edit(VIRTUAL_MACHINE_INSTANCES, NS, first["spec"]["vmiName"], moved)
    world.settle()
    assert sorted(m["spec"]["vmiName"] for m in world.created()) == ["vm0", "vm1", "vm2", "vm3"]


def test_the_cluster_limit_counts_migrations_from_every_node() -> None:
    world = World(config=MigrationConfig(parallel_migrations_per_cluster=1))
    world.vmi("elsewhere", node="node-b", evacuate=False)
    world.api.put(
        VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
        {
            "metadata": {"name": "other", "namespace": NS},
            "spec": {"vmiName": "elsewhere"},
            "status": {"phase": "Running"},
        },
    )
    world.vmi("vm1")
    world.settle()
    assert [m["metadata"]["name"] for m in world.created()] == ["other"]
    assert 5.0 in world.requeued


def test_a_node_with_the_drain_taint_evacuates_every_vmi_on_it() -> None:
    world = World()
    world.vmi("vm1", evacuate=False)
    world.api.edit(
        NODES,
        None,
        "node-a",
        lambda n: n["spec"].update(taints=[{"key": "kubevirt.io/drain", "effect": "NoSchedule"}]),
    )
    world.settle()
    assert [m["spec"]["vmiName"] for m in world.created()] == ["vm1"]
