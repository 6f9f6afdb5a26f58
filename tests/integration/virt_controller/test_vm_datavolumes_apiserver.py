"""A VM's DataVolume templates against a real kube-apiserver with CDI's DataVolume CRD registered (no CDI
runs: the test plays it). The VM and VMI controllers watch DataVolumes only once the CRD is served, create
the DataVolume, report Provisioning, and start the VMI and its pod once CDI says Succeeded."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kubevirt.client import (
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    EventRecorder,
    KubeClient,
    NotFoundError,
)
from kubevirt.client.resources import CUSTOM_RESOURCE_DEFINITIONS, DATA_VOLUMES
from kubevirt.controller import (
    Controller,
    ControllerExpectations,
    RateLimitingQueue,
    SharedInformerFactory,
    UIDTrackingControllerExpectations,
)
from kubevirt.virt_controller.watch.cdiinformers import CdiInformers
from kubevirt.virt_controller.watch.vm import VMController
from kubevirt.virt_controller.watch.vmi import VMIController
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance
from kubevirt_testing.controller_threads import controller_threads, launcher_pod
from kubevirt_testing.waiting import eventually

CRD_NAME = f"{DATA_VOLUMES.plural}.{DATA_VOLUMES.group}"
DATA_VOLUME_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": DATA_VOLUMES.group,
        "names": {
            "kind": "DataVolume",
            "plural": "datavolumes",
            "singular": "datavolume",
            "listKind": "DataVolumeList",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


@pytest.fixture
def data_volume_crd(kube: KubeClient) -> Iterator[None]:
    kube.create(CUSTOM_RESOURCE_DEFINITIONS, None, DATA_VOLUME_CRD)

    def established() -> bool:
        conditions = kube.get(CUSTOM_RESOURCE_DEFINITIONS, None, CRD_NAME).get("status", {}).get("conditions")
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions or ())

    eventually(established)
    try:
        yield
    finally:
        kube.delete(CUSTOM_RESOURCE_DEFINITIONS, None, CRD_NAME)
        eventually(lambda: _gone(kube))


def _gone(kube: KubeClient) -> bool:
    try:
        kube.get(CUSTOM_RESOURCE_DEFINITIONS, None, CRD_NAME)
    except NotFoundError:
        return True
    return False


@pytest.fixture
def controllers(kube: KubeClient, namespace: str, data_volume_crd: None) -> Iterator[None]:
    """The VM and VMI controllers wired to CDI's informers as virt-controller wires them."""
    events = EventRecorder(kube, "virt-controller", host="test")
    factory = SharedInformerFactory(kube, resync_seconds=0)
    vms = factory.informer(VIRTUAL_MACHINES, VirtualMachine, namespace=namespace)
    vmis = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance, namespace=namespace)
    pods = factory.informer(PODS, namespace=namespace)
    pvcs = factory.informer(PERSISTENT_VOLUME_CLAIMS, namespace=namespace)
    cdi = CdiInformers(factory)
    factory.informer(CUSTOM_RESOURCE_DEFINITIONS).add_event_handler(
        cdi.on_crd_add, cdi.on_crd_update, cdi.on_crd_delete
    )
    vm_queue, vmi_queue = RateLimitingQueue("vm"), RateLimitingQueue("vmi")
    vm = VMController(
        api=kube,
        events=events,
        vm_store=vms.store,
        vmi_store=vmis.store,
        expectations=UIDTrackingControllerExpectations(),
        enqueue=vm_queue.add,
        pvc_store=pvcs.store,
        data_volumes=cdi.data_volumes,
    )
    vmi = VMIController(
        api=kube,
        events=events,
        vmi_store=vmis.store,
        pod_store=pods.store,
        vm_store=vms.store,
        render_pod=launcher_pod,
        pod_expectations=UIDTrackingControllerExpectations(),
        vmi_expectations=ControllerExpectations(),
        enqueue=vmi_queue.add,
        pvc_store=pvcs.store,
        data_volumes=cdi.data_volumes,
    )
    vms.add_event_handler(vm.on_vm_add, vm.on_vm_update, vm.on_vm_delete)
    vmis.add_event_handler(vm.on_vmi_add, vm.on_vmi_update, vm.on_vmi_delete)
    vmis.add_event_handler(vmi.on_vmi_add, vmi.on_vmi_update, vmi.on_vmi_delete)
    pods.add_event_handler(vmi.on_pod_add, vmi.on_pod_update, vmi.on_pod_delete)
    pvcs.add_event_handler(vm.on_pvc_add, vm.on_pvc_update, vm.on_pvc_delete)
    pvcs.add_event_handler(vmi.on_pvc_add, vmi.on_pvc_update, vmi.on_pvc_delete)
    cdi.on_data_volumes(
        lambda informer: informer.add_event_handler(
            vm.on_data_volume_add, vm.on_data_volume_update, vm.on_data_volume_delete
        )
    )
    cdi.on_data_volumes(
        lambda informer: informer.add_event_handler(
            vmi.on_data_volume_add, vmi.on_data_volume_update, vmi.on_data_volume_delete
        )
    )
    factory.start()
    # Twice: the CRDs' first list starts the DataVolume informer, whose cache is waited for too.
    assert factory.wait_for_cache_sync(15)
    assert factory.wait_for_cache_sync(15)
    assert cdi.data_volumes() is not None
    try:
        with controller_threads(
            Controller("vm", vm_queue, vm, workers=2), Controller("vmi", vmi_queue, vmi, workers=2)
        ):
            yield
    finally:
        factory.stop()
        events.stop()


def _play_cdi(kube: KubeClient, namespace: str, dv: dict[str, Any]) -> None:
    """CDI: the DataVolume's claim, bound and owned by it, then the DataVolume Succeeded."""
    owner = {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "name": dv["metadata"]["name"],
        "uid": dv["metadata"]["uid"],
        "controller": True,
    }
    claim = {
        "metadata": {"name": dv["metadata"]["name"], "ownerReferences": [owner]},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    kube.create(PERSISTENT_VOLUME_CLAIMS, namespace, claim)
    kube.patch(
        PERSISTENT_VOLUME_CLAIMS,
        namespace,
        dv["metadata"]["name"],
        {"status": {"phase": "Bound"}},
        patch_type="merge",
        subresource="status",
    )
    status = {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "True"}]}
    kube.patch(
        DATA_VOLUMES,
        namespace,
        dv["metadata"]["name"],
        {"status": status},
        patch_type="merge",
        subresource="status",
    )


def test_a_vm_creates_its_data_volume_and_starts_once_cdi_populated_it(
    kube: KubeClient, namespace: str, controllers: None
) -> None:
    kube.create(
        VIRTUAL_MACHINES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": "vm1"},
            "spec": {
                "runStrategy": "Always",
                "dataVolumeTemplates": [
                    {
                        "metadata": {"name": "vm1-root"},
                        "spec": {
                            "source": {"blank": {}},
                            "storage": {"resources": {"requests": {"storage": "1Gi"}}},
                        },
                    }
                ],
                "template": {
                    "spec": {
                        "domain": {"devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}}]}},
                        "volumes": [{"name": "root", "dataVolume": {"name": "vm1-root"}}],
                    }
                },
            },
        },
    )

    def data_volumes() -> list[dict[str, Any]]:
        return kube.list(DATA_VOLUMES, namespace)[0]

    def printable() -> str | None:
        status = kube.get(VIRTUAL_MACHINES, namespace, "vm1").get("status", {})
        return str(status["printableStatus"]) if "printableStatus" in status else None

    eventually(lambda: len(data_volumes()) == 1)
    [dv] = data_volumes()
    vm = kube.get(VIRTUAL_MACHINES, namespace, "vm1")
    assert [(r["kind"], r["uid"], r["controller"]) for r in dv["metadata"]["ownerReferences"]] == [
        ("VirtualMachine", vm["metadata"]["uid"], True)
    ]
    eventually(lambda: printable() == "Provisioning")
    time.sleep(0.5)
    assert kube.list(VIRTUAL_MACHINE_INSTANCES, namespace)[0] == []

    _play_cdi(kube, namespace, dv)
    eventually(lambda: len(kube.list(VIRTUAL_MACHINE_INSTANCES, namespace)[0]) == 1)
    eventually(lambda: len(kube.list(PODS, namespace)[0]) == 1)
    eventually(lambda: printable() == "Starting")

    def data_volumes_ready() -> tuple[str, str] | None:
        vmi = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vm1")
        conditions = vmi.get("status", {}).get("conditions") or ()
        return next(((c["status"], c["reason"]) for c in conditions if c["type"] == "DataVolumesReady"), None)

    eventually(lambda: data_volumes_ready() == ("True", "AllDVsReady"))
    assert len(data_volumes()) == 1
