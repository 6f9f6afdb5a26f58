"""The workload-update controller against a fake API server: which VMIs get a workload-update migration
or an eviction, how many at once, and which such migrations are cancelled."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import (
    KUBEVIRTS,
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCES,
    ForbiddenError,
    NotFoundError,
)
from kubevirt.controller import RequeueAfter
from kubevirt.virt_config.migrations import MigrationConfig
from kubevirt.virt_controller.watch.workload_updater import (
    SubresourceEvictor,
    WorkloadUpdateController,
    new_workload_update_migration,
)
from kubevirt_api.core.v1 import VirtualMachineInstance

from .fakes import JSON, Cluster, FakeEvents, FakeInformer, FakeQueue

NS = "default"
KV_NS = "kubevirt"
KV_KEY = f"{KV_NS}/kubevirt"
LAUNCHER = "registry.example/virt-launcher:v2"
MEMORY_CHANGE = {"type": "HotMemoryChange", "status": "True"}


class FakeEvictor:
    def __init__(self) -> None:
        self.evicted: list[tuple[str, str]] = []
        self.fail: Exception | None = None

    def evict(self, namespace: str, name: str) -> None:
        if self.fail is not None:
            raise self.fail
        self.evicted.append((namespace, name))


class World:
    def __init__(self, config: MigrationConfig | None = None, **strategy: Any) -> None:
        self.cluster = Cluster()
        self.api = self.cluster.api
        self.events = FakeEvents()
        self.queue = FakeQueue()
        self.config = config or MigrationConfig()
        self.evictor = FakeEvictor()
        # The fake cluster has no KubeVirt decoder: the CR is kept as JSON, as the real informer does.
        self.kubevirts: FakeInformer[JSON] = FakeInformer(lambda obj: obj)
        self.cluster.informers[KUBEVIRTS.plural] = self.kubevirts
        self.vmis = self.cluster.informer(VIRTUAL_MACHINE_INSTANCES)
        self.migrations = self.cluster.informer(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS)
        self.pods = self.cluster.informer(PODS)
        self.controller = WorkloadUpdateController(
            api=self.api,
            events=self.events,
            kubevirt_store=self.kubevirts.store,
            vmi_store=self.vmis.store,
            migration_store=self.migrations.store,
            pod_store=self.pods.store,
            launcher_image=LAUNCHER,
            migration_config=lambda: self.config,
            evictor=self.evictor,
            enqueue=self.queue.add,
            clock=self.api.clock,
        )
        for informer, kind in ((self.kubevirts, "kubevirt"), (self.migrations, "migration")):
            informer.add_event_handler(
                getattr(self.controller, f"on_{kind}_add"),
                getattr(self.controller, f"on_{kind}_update"),
                getattr(self.controller, f"on_{kind}_delete"),
            )
        self.vmis.add_event_handler(lambda _: None, self.controller.on_vmi_update, lambda _: None)
        self.requeued: list[float] = []
        self.api.put(
            KUBEVIRTS,
            {
                "metadata": {"name": "kubevirt", "namespace": KV_NS},
                "spec": {"workloadUpdateStrategy": {"workloadUpdateMethods": ["LiveMigrate"], **strategy}},
                "status": {"phase": "Deployed", "observedDeploymentID": "d1", "targetDeploymentID": "d1"},
            },
        )

    def vmi(
        self,
        name: str,
        *,
        conditions: list[JSON] | None = None,
        migratable: bool = True,
        image: str | None = LAUNCHER,
        annotations: dict[str, str] | None = None,
        **status: Any,
    ) -> JSON:
        meta: JSON = {"name": name, "namespace": NS}
        if annotations:
            meta["annotations"] = annotations
        vmi = self.api.put(
            VIRTUAL_MACHINE_INSTANCES,
            {
                "metadata": meta,
                "spec": {"domain": {"devices": {}}},
                "status": {
                    "phase": "Running",
                    "nodeName": "node-a",
                    "conditions": [
                        {"type": "LiveMigratable", "status": "True" if migratable else "False"},
                        *(conditions or []),
                    ],
                    **({"launcherContainerImageVersion": image} if image else {}),
                    **status,
                },
            },
        )
        owner = {
            "kind": "VirtualMachineInstance",
            "name": name,
            "uid": vmi["metadata"]["uid"],
            "controller": True,
        }
        self.api.put(
            PODS,
            {
                "metadata": {"name": f"virt-launcher-{name}", "namespace": NS, "ownerReferences": [owner]},
                "spec": {"nodeName": "node-a"},
                "status": {"phase": "Running"},
            },
        )
        return vmi

    def migration(self, name: str, vmi: str, phase: str, *, workload_update: bool = True) -> JSON:
        meta: JSON = {"name": name, "namespace": NS}
        if workload_update:
            meta["annotations"] = {"kubevirt.io/workloadUpdateMigration": ""}
        return self.api.put(
            VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
            {"metadata": meta, "spec": {"vmiName": vmi}, "status": {"phase": phase}},
        )

    def edit_kubevirt(self, change: Any) -> None:
        self.api.edit(KUBEVIRTS, KV_NS, "kubevirt", change)

    def settle(self) -> None:
        self.queue.add(KV_KEY)
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

    def outdated_count(self) -> Any:
        return self.api.get(KUBEVIRTS, KV_NS, "kubevirt")["status"].get(
            "outdatedVirtualMachineInstanceWorkloads"
        )


def test_a_memory_hotplug_in_progress_gets_one_workload_update_migration() -> None:
    world = World()
    world.vmi("vm1", conditions=[MEMORY_CHANGE])
    world.settle()
    world.settle()  # the migration's events bring the CR back: still one migration

    [migration] = world.created()
    assert migration["metadata"]["name"].startswith("kubevirt-workload-update-")
    assert migration["metadata"]["annotations"] == {"kubevirt.io/workloadUpdateMigration": ""}
    assert "labels" not in migration["metadata"]
    assert migration["spec"] == {"vmiName": "vm1"}
    assert (
        "default/vm1",
        "Normal",
        "SuccessfulCreate",
        f"Created Migration {migration['metadata']['name']} for automated workload update",
    ) in world.events.recorded
    assert world.outdated_count() == 1
    assert 30.0 in world.requeued


@pytest.mark.parametrize(
    ("condition", "migrates"),
    [
        ({"type": "HotVCPUChange", "status": "True"}, True),
        ({"type": "HotVCPUChange", "status": "False"}, True),  # present at all: not done yet
        ({"type": "HotMemoryChange", "status": "False"}, False),  # the hotplug failed
        ({"type": "MigrationRequired", "status": "True"}, True),
        ({"type": "MigrationRequired", "status": "False"}, False),
    ],
)
def test_which_changes_in_progress_need_a_migration(condition: JSON, migrates: bool) -> None:
    world = World()
    world.vmi("vm1", conditions=[condition])
    world.settle()
    assert len(world.created()) == (1 if migrates else 0)
    assert world.outdated_count() == (1 if migrates else 0)


def test_an_outdated_launcher_is_migrated_and_an_unknown_or_current_one_is_not() -> None:
    world = World()
    world.vmi("old", image="registry.example/virt-launcher:v1")
    world.vmi("current")
    world.vmi("unknown", image=None)
    world.settle()
    assert [m["spec"]["vmiName"] for m in world.created()] == ["old"]


def test_nothing_happens_while_kubevirt_is_deploying_or_updating() -> None:
    world = World()
    world.edit_kubevirt(lambda kv: kv["status"].update(phase="Deploying"))
    world.vmi("vm1", conditions=[MEMORY_CHANGE])
    world.settle()
    assert world.created() == []

    world.edit_kubevirt(lambda kv: kv["status"].update(phase="Deployed", targetDeploymentID="d2"))
    world.settle()
    assert world.created() == []
    assert world.outdated_count() is None

    world.edit_kubevirt(lambda kv: kv["status"].update(observedDeploymentID="d2"))
    world.settle()
    assert len(world.created()) == 1


def test_the_outdated_count_is_replaced_only_over_the_value_seen() -> None:
    world = World()
    world.edit_kubevirt(lambda kv: kv["status"].update(outdatedVirtualMachineInstanceWorkloads=4))
    world.vmi("vm1", conditions=[MEMORY_CHANGE])
    world.cluster.sync()
    # The pass reads 4, but someone changed it meanwhile: the patch's test fails and the pass is retried.
    stale = world.kubevirts.store.get_by_key(KV_KEY)
    assert stale is not None
    world.edit_kubevirt(lambda kv: kv["status"].update(outdatedVirtualMachineInstanceWorkloads=7))
    world.kubevirts.store.upsert(stale)
    with pytest.raises(RuntimeError, match="outdatedVirtualMachineInstanceWorkloads"):
        world.controller.reconcile(KV_KEY)
    assert world.outdated_count() == 7
    assert world.created() == []

    world.settle()
    assert world.outdated_count() == 1


def test_a_vmi_already_migrating_is_counted_but_not_migrated_again() -> None:
    world = World()
    world.vmi("mid-flight", conditions=[MEMORY_CHANGE])
    world.migration("user-migration", "mid-flight", "Scheduling", workload_update=False)
    world.vmi(
        "moving",
        image="registry.example/virt-launcher:v1",
        migrationState={"startTimestamp": "2026-01-01T11:00:00Z"},
    )
    world.settle()
    assert [m["metadata"]["name"] for m in world.created()] == ["user-migration"]
    assert world.outdated_count() == 2


def test_no_more_migrations_are_created_than_the_cluster_has_free_spots() -> None:
    world = World(config=MigrationConfig(parallel_migrations_per_cluster=2))
    world.vmi("busy")
    world.migration("running", "busy", "Running", workload_update=False)
    for index in range(3):
        world.vmi(f"vm{index}", conditions=[MEMORY_CHANGE])

    def ours() -> list[JSON]:
        return [m for m in world.created() if m["metadata"]["name"] != "running"]

    world.cluster.sync()
    with pytest.raises(RequeueAfter):
        world.controller.reconcile(KV_KEY)
    assert len(ours()) == 1
    assert world.outdated_count() == 3

    # As in KubeVirt, a migration still Pending takes no spot (the migration controller holds its target
    # pod back): the next pass fills the spot again.
    world.cluster.sync()
    with pytest.raises(RequeueAfter):
        world.controller.reconcile(KV_KEY)
    assert len(ours()) == 2

    # Two running now: the last VMI waits.
    first = ours()[0]["metadata"]["name"]
    world.api.edit(
        VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, NS, first, lambda m: m.update(status={"phase": "Running"})
    )
    world.cluster.sync()
    with pytest.raises(RequeueAfter):
        world.controller.reconcile(KV_KEY)
    assert len(ours()) == 2


def test_without_live_migrate_or_when_unmigratable_the_launcher_is_evicted_in_batches() -> None:
    world = World(batchEvictionSize=2, batchEvictionInterval="2m0s")
    world.edit_kubevirt(
        lambda kv: kv["spec"]["workloadUpdateStrategy"].update(workloadUpdateMethods=["Evict"])
    )
    for index in range(3):
        world.vmi(f"vm{index}", image="registry.example/virt-launcher:v1")
    world.settle()
    assert world.created() == []
    assert len(world.evictor.evicted) == 2
    assert all(ns == NS and name.startswith("virt-launcher-vm") for ns, name in world.evictor.evicted)
    assert world.events.reasons().count("SuccessfulEvict") == 2

    # The evicted launchers are still there (the fake has no kubelet): the next batch waits its turn.
    world.api.clock.advance(60)
    world.settle()
    assert len(world.evictor.evicted) == 2
    world.api.clock.advance(61)
    world.settle()
    assert len(world.evictor.evicted) == 4


def test_only_evict_configured_leaves_a_migratable_vmi_to_eviction_and_no_method_leaves_it_alone() -> None:
    world = World()
    world.edit_kubevirt(lambda kv: kv["spec"]["workloadUpdateStrategy"].update(workloadUpdateMethods=[]))
    world.vmi("vm1", conditions=[MEMORY_CHANGE])
    world.settle()
    assert (world.created(), world.evictor.evicted) == ([], [])
    assert world.outdated_count() == 1

    both = ["LiveMigrate", "Evict"]
    world.edit_kubevirt(lambda kv: kv["spec"]["workloadUpdateStrategy"].update(workloadUpdateMethods=both))
    world.vmi("stuck", image="registry.example/virt-launcher:v1", migratable=False)
    world.settle()
    assert [m["spec"]["vmiName"] for m in world.created()] == ["vm1"]
    assert world.evictor.evicted == [(NS, "virt-launcher-stuck")]


def test_a_refused_eviction_is_reported_and_retried() -> None:
    world = World()
    world.edit_kubevirt(
        lambda kv: kv["spec"]["workloadUpdateStrategy"].update(workloadUpdateMethods=["Evict"])
    )
    world.vmi("vm1", image="registry.example/virt-launcher:v1")
    world.evictor.fail = ForbiddenError(429, "TooManyRequests", "Cannot evict pod: disruption budget")
    with pytest.raises(RuntimeError, match="disruption budget"):
        world.settle()
    [(key, kind, _, message)] = [e for e in world.events.recorded if e[2] == "FailedEvict"]
    assert (key, kind) == ("default/vm1", "Warning")
    assert "disruption budget" in message

    # A launcher pod gone already counts as evicted.
    world.evictor.fail = NotFoundError(404, "NotFound", "pods not found")
    world.api.clock.advance(61)
    world.settle()
    assert "SuccessfulEvict" in world.events.reasons()


def test_a_migration_no_longer_needed_is_deleted() -> None:
    world = World()
    world.vmi("reverted")
    world.migration("wu-1", "reverted", "Running")
    world.vmi("finished")
    world.migration("wu-2", "finished", "Succeeded")
    world.vmi("still-changing", conditions=[MEMORY_CHANGE])
    world.migration("wu-3", "still-changing", "Running")
    world.vmi("users")
    world.migration("user-migration", "users", "Running", workload_update=False)
    world.settle()

    remaining = {m["metadata"]["name"] for m in world.created()}
    assert remaining == {"wu-2", "wu-3", "user-migration"}
    assert ("default/reverted", "Normal", "SuccessfulChangeAbortion", "Aborted change for vmi: reverted") in (
        world.events.recorded
    )
    assert world.events.reasons().count("SuccessfulChangeAbortion") == 1


def test_a_migration_whose_domain_already_runs_on_the_target_is_kept() -> None:
    world = World()
    state = {
        "startTimestamp": "2026-01-01T11:00:00Z",
        "targetNodeDomainReadyTimestamp": "2026-01-01T11:00:05Z",
    }
    world.vmi("almost-done", migrationState=state)
    world.migration("wu-1", "almost-done", "Running")
    world.settle()
    assert [m["metadata"]["name"] for m in world.created()] == ["wu-1"]
    assert world.api.count_writes("delete", VIRTUAL_MACHINE_INSTANCE_MIGRATIONS) == 0


def test_the_abortion_annotation_cancels_even_with_the_change_still_in_progress() -> None:
    world = World()
    annotations = {"kubevirt.io/testWorkloadUpdateMigrationAbortion": ""}
    world.vmi("vm1", conditions=[MEMORY_CHANGE], annotations=annotations)
    world.migration("wu-1", "vm1", "Running")
    world.settle()
    assert world.created() == []
    assert "SuccessfulChangeAbortion" in world.events.reasons()


def test_a_failed_abortion_is_reported_and_retried() -> None:
    world = World()
    world.vmi("reverted")
    world.migration("wu-1", "reverted", "Running")
    world.api.fail_next[("delete", VIRTUAL_MACHINE_INSTANCE_MIGRATIONS.plural)] = ForbiddenError(
        403, "Forbidden", "no"
    )
    with pytest.raises(RuntimeError):
        world.settle()
    assert "FailedChangeAbortion" in world.events.reasons()
    assert [m["metadata"]["name"] for m in world.created()] == ["wu-1"]


def test_a_failed_creation_is_reported_and_does_not_block_the_next_pass() -> None:
    world = World()
    world.vmi("vm1", conditions=[MEMORY_CHANGE])
    world.api.fail_next[("create", VIRTUAL_MACHINE_INSTANCE_MIGRATIONS.plural)] = ForbiddenError(
        403, "Forbidden", "denied"
    )
    with pytest.raises(RuntimeError, match="denied"):
        world.settle()
    assert "FailedCreate" in world.events.reasons()
    world.settle()  # the expectation was released: the retry creates it
    assert len(world.created()) == 1


def test_vmi_updates_enqueue_the_kubevirt_cr_only_for_a_change_in_progress() -> None:
    world = World()
    world.settle()
    world.vmi("vm1")
    world.api.edit(VIRTUAL_MACHINE_INSTANCES, NS, "vm1", lambda v: v["metadata"].update(labels={"a": "b"}))
    world.cluster.sync()
    assert world.queue.keys == []

    world.api.edit(
        VIRTUAL_MACHINE_INSTANCES, NS, "vm1", lambda v: v["status"]["conditions"].append(MEMORY_CHANGE)
    )
    world.cluster.sync()
    assert world.queue.keys == [KV_KEY]


def test_a_volumes_update_migration_is_labelled_with_the_vmi_name_or_its_uid() -> None:
    def vmi(name: str) -> VirtualMachineInstance:
        return VirtualMachineInstance.from_dict(
            {
                "metadata": {"name": name, "namespace": NS, "uid": "1234"},
                "spec": {"domain": {"devices": {}}},
                "status": {"conditions": [{"type": "VolumesChange", "status": "True"}]},
            }
        )

    label = "kubevirt.io/volume-update-migration"
    assert new_workload_update_migration(vmi("testvm"))["metadata"]["labels"] == {label: "testvm"}
    assert new_workload_update_migration(vmi("a" * 64))["metadata"]["labels"] == {label: "1234"}


def test_the_subresource_evictor_posts_an_eviction() -> None:
    sent: list[tuple[str, str, Any]] = []

    class Client:
        def request(self, method: str, path: str, *, body: Any = None) -> bytes:
            sent.append((method, path, body))
            return b"{}"

    SubresourceEvictor(Client()).evict("ns", "virt-launcher-vm1-abcde")
    [(method, path, body)] = sent
    assert (method, path) == ("POST", "/api/v1/namespaces/ns/pods/virt-launcher-vm1-abcde/eviction")
    assert body["kind"] == "Eviction"
    assert body["metadata"] == {
        "name": "virt-launcher-vm1-abcde",
        "namespace": "ns",
    }
