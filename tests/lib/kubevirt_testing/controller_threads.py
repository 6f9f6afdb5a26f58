"""virt-controller's controllers run on the controller runtime (informers, queues, worker threads) against a
real kube-apiserver, as the integration tests drive them, and the bare launcher pod they render there."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from kubevirt.client import (
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    KubeClient,
)
from kubevirt.controller import (
    Controller,
    ControllerExpectations,
    RateLimitingQueue,
    SharedInformerFactory,
    UIDTrackingControllerExpectations,
)
from kubevirt.virt_controller.watch.vm import VMController
from kubevirt.virt_controller.watch.vmi import RenderPod, VMIController
from kubevirt.virt_controller.watch.volumerequests import VMIVolumes
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance

LAUNCHER_IMAGE = "virt-launcher:test"


def launcher_pod(
    vmi: VirtualMachineInstance, *, node: str | None = None, image: str = LAUNCHER_IMAGE, **spec: Any
) -> dict[str, Any]:
    """The least launcher pod the API server takes for ``vmi``: one compute container, never restarted,
    bound to ``node`` when given (no scheduler runs here); ``spec`` adds further pod spec fields."""
    assert vmi.metadata is not None
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"virt-launcher-{vmi.metadata.name}-",
            "labels": {"kubevirt.io": "virt-launcher"},
        },
        "spec": {
            **({"nodeName": node} if node is not None else {}),
            "containers": [{"name": "compute", "image": image}],
            **spec,
            "restartPolicy": "Never",
        },
    }


@contextlib.contextmanager
def controller_threads(*controllers: Controller) -> Iterator[None]:
    """Each controller's workers running on their own threads until the block ends."""
    stop = threading.Event()
    threads = [threading.Thread(target=c.run, args=(stop,), daemon=True) for c in controllers]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)


@contextlib.contextmanager
def vm_and_vmi_controllers(
    kube: KubeClient,
    namespace: str,
    *,
    api: Any,
    events: Any,
    render_pod: RenderPod,
    pod_selector: str | None = None,
    claims: bool = False,
    vmi_volumes: VMIVolumes | None = None,
    launcher_image: str | None = None,
) -> Iterator[None]:
    """virt-controller's VM and VMI controllers on their own informers of ``namespace``, writing through
    ``api`` and recording to ``events``, until the block ends. ``pod_selector`` narrows the pods they see;
    ``claims`` has the VMI controller watch the namespace's claims (as volume hotplug needs)."""
    factory = SharedInformerFactory(kube, resync_seconds=0)
    vms = factory.informer(VIRTUAL_MACHINES, VirtualMachine, namespace=namespace)
    vmis = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance, namespace=namespace)
    pods = factory.informer(PODS, namespace=namespace, label_selector=pod_selector)
    pvcs = factory.informer(PERSISTENT_VOLUME_CLAIMS, namespace=namespace) if claims else None
    vm_queue, vmi_queue = RateLimitingQueue("vm"), RateLimitingQueue("vmi")
    vm = VMController(
        api=api,
        events=events,
        vm_store=vms.store,
        vmi_store=vmis.store,
        expectations=UIDTrackingControllerExpectations(),
        enqueue=vm_queue.add,
        vmi_volumes=vmi_volumes,
    )
    vmi = VMIController(
        api=api,
        events=events,
        vmi_store=vmis.store,
        pod_store=pods.store,
        vm_store=vms.store,
        render_pod=render_pod,
        pod_expectations=UIDTrackingControllerExpectations(),
        vmi_expectations=ControllerExpectations(),
        enqueue=vmi_queue.add,
        launcher_image=launcher_image,
        pvc_store=pvcs.store if pvcs is not None else None,
    )
    vms.add_event_handler(vm.on_vm_add, vm.on_vm_update, vm.on_vm_delete)
    vmis.add_event_handler(vm.on_vmi_add, vm.on_vmi_update, vm.on_vmi_delete)
    vmis.add_event_handler(vmi.on_vmi_add, vmi.on_vmi_update, vmi.on_vmi_delete)
    pods.add_event_handler(vmi.on_pod_add, vmi.on_pod_update, vmi.on_pod_delete)
    if pvcs is not None:
        pvcs.add_event_handler(vmi.on_pvc_add, vmi.on_pvc_update, vmi.on_pvc_delete)
    factory.start()
    assert factory.wait_for_cache_sync(15)
    try:
        with controller_threads(
            Controller("vm", vm_queue, vm, workers=2), Controller("vmi", vmi_queue, vmi, workers=2)
        ):
            yield
    finally:
        factory.stop()
