"""Replica sets, pools and the node controller against the in-memory API."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import (
    NODES,
    PODS,
    VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINE_POOLS,
    VIRTUAL_MACHINES,
    InvalidError,
    Resource,
)
from kubevirt.controller import RequeueAfter
from kubevirt.virt_controller.watch.pods import pod_name
from kubevirt.virt_controller.watch.replicaset import ScaleError
from kubevirt.virt_controller.watch.selector import selector_string
from kubevirt_api.k8s.meta_v1 import LabelSelector

from .fakes import JSON, Cluster
from .harness import NAMESPACE, Controllers, schedule_pod, set_vmi_phase, vm_manifest

# -- VirtualMachineInstanceReplicaSet -----------------------------------------------------------------


def _rs(replicas: int, **spec: Any) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstanceReplicaSet",
        "metadata": {"name": "rs", "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "rs"}},
            "template": {"metadata": {"labels": {"app": "rs"}}, "spec": {"domain": {"devices": {}}}},
            **spec,
        },
    }


def _live_vmis(cluster: Cluster) -> list[JSON]:
    return [
        v
        for v in cluster.api.find(VIRTUAL_MACHINE_INSTANCES, NAMESPACE)
        if not v["metadata"].get("deletionTimestamp")
    ]


def _rs_status(cluster: Cluster) -> JSON:
    return cluster.api.get(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, NAMESPACE, "rs")["status"]


def _set_replicas(cluster: Cluster, resource: Resource, name: str, replicas: int) -> None:
    def change(obj: JSON) -> None:
        obj["spec"]["replicas"] = replicas

    cluster.api.edit(resource, NAMESPACE, name, change)


def test_replica_set_scales_up_with_generated_names_and_reports_replicas() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, NAMESPACE, _rs(3))
    controllers.run(only=("rs",))
    vmis = _live_vmis(cluster)
    assert len(vmis) == 3
    rs_uid = cluster.api.get(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, NAMESPACE, "rs")["metadata"]["uid"]
    for vmi in vmis:
        name = vmi["metadata"]["name"]
        assert name.startswith("rs")
        assert len(name) == len("rs") + 5
        assert vmi["metadata"]["labels"] == {"app": "rs"}
        assert vmi["metadata"]["ownerReferences"][0]["uid"] == rs_uid
    status = _rs_status(cluster)
    assert (status["replicas"], status["readyReplicas"], status["labelSelector"]) == (3, 0, "app=rs")


def test_replica_set_counts_ready_vmis_and_scales_down() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, NAMESPACE, _rs(3))
    controllers.run(only=("rs",))
    first = _live_vmis(cluster)[0]["metadata"]["name"]
    set_vmi_phase(cluster, first, "Running", conditions=[{"type": "Ready", "status": "True"}])
    controllers.run(only=("rs",))
    assert _rs_status(cluster)["readyReplicas"] == 1
    _set_replicas(cluster, VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, "rs", 1)
    controllers.run(only=("rs",))
    assert len(_live_vmis(cluster)) == 1
    assert _rs_status(cluster)["replicas"] == 1
    assert controllers.events.reasons().count("SuccessfulDelete") == 2


def test_replica_set_replaces_finished_vmis() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, NAMESPACE, _rs(2))
    controllers.run(only=("rs",))
    done = _live_vmis(cluster)[0]["metadata"]["name"]
    set_vmi_phase(cluster, done, "Succeeded")
    controllers.run(only=("rs",))
    names = {v["metadata"]["name"] for v in _live_vmis(cluster)}
    assert done not in names
    assert len(names) == 2


def test_paused_replica_set_does_not_scale_and_says_so() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, NAMESPACE, _rs(2, paused=True))
    controllers.run(only=("rs",))
    assert _live_vmis(cluster) == []
    [condition] = _rs_status(cluster)["conditions"]
    assert (condition["type"], condition["reason"]) == ("ReplicaPaused", "Paused")

    def resume(rs: JSON) -> None:
        rs["spec"]["paused"] = False

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, NAMESPACE, "rs", resume)
    controllers.run(only=("rs",))
    assert len(_live_vmis(cluster)) == 2
    assert "conditions" not in _rs_status(cluster)
    assert "SuccessfulResumed" in controllers.events.reasons()


def _put_orphan(cluster: Cluster, name: str) -> None:
    """A VMI someone else made, with the replica set's labels and no owner."""
    orphan = {"metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "rs"}}}
    cluster.api.put(VIRTUAL_MACHINE_INSTANCES, {**orphan, "spec": {"domain": {"devices": {}}}})


def test_replica_set_with_a_selector_missing_its_template_does_nothing_and_is_not_retried() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    _put_orphan(cluster, "stranger")
    bad = _rs(1)
    bad["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    cluster.api.create(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, NAMESPACE, bad)
    controllers.run(only=("rs",))
    assert [v["metadata"]["name"] for v in _live_vmis(cluster)] == ["stranger"]
    assert controllers.errors == []  # a spec that can never work is not retried


def test_replica_set_adopts_matching_orphans_and_releases_what_it_no_longer_selects() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    _put_orphan(cluster, "stranger")
    cluster.api.create(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, NAMESPACE, _rs(2))
    controllers.run(only=("rs",))
    vmis = {v["metadata"]["name"]: v for v in _live_vmis(cluster)}
    assert len(vmis) == 2
    assert vmis["stranger"]["metadata"]["ownerReferences"][0]["kind"] == "VirtualMachineInstanceReplicaSet"

    def relabel(vmi: JSON) -> None:
        vmi["metadata"]["labels"] = {"app": "elsewhere"}

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "stranger", relabel)
    controllers.run(only=("rs",))
    assert (
        "ownerReferences" not in cluster.api.get(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "stranger")["metadata"]
    )
    assert len(_live_vmis(cluster)) == 3  # the released VMI stays; a new one takes its place


def test_replica_set_failure_condition_on_refused_creates() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.fail_next[("create", VIRTUAL_MACHINE_INSTANCES.plural)] = InvalidError(
        422, "Invalid", "refused"
    )
    cluster.api.create(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, NAMESPACE, _rs(1))
    cluster.sync()
    controllers.rs.reconcile(f"{NAMESPACE}/rs")  # api-version stamp
    cluster.sync()
    with pytest.raises(ScaleError):
        controllers.rs.reconcile(f"{NAMESPACE}/rs")
    failure = next(c for c in _rs_status(cluster)["conditions"] if c["type"] == "ReplicaFailure")
    assert (failure["reason"], failure["message"]) == ("FailedCreate", "refused")
    controllers.run(only=("rs",))
    assert len(_live_vmis(cluster)) == 1
    assert "conditions" not in _rs_status(cluster)


def test_replica_set_restart_makes_no_duplicates() -> None:
    cluster = Cluster()
    first = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, NAMESPACE, _rs(3))
    cluster.sync()
    first.rs.reconcile(f"{NAMESPACE}/rs")  # api-version stamp
    cluster.sync()
    first.rs.reconcile(f"{NAMESPACE}/rs")  # creates 3, then dies before seeing them
    cluster.restart()
    Controllers(cluster).run(only=("rs",))
    assert len(_live_vmis(cluster)) == 3


def test_selector_string_matches_kubernetes_printing() -> None:
    selector = LabelSelector.from_dict(
        {
            "matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [
                {"key": "c", "operator": "In", "values": ["y", "x"]},
                {"key": "d", "operator": "DoesNotExist"},
            ],
        }
    )
    assert selector_string(selector) == "a=1,b=2,c in (x,y),!d"


# -- VirtualMachinePool -------------------------------------------------------------------------------


def _pool(replicas: int, **spec: Any) -> JSON:
    template = vm_manifest("ignored", runStrategy="Halted")
    template["spec"]["template"]["spec"]["volumes"] = [
        {"name": "cfg", "configMap": {"name": "config"}},
        {"name": "data", "dataVolume": {"name": "disk"}},
    ]
    template["spec"]["dataVolumeTemplates"] = [
        {"metadata": {"name": "disk"}, "spec": {"source": {"blank": {}}, "storage": {}}}
    ]
    return {
        "apiVersion": "pool.kubevirt.io/v1alpha1",
        "kind": "VirtualMachinePool",
        "metadata": {"name": "pool", "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "pool"}},
            "virtualMachineTemplate": {"metadata": {"labels": {"app": "pool"}}, "spec": template["spec"]},
            "nameGeneration": {"appendIndexToConfigMapRefs": True},
            **spec,
        },
    }


def _pool_vms(cluster: Cluster) -> list[JSON]:
    return [
        v for v in cluster.api.find(VIRTUAL_MACHINES, NAMESPACE) if not v["metadata"].get("deletionTimestamp")
    ]


def test_pool_creates_indexed_vms() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_POOLS, NAMESPACE, _pool(2))
    controllers.run(only=("pool",))
    vms = {v["metadata"]["name"]: v for v in _pool_vms(cluster)}
    assert sorted(vms) == ["pool-0", "pool-1"]
    vm = vms["pool-1"]
    assert vm["metadata"]["labels"]["app"] == "pool"
    assert vm["metadata"]["labels"]["kubevirt.io/vm-pool-revision-name"] == "pool-1"
    assert vm["metadata"]["ownerReferences"][0]["kind"] == "VirtualMachinePool"
    assert vm["spec"]["dataVolumeTemplates"][0]["metadata"]["name"] == "disk-1"
    volumes = {v["name"]: v for v in vm["spec"]["template"]["spec"]["volumes"]}
    assert volumes["data"]["dataVolume"]["name"] == "disk-1"
    assert volumes["cfg"]["configMap"]["name"] == "config-1"
    status = cluster.api.get(VIRTUAL_MACHINE_POOLS, NAMESPACE, "pool")["status"]
    assert (status["replicas"], status["readyReplicas"], status["labelSelector"]) == (2, 0, "app=pool")


def test_pool_scales_in_from_the_top_and_refills_the_lowest_free_index() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    pool = _pool(3, scaleInStrategy={"proactive": {"selectionPolicy": {"basePolicy": "DescendingOrder"}}})
    cluster.api.create(VIRTUAL_MACHINE_POOLS, NAMESPACE, pool)
    controllers.run(only=("pool",))
    _set_replicas(cluster, VIRTUAL_MACHINE_POOLS, "pool", 1)
    controllers.run(only=("pool",))
    assert sorted(v["metadata"]["name"] for v in _pool_vms(cluster)) == ["pool-0"]
    _set_replicas(cluster, VIRTUAL_MACHINE_POOLS, "pool", 2)
    controllers.run(only=("pool",))
    assert sorted(v["metadata"]["name"] for v in _pool_vms(cluster)) == ["pool-0", "pool-1"]


def test_pool_ready_replicas_follow_the_vms_ready_condition() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_POOLS, NAMESPACE, _pool(2))
    controllers.run(only=("pool",))

    def ready(vm: JSON) -> None:
        vm["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}

    cluster.api.edit(VIRTUAL_MACHINES, NAMESPACE, "pool-0", ready)
    controllers.run(only=("pool",))
    assert cluster.api.get(VIRTUAL_MACHINE_POOLS, NAMESPACE, "pool")["status"]["readyReplicas"] == 1


def test_pool_restart_makes_no_duplicates() -> None:
    cluster = Cluster()
    first = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_POOLS, NAMESPACE, _pool(2))
    cluster.sync()
    first.pool.reconcile(f"{NAMESPACE}/pool")
    cluster.restart()
    Controllers(cluster).run(only=("pool",))
    assert sorted(v["metadata"]["name"] for v in _pool_vms(cluster)) == ["pool-0", "pool-1"]


# -- node controller ----------------------------------------------------------------------------------


def _node(name: str, heartbeat: str | None) -> JSON:
    annotations = {"kubevirt.io/heartbeat": heartbeat} if heartbeat else {}
    return {
        "metadata": {"name": name, "labels": {"kubevirt.io/schedulable": "true"}, "annotations": annotations}
    }


def _running_vmi_on(cluster: Cluster, controllers: Controllers, name: str, node: str) -> None:
    cluster.api.create(
        VIRTUAL_MACHINE_INSTANCES,
        NAMESPACE,
        {
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"domain": {"devices": {}}},
        },
    )
    controllers.run(only=("vmi",))
    pod = next(
        p for p in cluster.api.find(PODS, NAMESPACE) if pod_name(p).startswith(f"virt-launcher-{name}-")
    )
    schedule_pod(cluster, pod_name(pod), node)
    controllers.run(only=("vmi",))
    set_vmi_phase(cluster, name, "Running")


def test_vmis_on_a_node_with_a_stale_heartbeat_fail_unless_their_pod_lives() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.put(NODES, _node("node01", "2026-01-01T11:50:00Z"))  # 10 minutes before the clock
    _running_vmi_on(cluster, controllers, "orphaned", "node01")
    _running_vmi_on(cluster, controllers, "alive", "node01")
    orphan_pod = next(p for p in cluster.api.find(PODS) if pod_name(p).startswith("virt-launcher-orphaned-"))

    def terminated(pod: JSON) -> None:
        pod["status"]["containerStatuses"] = [{"name": "compute", "state": {"terminated": {"exitCode": 1}}}]

    cluster.api.edit(PODS, NAMESPACE, pod_name(orphan_pod), terminated)
    controllers.run(only=("node",))
    orphaned = cluster.api.get(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "orphaned")["status"]
    assert (orphaned["phase"], orphaned["reason"]) == ("Failed", "NodeUnresponsive")
    assert cluster.api.get(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "alive")["status"]["phase"] == "Running"
    node = cluster.api.get(NODES, None, "node01")
    assert node["metadata"]["labels"]["kubevirt.io/schedulable"] == "false"
    assert controllers.queues["node"].delayed["node01"] == 60.0  # checked again every minute


def test_a_fresh_heartbeat_or_none_at_all_changes_nothing() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.put(NODES, _node("node01", "2026-01-01T11:58:00Z"))
    cluster.api.put(NODES, _node("node02", None))
    _running_vmi_on(cluster, controllers, "vmi1", "node01")
    cluster.api.writes.clear()
    controllers.run(only=("node",))
    assert cluster.api.writes == []
    for name in ("node01", "node02"):
        assert cluster.api.get(NODES, None, name)["metadata"]["labels"]["kubevirt.io/schedulable"] == "true"


def test_vmis_on_a_vanished_node_fail() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.put(NODES, _node("node01", None))
    _running_vmi_on(cluster, controllers, "vmi1", "node01")
    controllers.run(only=("node",))
    cluster.api.remove(NODES, None, "node01")
    for pod in cluster.api.find(PODS):
        cluster.api.remove(PODS, NAMESPACE, pod_name(pod))
    cluster.sync()
    controllers.node.reconcile("node01")  # no RequeueAfter: the node is gone
    assert cluster.api.get(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "vmi1")["status"]["phase"] == "Failed"


def test_an_existing_node_is_rechecked() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.put(NODES, _node("node01", None))
    cluster.sync()
    with pytest.raises(RequeueAfter) as wait:
        controllers.node.reconcile("node01")
    assert wait.value.seconds == 60.0
