"""The evacuation controller against a real kube-apiserver: a VMI marked by an eviction on its node gets
exactly one ``kubevirt-evacuation-*`` migration the API accepts, and a VMI-owned PodDisruptionBudget left
by an older release is removed by the disruption-budget controller."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kubevirt.client import (
    NODES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCES,
    EventRecorder,
    KubeClient,
)
from kubevirt.controller import Controller, RateLimitingQueue, SharedInformerFactory
from kubevirt.virt_config.migrations import MigrationConfig
from kubevirt.virt_controller.watch.disruptionbudget import DisruptionBudgetController
from kubevirt.virt_controller.watch.evacuation import EvacuationController
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_testing.controller_threads import controller_threads
from kubevirt_testing.waiting import eventually

JSON = dict[str, Any]


@pytest.fixture
def controllers(kube: KubeClient, namespace: str) -> Iterator[None]:
    factory = SharedInformerFactory(kube, resync_seconds=0)
    events = EventRecorder(kube, "virt-controller", host="test")
    nodes = factory.informer(NODES)
    vmis = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance, namespace=namespace)
    migrations = factory.informer(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace=namespace)
    pods = factory.informer(PODS, namespace=namespace)
    pdbs = factory.informer(POD_DISRUPTION_BUDGETS, namespace=namespace)
    evacuation_queue, pdb_queue = RateLimitingQueue("evacuation"), RateLimitingQueue("disruption-budget")
    evacuation = EvacuationController(
        api=kube,
        events=events,
        node_store=nodes.store,
        vmi_store=vmis.store,
        migration_store=migrations.store,
        pod_store=pods.store,
        migration_config=MigrationConfig,
        eviction_strategy=lambda: None,
        enqueue=evacuation_queue.add,
    )
    budgets = DisruptionBudgetController(
        api=kube, events=events, pdb_store=pdbs.store, vmi_store=vmis.store, enqueue=pdb_queue.add
    )
    for informer, target, kind in (
        (nodes, evacuation, "node"),
        (vmis, evacuation, "vmi"),
        (migrations, evacuation, "migration"),
        (pdbs, budgets, "pdb"),
        (vmis, budgets, "vmi"),
    ):
        informer.add_event_handler(
            getattr(target, f"on_{kind}_add"),
            getattr(target, f"on_{kind}_update"),
            getattr(target, f"on_{kind}_delete"),
        )
    factory.start()
    assert factory.wait_for_cache_sync(15)
    try:
        with controller_threads(
            Controller("evacuation", evacuation_queue, evacuation, workers=2),
            Controller("disruption-budget", pdb_queue, budgets, workers=1),
        ):
            yield
    finally:
        events.stop()
        factory.stop()


def _running_vmi(kube: KubeClient, namespace: str, name: str, node: str) -> JSON:
    vmi = kube.create(
        VIRTUAL_MACHINE_INSTANCES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "metadata": {"name": name},
            "spec": {"evictionStrategy": "LiveMigrate", "domain": {"devices": {}}},
        },
    )
    vmi["status"] = {
        "phase": "Running",
        "nodeName": node,
        "activePods": {"pod-uid": node},
        "conditions": [{"type": "LiveMigratable", "status": "True"}],
    }
    return kube.update(VIRTUAL_MACHINE_INSTANCES, namespace, vmi)


def test_an_evicted_vmi_gets_one_evacuation_migration(
    kube: KubeClient, namespace: str, controllers: None
) -> None:
    node = f"node-{namespace}"
    kube.create(NODES, None, {"metadata": {"name": node}})
    try:
        vmi = _running_vmi(kube, namespace, "vm1", node)
        # What the eviction admitter writes when kubectl drain evicts the launcher pod.
        vmi["status"]["evacuationNodeName"] = node
        kube.update(VIRTUAL_MACHINE_INSTANCES, namespace, vmi)

        def created() -> list[JSON]:
            items, _ = kube.list(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace)
            return items

        eventually(lambda: len(created()) == 1, timeout=15)
        time.sleep(1)  # the migration's own events bring the node back: still one
        [migration] = created()
        assert migration["metadata"]["generateName"] == "kubevirt-evacuation-"
        assert migration["metadata"]["annotations"] == {"kubevirt.io/evacuationMigration": node}
        assert migration["spec"]["vmiName"] == "vm1"
    finally:
        kube.delete(NODES, None, node)


def test_a_pdb_a_vmi_controls_is_deleted(kube: KubeClient, namespace: str, controllers: None) -> None:
    vmi = _running_vmi(kube, namespace, "vm1", "anywhere")
    kube.create(
        POD_DISRUPTION_BUDGETS,
        namespace,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {
                "name": "kubevirt-disruption-budget-old",
                "ownerReferences": [
                    {
                        "apiVersion": "kubevirt.io/v1",
                        "kind": "VirtualMachineInstance",
                        "name": "vm1",
                        "uid": vmi["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"kubevirt.io/created-by": "x"}}},
        },
    )

    def left() -> list[JSON]:
        items, _ = kube.list(POD_DISRUPTION_BUDGETS, namespace)
        return items

    eventually(lambda: left() == [], timeout=15)
