"""The migration controller's phase machine against a fake API server; the test plays the scheduler,
the kubelet and both virt-handlers by writing what they would write."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, VIRTUAL_MACHINE_INSTANCES
from kubevirt.client.errors import ForbiddenError
from kubevirt.client.resources import MIGRATION_POLICIES
from kubevirt.controller import RequeueAfter
from kubevirt.virt_config.migrations import MigrationConfig
from kubevirt.virt_controller.watch.common import SyncError
from kubevirt.virt_controller.watch.migration import MigrationController

from .fakes import JSON, Cluster, FakeEvents, FakeQueue
from .harness import render_pod

NS = "default"


class World:
    def __init__(self, config: MigrationConfig | None = None) -> None:
        self.cluster = Cluster()
        self.api = self.cluster.api
        self.events = FakeEvents()
        self.queue = FakeQueue()
        self.config = config or MigrationConfig(bandwidth_per_migration="64Mi")
        self.migrations = self.cluster.informer(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS)
        self.vmis = self.cluster.informer(VIRTUAL_MACHINE_INSTANCES)
        self.pods = self.cluster.informer(PODS)
        self.policies = self.cluster.informer(MIGRATION_POLICIES)
        self.controller = MigrationController(
            api=self.api,
            events=self.events,
            migration_store=self.migrations.store,
            vmi_store=self.vmis.store,
            pod_store=self.pods.store,
            render_pod=render_pod,
            config=lambda: self.config,
            enqueue=self.queue.add,
            policy_store=self.policies.store,
            clock=self.api.clock,
        )
        for informer, kind in ((self.migrations, "migration"), (self.vmis, "vmi"), (self.pods, "pod")):
            informer.add_event_handler(
                getattr(self.controller, f"on_{kind}_add"),
                getattr(self.controller, f"on_{kind}_update"),
                getattr(self.controller, f"on_{kind}_delete"),
            )
        self.requeued: list[float] = []

    def running_vmi(self, name: str, node: str = "node-a") -> JSON:
        vmi = self.api.put(
            VIRTUAL_MACHINE_INSTANCES,
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachineInstance",
                "metadata": {"name": name, "namespace": NS, "labels": {"kubevirt.io/nodeName": node}},
                "spec": {"domain": {"devices": {}}, "nodeSelector": {"zone": "vmi-wins"}},
                "status": {"phase": "Running", "nodeName": node},
            },
        )
        source = self.api.put(
            PODS,
            {
                "metadata": {
                    "name": f"virt-launcher-{name}-src",
                    "namespace": NS,
                    "labels": {
                        "kubevirt.io": "virt-launcher",
                        "kubevirt.io/created-by": vmi["metadata"]["uid"],
                    },
                },
                "spec": {"nodeName": node},
                "status": {"phase": "Running"},
            },
        )
        return self.api.edit(
            VIRTUAL_MACHINE_INSTANCES,
            NS,
            name,
            lambda v: v["status"].update(activePods={source["metadata"]["uid"]: node}),
        )

    def migrate(self, name: str, vmi: str, **metadata: Any) -> JSON:
        return self.api.put(
            VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachineInstanceMigration",
                "metadata": {"name": name, "namespace": NS, **metadata},
                "spec": {"vmiName": vmi, "addedNodeSelector": {"zone": "ignored", "disk": "ssd"}},
            },
        )

    def settle(self) -> None:
        """Deliver the API's changes and reconcile until nothing is left to do."""
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

    def migration(self, name: str) -> JSON:
        return self.api.get(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, NS, name)

    def phase(self, name: str) -> str:
        return str(self.migration(name).get("status", {}).get("phase", ""))

    def vmi(self, name: str) -> JSON:
        return self.api.get(VIRTUAL_MACHINE_INSTANCES, NS, name)

    def target_pods(self, migration: str) -> list[JSON]:
        uid = self.migration(migration)["metadata"]["uid"]
        return [
            p
            for p in self.api.find(PODS, NS)
            if p["metadata"].get("labels", {}).get("kubevirt.io/migrationJobUID") == uid
        ]

    def kubelet_runs(self, pod: JSON, node: str = "node-b") -> None:
        """The scheduler binds the pod and the kubelet starts it (no kubelet runs in unit tests)."""

        def run(p: JSON) -> None:
            p["spec"]["nodeName"] = node
            p["status"] = {
                "phase": "Running",
                "containerStatuses": [{"name": "compute", "ready": True, "state": {"running": {}}}],
            }

        self.api.edit(PODS, NS, pod["metadata"]["name"], run)

    def handler_reports(self, vmi: str, **fields: Any) -> None:
        self.api.edit(
            VIRTUAL_MACHINE_INSTANCES, NS, vmi, lambda v: v["status"]["migrationState"].update(fields)
        )

    def running_migration(self, name: str, vmi: str) -> None:
        """A migration of a running VMI taken to where the source handler has started sending."""
        self.running_vmi(vmi)
        self.migrate(name, vmi)
        self.settle()
        self.kubelet_runs(self.target_pods(name)[0])
        self.settle()
        self.handler_reports(vmi, targetNodeAddress="10.0.0.2")
        self.settle()
        self.handler_reports(vmi, startTimestamp="2026-01-01T12:00:01Z")
        self.settle()


def failed_messages(world: World) -> list[str]:
    return [message for _, _, reason, message in world.events.recorded if reason == "FailedMigration"]


def test_a_migration_goes_through_every_phase_to_succeeded() -> None:
    world = World()
    world.running_vmi("vm1")
    world.migrate("mig1", "vm1")
    world.settle()

    assert world.phase("mig1") == "Scheduling"
    assert world.migration("mig1")["metadata"]["finalizers"] == ["kubevirt.io/migrationJobFinalize"]
    [pod] = world.target_pods("mig1")
    vmi_uid = world.vmi("vm1")["metadata"]["uid"]
    assert pod["metadata"]["annotations"]["kubevirt.io/migrationJobName"] == "mig1"
    assert pod["metadata"]["ownerReferences"][0]["uid"] == vmi_uid
    assert pod["spec"]["nodeSelector"] == {"zone": "vmi-wins", "disk": "ssd"}
    [term] = pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchExpressions"] == [
        {"key": "kubevirt.io/created-by", "operator": "In", "values": [vmi_uid]}
    ]

    world.kubelet_runs(pod)
    world.settle()
    assert world.phase("mig1") == "PreparingTarget"
    vmi = world.vmi("vm1")
    state = vmi["status"]["migrationState"]
    assert state["migrationUid"] == world.migration("mig1")["metadata"]["uid"]
    assert (state["sourceNode"], state["targetNode"]) == ("node-a", "node-b")
    assert state["targetPod"] == pod["metadata"]["name"]
    assert state["sourcePod"] == "virt-launcher-vm1-src"
    assert state["migrationConfiguration"]["bandwidthPerMigration"] == "64Mi"
    assert state["migrationConfiguration"]["completionTimeoutPerGiB"] == 150
    assert vmi["metadata"]["labels"]["kubevirt.io/migrationTargetNodeName"] == "node-b"

    world.handler_reports(
        "vm1", targetNodeAddress="10.0.0.2", targetDirectMigrationNodePorts={"40000": 49152}
    )
    world.settle()
    assert world.phase("mig1") == "TargetReady"
    world.handler_reports("vm1", startTimestamp="2026-01-01T12:00:01Z")
    world.settle()
    assert world.phase("mig1") == "Running"
    world.handler_reports("vm1", endTimestamp="2026-01-01T12:00:03Z", completed=True)
    world.settle()

    done = world.migration("mig1")
    assert done["status"]["phase"] == "Succeeded"
    assert done["metadata"].get("finalizers") == []
    assert done["status"]["migrationState"]["completed"] is True
    assert [t["phase"] for t in done["status"]["phaseTransitionTimestamps"]] == [
        "Pending",
        "Scheduling",
        "Scheduled",
        "PreparingTarget",
        "TargetReady",
        "Running",
        "Succeeded",
    ]
    assert world.events.reasons() == ["SuccessfulCreate", "SuccessfulHandOver", "SuccessfulMigration"]
    assert world.target_pods("mig1"), "the target pod is the VMI's pod now"


def test_the_hand_off_leaves_nothing_of_the_previous_migrations_state() -> None:
    """The target's address and ports, the end and the outcome of the VMI's last migration must not be
    taken for the new one's (a source would dial the old target, or report the old failure)."""
    world = World()
    world.running_vmi("vm1")
    world.api.edit(
        VIRTUAL_MACHINE_INSTANCES, NS, "vm1", lambda v: v["status"].setdefault("migrationState", {})
    )
    world.handler_reports(
        "vm1",
        migrationUid="old",
        targetNodeAddress="10.0.0.9",
        targetDirectMigrationNodePorts={"40000": 49152},
        endTimestamp="2026-01-01T11:00:00Z",
        failed=True,
        failureReason="earlier",
    )
    world.migrate("mig1", "vm1")
    world.settle()
    [pod] = world.target_pods("mig1")
    world.kubelet_runs(pod)
    world.settle()
    state = world.vmi("vm1")["status"]["migrationState"]
    assert state["migrationUid"] == world.migration("mig1")["metadata"]["uid"]
    assert not {"targetNodeAddress", "targetDirectMigrationNodePorts", "endTimestamp", "failed"} & set(state)
    assert world.phase("mig1") == "PreparingTarget"


def test_deleting_the_migration_before_hand_off_deletes_the_target_pod_and_fails_it() -> None:
    world = World()
    world.running_vmi("vm1")
    world.migrate("mig1", "vm1")
    world.settle()
    assert world.phase("mig1") == "Scheduling"

    world.api.delete(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, NS, "mig1")
    world.settle()
    assert world.api.find(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS) == []  # final: the finalizer is gone
    assert [p for p in world.api.find(PODS) if "migrationJobUID" in str(p["metadata"].get("labels"))] == []
    assert failed_messages(world) == ["Migration failed due to being canceled"]
    assert "migrationState" not in world.vmi("vm1")["status"]


def test_deleting_a_running_migration_asks_the_source_to_abort_and_fails_when_it_did() -> None:
    world = World()
    world.running_migration("mig1", "vm1")
    assert world.phase("mig1") == "Running"

    world.api.delete(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, NS, "mig1")
    world.settle()
    assert world.vmi("vm1")["status"]["migrationState"]["abortRequested"] is True
    migration = world.migration("mig1")
    assert migration["status"]["phase"] == "Running"
    assert [c["type"] for c in migration["status"]["conditions"]] == ["migrationAbortRequested"]
    assert "SuccessfulAbortMigration" in world.events.reasons()

    world.handler_reports("vm1", failed=True, abortStatus="Succeeded", endTimestamp="2026-01-01T12:00:02Z")
    world.settle()
    assert world.api.find(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS) == []
    assert failed_messages(world) == ["source node reported migration failed"]
    assert [p["metadata"]["name"] for p in world.api.find(PODS)] == ["virt-launcher-vm1-src"]


def test_an_unschedulable_target_pod_times_out_and_fails_the_migration() -> None:
    world = World()
    world.running_vmi("vm1")
    world.migrate("mig1", "vm1")
    world.settle()
    [pod] = world.target_pods("mig1")
    world.api.edit(
        PODS,
        NS,
        pod["metadata"]["name"],
        lambda p: p.update(
            status={
                "phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            }
        ),
    )
    world.settle()
    assert world.phase("mig1") == "Scheduling"
    assert world.requeued[-1] == pytest.approx(300)
    assert "migrationTargetPodUnschedulable" in world.events.reasons()

    world.api.clock.advance(301)
    world.queue.add(f"{NS}/mig1")
    world.settle()
    assert world.target_pods("mig1") == []
    assert world.phase("mig1") == "Failed"
    assert failed_messages(world) == ["Migration target pod was removed during active migration."]
    deleted = [m for _, _, r, m in world.events.recorded if r == "SuccessfulDelete"]
    assert deleted == [f"unschedulable pod {NS}/{pod['metadata']['name']} timeout period exceeded"]


def test_parallel_limits_hold_back_migrations_beyond_two_per_source_node() -> None:
    world = World()
    for index in range(3):
        world.running_vmi(f"vm{index}")
        world.migrate(f"mig{index}", f"vm{index}")
    world.settle()
    phases = sorted(world.phase(f"mig{i}") for i in range(3))
    assert phases == ["Pending", "Scheduling", "Scheduling"]
    assert 5.0 in world.requeued
    world.running_vmi("other", node="node-c")
    world.migrate("mig-other", "other")
    world.settle()
    assert world.phase("mig-other") == "Scheduling"  # another node's outbound limit is its own

    world.config = MigrationConfig(parallel_migrations_per_cluster=3)
    world.running_vmi("third", node="node-d")
    world.migrate("mig-third", "third")
    world.settle()
    assert world.phase("mig-third") == "Pending"  # three migrations run in the cluster already


def test_a_second_migration_of_a_migrating_vmi_fails_and_a_vanished_vmi_fails_its_migration() -> None:
    world = World()
    world.running_vmi("vm1")
    world.migrate("mig1", "vm1")
    world.settle()
    world.kubelet_runs(world.target_pods("mig1")[0])
    world.settle()
    world.migrate("mig2", "vm1")
    world.settle()
    assert world.phase("mig2") == "Failed"
    assert failed_messages(world) == [
        "VMI is not eligible for migration because another migration job is in progress."
    ]

    world.api.remove(VIRTUAL_MACHINE_INSTANCES, NS, "vm1")
    world.settle()
    # Deleted, then failed (with its target pod gone) and released by its finalizer.
    assert [m["metadata"]["name"] for m in world.api.find(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS)] == ["mig2"]
    assert failed_messages(world)[-1] == "Migration failed because vmi does not exist."


def test_only_the_five_newest_finished_migrations_of_a_vmi_are_kept() -> None:
    world = World()
    world.running_vmi("vm1")
    for index in range(7):
        world.api.clock.advance(1)
        world.migrate(f"old{index}", "vm1")
        world.api.edit(
            VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
            NS,
            f"old{index}",
            lambda m: m.update(status={"phase": "Failed"}),
        )
    world.settle()
    kept = sorted(m["metadata"]["name"] for m in world.api.find(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS))
    assert kept == ["old2", "old3", "old4", "old5", "old6"]


def test_a_target_pod_not_yet_in_the_cache_is_neither_created_twice_nor_taken_for_lost() -> None:
    world = World()
    world.running_vmi("vm1")
    world.migrate("mig1", "vm1")
    key = f"{NS}/mig1"
    world.cluster.sync()
    world.controller.reconcile(key)  # "" -> Pending
    world.cluster.sync()
    world.controller.reconcile(key)  # creates the target pod
    world.controller.reconcile(key)  # again, before the pod informer delivered it
    assert len(world.target_pods("mig1")) == 1
    assert world.phase("mig1") == "Pending"
    assert failed_messages(world) == []
    world.settle()
    assert world.phase("mig1") == "Scheduling"


def test_a_pass_on_a_stale_cache_reports_nothing() -> None:
    world = World()
    world.running_migration("mig1", "vm1")
    stale = world.migrations.store.get_by_key(f"{NS}/mig1")
    world.handler_reports("vm1", failed=True, endTimestamp="2026-01-01T12:00:02Z")
    world.settle()
    assert world.phase("mig1") == "Failed"
    recorded = list(world.events.recorded)

    # The informer still holds the Running migration and sees its target pod go down.
    world.migrations.store.upsert(stale)
    [pod] = world.target_pods("mig1") or [None]
    assert pod is None  # deleted with the failure
    with pytest.raises(RequeueAfter):
        world.controller.reconcile(f"{NS}/mig1")
    assert world.events.recorded == recorded


def test_a_target_pod_refused_by_a_resource_quota_is_reported_until_one_is_created() -> None:
    world = World()
    world.running_vmi("vm1")
    message = 'pods "virt-launcher-vm1-x" is forbidden: exceeded quota: quota, requested: memory=300Mi'

    def quota(_pod: JSON) -> None:
        raise ForbiddenError(403, "Forbidden", message)

    world.api.admission[PODS.plural] = quota
    world.migrate("mig1", "vm1")
    with pytest.raises(ForbiddenError):  # the work queue retries it with backoff
        world.settle()
    world.cluster.sync()
    assert world.phase("mig1") == "Pending"
    [condition] = world.migration("mig1")["status"]["conditions"]
    assert (condition["type"], condition["status"]) == ("migrationRejectedByResourceQuota", "True")
    assert condition["lastProbeTime"]

    del world.api.admission[PODS.plural]  # the quota was raised: the retry creates the target
    world.queue.add(f"{NS}/mig1")
    world.settle()
    assert world.phase("mig1") == "Scheduling"
    assert not world.migration("mig1")["status"].get("conditions")


def _with_condition(world: World, vmi: str, condition_type: str, status: str) -> None:
    condition = {"type": condition_type, "status": status}
    world.api.edit(
        VIRTUAL_MACHINE_INSTANCES,
        NS,
        vmi,
        lambda v: v["status"].setdefault("conditions", []).append(condition),
    )


@pytest.mark.parametrize(
    ("condition_type", "status", "held"),
    [
        ("HotMemoryChange", "True", True),
        ("HotVCPUChange", "False", True),  # a vCPU change is pending while its condition is there at all
        ("MigrationRequired", "True", True),
        ("HotMemoryChange", "False", False),  # the hotplug failed: nothing to wait for
    ],
)
def test_a_migration_for_a_hotplug_succeeds_once_the_target_finished_it(
    condition_type: str, status: str, held: bool
) -> None:
    world = World()
    world.running_migration("mig1", "vm1")
    _with_condition(world, "vm1", condition_type, status)
    world.handler_reports("vm1", endTimestamp="2026-01-01T12:00:03Z", completed=True)
    world.settle()
    if not held:
        assert world.phase("mig1") == "Succeeded"
        return
    assert world.phase("mig1") == "Running"
    assert "SuccessfulMigration" not in world.events.reasons()

    # The target virt-handler applied the change and dropped the condition.
    world.api.edit(
        VIRTUAL_MACHINE_INSTANCES,
        NS,
        "vm1",
        lambda v: v["status"].update(
            conditions=[c for c in v["status"]["conditions"] if c["type"] != condition_type]
        ),
    )
    world.settle()
    assert world.phase("mig1") == "Succeeded"
    assert world.events.reasons().count("SuccessfulMigration") == 1


def _hand_off_with_target_resources(world: World, resources: JSON) -> JSON:
    """Runs a migration of vm1 to the hand-off, its target's compute container given ``resources``."""
    world.migrate("mig1", "vm1")
    world.settle()
    [pod] = world.target_pods("mig1")

    def give(p: JSON) -> None:
        [compute] = [c for c in p["spec"]["containers"] if c["name"] == "compute"]
        compute["resources"] = resources

    world.api.edit(PODS, NS, pod["metadata"]["name"], give)
    world.kubelet_runs(pod)
    world.settle()
    return world.vmi("vm1")


@pytest.mark.parametrize(
    ("requests", "expected"),
    [
        ({"memory": "150Mi"}, "150Mi"),
        ({"memory": "150Mi", "hugepages-2Mi": "1Gi"}, "1174Mi"),
        ({"memory": "150Mi", "hugepages-1Gi": "1Gi"}, "1174Mi"),
    ],
)
def test_a_memory_hotplug_tells_the_target_its_pods_memory_request(requests: JSON, expected: str) -> None:
    world = World()
    world.running_vmi("vm1")
    _with_condition(world, "vm1", "HotMemoryChange", "True")
    vmi = _hand_off_with_target_resources(world, {"requests": requests})
    assert world.phase("mig1") == "PreparingTarget"
    labels = vmi["metadata"]["labels"]
    assert labels["kubevirt.io/vmi-pod-memory-resource-requests"] == expected
    assert labels["kubevirt.io/migrationTargetNodeName"] == "node-b"
    assert "kubevirt.io/vmi-pod-cpu-resource-limits" not in labels


@pytest.mark.parametrize("dedicated", [True, False])
def test_a_vcpu_hotplug_with_dedicated_cpus_tells_the_target_its_pods_cpu_limit(dedicated: bool) -> None:
    world = World()
    world.running_vmi("vm1")
    world.api.edit(
        VIRTUAL_MACHINE_INSTANCES,
        NS,
        "vm1",
        lambda v: v["spec"]["domain"].update(cpu={"dedicatedCpuPlacement": dedicated}),
    )
    _with_condition(world, "vm1", "HotVCPUChange", "True")
    vmi = _hand_off_with_target_resources(world, {"requests": {"cpu": "4"}, "limits": {"cpu": "4"}})
    labels = vmi["metadata"]["labels"]
    assert labels.get("kubevirt.io/vmi-pod-cpu-resource-limits") == ("4" if dedicated else None)
    assert "kubevirt.io/vmi-pod-memory-resource-requests" not in labels


def test_a_hand_off_waits_while_the_target_pod_lacks_the_memory_request() -> None:
    world = World()
    world.running_vmi("vm1")
    _with_condition(world, "vm1", "HotMemoryChange", "True")
    with pytest.raises(SyncError, match="memory request"):
        _hand_off_with_target_resources(world, {"requests": {"cpu": "1"}})
    world.cluster.sync()
    assert world.phase("mig1") == "Scheduled"
    assert "migrationState" not in world.vmi("vm1")["status"]
