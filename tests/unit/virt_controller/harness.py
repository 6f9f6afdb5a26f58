"""Controllers wired to fake informers the way virt-controller wires them to real ones, plus a driver."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubevirt.client import (
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINE_POOLS,
    VIRTUAL_MACHINES,
)
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    DATA_VOLUMES,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
    VIRTUAL_MACHINE_INSTANCETYPES,
    VIRTUAL_MACHINE_PREFERENCES,
)
from kubevirt.controller import ControllerExpectations, RequeueAfter, UIDTrackingControllerExpectations
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_controller.watch.cloneauth import CloneAuthorizer
from kubevirt.virt_controller.watch.node import NodeController
from kubevirt.virt_controller.watch.pool import PoolController
from kubevirt.virt_controller.watch.replicaset import ReplicaSetController
from kubevirt.virt_controller.watch.vm import VMController
from kubevirt.virt_controller.watch.vmi import VMIController
from kubevirt_api.core.v1 import VirtualMachineInstance

from .fakes import JSON, Cluster, FakeEvents, FakeQueue, FakeVMIVolumes

NAMESPACE = "default"
LAUNCHER_IMAGE = "registry.local/virt-launcher:v1.6.6"


def render_pod(vmi: VirtualMachineInstance) -> dict[str, Any]:
    """A stand-in for the real renderer: just enough of KubeVirt's launcher pod for the controllers."""
    assert vmi.metadata is not None
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"virt-launcher-{vmi.metadata.name}-",
            "labels": {"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": vmi.metadata.uid},
            "annotations": {
                "kubevirt.io/domain": vmi.metadata.name,
                "kubevirt.io/migrationTransportUnix": "true",
            },
            "ownerReferences": [
                {
                    "apiVersion": "kubevirt.io/v1",
                    "kind": "VirtualMachineInstance",
                    "name": vmi.metadata.name,
                    "uid": vmi.metadata.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [{"name": "compute", "image": LAUNCHER_IMAGE}],
            "restartPolicy": "Never",
            **({"volumes": claim_volumes} if (claim_volumes := _claim_volumes(vmi)) else {}),
        },
    }


def _claim_volumes(vmi: VirtualMachineInstance) -> list[JSON]:
    """The pod volumes of the VMI's claims mounted from the start, as the renderer makes them (a
    hotpluggable one is left to a later attachment pod)."""
    found: list[JSON] = []
    for volume in vmi.spec.volumes or []:
        pvc, dv = volume.persistent_volume_claim, volume.data_volume
        if pvc is not None and not pvc.hotpluggable:
            found.append({"name": volume.name, "persistentVolumeClaim": {"claimName": pvc.claim_name}})
        if dv is not None and not dv.hotpluggable:
            found.append({"name": volume.name, "persistentVolumeClaim": {"claimName": dv.name}})
        if volume.ephemeral is not None and volume.ephemeral.persistent_volume_claim is not None:
            claim = volume.ephemeral.persistent_volume_claim.claim_name
            found.append({"name": volume.name, "persistentVolumeClaim": {"claimName": claim}})
    return found


def vmi_mutator(obj: JSON) -> None:
    """What virt-api's VMI mutator adds on CREATE that the controllers rely on."""
    finalizers = obj["metadata"].setdefault("finalizers", [])
    if "foregroundDeleteVirtualMachine" not in finalizers:
        finalizers.append("foregroundDeleteVirtualMachine")
    obj.setdefault("status", {})["phase"] = "Pending"


@dataclass
class Controllers:
    """Every controller over one cluster, each with its own queue, wired to the informers' handlers."""

    cluster: Cluster
    rng: random.Random = field(default_factory=lambda: random.Random(1))
    events: FakeEvents = field(default_factory=FakeEvents)
    errors: list[tuple[str, str, Exception]] = field(default_factory=list)
    queues: dict[str, FakeQueue] = field(default_factory=dict)
    config: ClusterConfig = field(default_factory=ClusterConfig)
    vmi_volumes: FakeVMIVolumes | None = None
    # CDI installed: the VM and VMI controllers watch DataVolumes (as once CDI's CRDs are served).
    cdi: bool = False
    clone_authorizer: CloneAuthorizer | None = None

    def __post_init__(self) -> None:
        c = self.cluster
        dvs = c.informer(DATA_VOLUMES) if self.cdi else None
        data_volumes = (lambda: dvs.store) if dvs is not None else None
        if self.vmi_volumes is None:
            self.vmi_volumes = FakeVMIVolumes(c.api)
        c.api.admission.setdefault(VIRTUAL_MACHINE_INSTANCES.plural, vmi_mutator)
        vms, vmis = c.informer(VIRTUAL_MACHINES), c.informer(VIRTUAL_MACHINE_INSTANCES)
        pods, nodes, pvcs = c.informer(PODS), c.informer(NODES), c.informer(PERSISTENT_VOLUME_CLAIMS)
        rss, pools = c.informer(VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS), c.informer(VIRTUAL_MACHINE_POOLS)
        self.queues = {name: FakeQueue() for name in ("vm", "vmi", "rs", "pool", "node")}
        clock = c.api.clock
        self.vm = VMController(
            api=c.api,
            events=self.events,
            vm_store=vms.store,
            vmi_store=vmis.store,
            expectations=UIDTrackingControllerExpectations(),
            enqueue=self.queues["vm"].add,
            clock=clock,
            rng=self.rng,
            instancetype_store=c.informer(VIRTUAL_MACHINE_INSTANCETYPES).store,
            cluster_instancetype_store=c.informer(VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES).store,
            preference_store=c.informer(VIRTUAL_MACHINE_PREFERENCES).store,
            cluster_preference_store=c.informer(VIRTUAL_MACHINE_CLUSTER_PREFERENCES).store,
            revision_store=c.informer(CONTROLLER_REVISIONS).store,
            config=lambda: self.config,
            vmi_volumes=self.vmi_volumes,
            pvc_store=pvcs.store,
            data_volumes=data_volumes,
            clone_authorizer=self.clone_authorizer,
        )
        vms.add_event_handler(self.vm.on_vm_add, self.vm.on_vm_update, self.vm.on_vm_delete)
        vmis.add_event_handler(self.vm.on_vmi_add, self.vm.on_vmi_update, self.vm.on_vmi_delete)
        pvcs.add_event_handler(self.vm.on_pvc_add, self.vm.on_pvc_update, self.vm.on_pvc_delete)
        self.vmi = VMIController(
            api=c.api,
            events=self.events,
            vmi_store=vmis.store,
            pod_store=pods.store,
            vm_store=vms.store,
            render_pod=render_pod,
            pod_expectations=UIDTrackingControllerExpectations(),
            vmi_expectations=ControllerExpectations(),
            enqueue=self.queues["vmi"].add,
            clock=clock,
            launcher_image=LAUNCHER_IMAGE,
            pvc_store=pvcs.store,
            data_volumes=data_volumes,
        )
        vmis.add_event_handler(self.vmi.on_vmi_add, self.vmi.on_vmi_update, self.vmi.on_vmi_delete)
        pods.add_event_handler(self.vmi.on_pod_add, self.vmi.on_pod_update, self.vmi.on_pod_delete)
        pvcs.add_event_handler(self.vmi.on_pvc_add, self.vmi.on_pvc_update, self.vmi.on_pvc_delete)
        vms.add_event_handler(self.vmi.on_vm_add, self.vmi.on_vm_update, self.vmi.on_vm_delete)
        if dvs is not None:
            for dv_handler in (self.vm, self.vmi):
                dvs.add_event_handler(
                    dv_handler.on_data_volume_add,
                    dv_handler.on_data_volume_update,
                    dv_handler.on_data_volume_delete,
                )
        self.rs = ReplicaSetController(
            api=c.api,
            events=self.events,
            rs_store=rss.store,
            vmi_store=vmis.store,
            expectations=UIDTrackingControllerExpectations(),
            enqueue=self.queues["rs"].add,
        )
        rss.add_event_handler(self.rs.on_rs_add, self.rs.on_rs_update, self.rs.on_rs_delete)
        vmis.add_event_handler(self.rs.on_vmi_add, self.rs.on_vmi_update, self.rs.on_vmi_delete)
        self.pool = PoolController(
            api=c.api,
            events=self.events,
            pool_store=pools.store,
            vm_store=vms.store,
            vmi_store=vmis.store,
            expectations=UIDTrackingControllerExpectations(),
            enqueue=self.queues["pool"].add,
            rng=self.rng,
        )
        pools.add_event_handler(self.pool.on_pool_add, self.pool.on_pool_update, self.pool.on_pool_delete)
        vms.add_event_handler(self.pool.on_vm_add, self.pool.on_vm_update, self.pool.on_vm_delete)
        vmis.add_event_handler(self.pool.on_vmi_add, self.pool.on_vmi_update, self.pool.on_vmi_delete)
        self.node = NodeController(
            api=c.api,
            events=self.events,
            node_store=nodes.store,
            vmi_store=vmis.store,
            pod_store=pods.store,
            enqueue=self.queues["node"].add,
            clock=clock,
        )
        nodes.add_event_handler(self.node.on_node_add, self.node.on_node_update, self.node.on_node_delete)
        vmis.add_event_handler(self.node.on_vmi_add, self.node.on_vmi_update, self.node.on_vmi_delete)
        # What the informers' initial lists deliver as adds.
        for informer in c.informers.values():
            for obj in informer.store.list():
                for on_add, _, _ in informer.handlers:
                    on_add(obj)

    def reconcilers(self) -> dict[str, Callable[[str], None]]:
        return {
            "vm": self.vm.reconcile,
            "vmi": self.vmi.reconcile,
            "rs": self.rs.reconcile,
            "pool": self.pool.reconcile,
            "node": self.node.reconcile,
        }

    def run(self, *, rounds: int = 50, only: tuple[str, ...] | None = None) -> None:
        """Syncs the caches and works every queue until nothing is left (or ``rounds`` run out)."""
        for _ in range(rounds):
            self.cluster.sync()
            worked = False
            for name, reconcile in self.reconcilers().items():
                if only is not None and name not in only:
                    continue
                queue = self.queues[name]
                while (key := queue.pop()) is not None:
                    worked = True
                    try:
                        reconcile(key)
                    except RequeueAfter as wait:
                        queue.delayed[key] = wait.seconds
                    except Exception as err:  # the real queue retries these with backoff
                        self.errors.append((name, key, err))
                self.cluster.sync()
            if not worked:
                return

    def requeue_failed(self) -> None:
        """What the rate-limited queue does once the backoff passed: failed and delayed keys come back."""
        for name, key, _ in self.errors:
            self.queues[name].add(key)
        self.errors.clear()
        for queue in self.queues.values():
            for key in list(queue.delayed):
                queue.add(key)
            queue.delayed.clear()


def vm_manifest(name: str, **spec: Any) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": {"note": "from-template"}},
                "spec": {"domain": {"devices": {}, "memory": {"guest": "128Mi"}}},
            },
            **spec,
        },
    }


def vmi_manifest(name: str, labels: dict[str, str] | None = None) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels or {}},
        "spec": {"domain": {"devices": {}, "memory": {"guest": "128Mi"}}},
    }


def bind_pod(cluster: Cluster, pod_name: str, node: str = "node01") -> None:
    """The scheduler binds the pod to a node; its containers are still being created."""

    def bind(pod: JSON) -> None:
        pod["spec"]["nodeName"] = node
        status = pod.setdefault("status", {})
        status["phase"] = "Pending"
        status["conditions"] = [
            *(c for c in status.get("conditions") or [] if c["type"] != "PodScheduled"),
            {"type": "PodScheduled", "status": "True"},
        ]

    cluster.api.edit(PODS, NAMESPACE, pod_name, bind)


def start_pod(cluster: Cluster, pod_name: str) -> None:
    """The kubelet starts the compute container."""

    def start(pod: JSON) -> None:
        status = pod.setdefault("status", {})
        status.update(
            {
                "phase": "Running",
                "qosClass": "Burstable",
                "containerStatuses": [{"name": "compute", "ready": True, "state": {"running": {}}}],
            }
        )
        status["conditions"] = [
            *(c for c in status.get("conditions") or [] if c["type"] != "Ready"),
            {"type": "Ready", "status": "True"},
        ]

    cluster.api.edit(PODS, NAMESPACE, pod_name, start)


def schedule_pod(cluster: Cluster, pod_name: str, node: str = "node01") -> None:
    bind_pod(cluster, pod_name, node)
    start_pod(cluster, pod_name)


def set_vmi_phase(cluster: Cluster, name: str, phase: str, **status: Any) -> None:
    """virt-handler reports the domain's state."""

    def change(vmi: JSON) -> None:
        vmi.setdefault("status", {})["phase"] = phase
        stamps = vmi["status"].setdefault("phaseTransitionTimestamps", [])
        stamps.append({"phase": phase, "phaseTransitionTimestamp": "2026-01-01T12:00:00Z"})
        vmi["status"].update(copy.deepcopy(status))

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, name, change)
