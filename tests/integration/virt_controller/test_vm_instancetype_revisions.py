"""The VM controller stores instance types and preferences as ControllerRevisions in a real
kube-apiserver and builds VMIs from those copies.

No VMI controller, scheduler or virt-handler runs: the test stops and starts the VM by deleting its
VMI (what ``virtctl restart`` leads to) and reads the VMI the VM controller creates.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kubevirt.client import (
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    ConflictError,
    KubeClient,
    NotFoundError,
)
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    VIRTUAL_MACHINE_INSTANCETYPES,
    VIRTUAL_MACHINE_PREFERENCES,
)
from kubevirt.controller import (
    Controller,
    RateLimitingQueue,
    SharedInformerFactory,
    UIDTrackingControllerExpectations,
)
from kubevirt.virt_controller.watch.vm import VMController
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance
from kubevirt_api.instancetype.v1beta1 import VirtualMachineInstancetype, VirtualMachinePreference
from kubevirt_testing.controller_threads import controller_threads
from kubevirt_testing.waiting import eventually

GROUP_VERSION = "instancetype.kubevirt.io/v1beta1"


class Events:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.recorded.append((reason, message))


@pytest.fixture
def vm_controller(kube: KubeClient, namespace: str) -> Iterator[Events]:
    factory = SharedInformerFactory(kube, resync_seconds=0)
    vms = factory.informer(VIRTUAL_MACHINES, VirtualMachine, namespace=namespace)
    vmis = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance, namespace=namespace)
    queue = RateLimitingQueue("vm")
    events = Events()
    vm = VMController(
        api=kube,
        events=events,
        vm_store=vms.store,
        vmi_store=vmis.store,
        expectations=UIDTrackingControllerExpectations(),
        enqueue=queue.add,
        instancetype_store=factory.informer(
            VIRTUAL_MACHINE_INSTANCETYPES, VirtualMachineInstancetype, namespace=namespace
        ).store,
        preference_store=factory.informer(
            VIRTUAL_MACHINE_PREFERENCES, VirtualMachinePreference, namespace=namespace
        ).store,
        revision_store=factory.informer(CONTROLLER_REVISIONS, namespace=namespace).store,
    )
    vms.add_event_handler(vm.on_vm_add, vm.on_vm_update, vm.on_vm_delete)
    vmis.add_event_handler(vm.on_vmi_add, vm.on_vmi_update, vm.on_vmi_delete)
    factory.start()
    assert factory.wait_for_cache_sync(15)
    try:
        with controller_threads(Controller("vm", queue, vm, workers=2)):
            yield events
    finally:
        factory.stop()


def _instancetype(kube: KubeClient, namespace: str, cpus: int, memory: str) -> dict[str, Any]:
    body = {
        "apiVersion": GROUP_VERSION,
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": "it-small"},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": memory}},
    }
    return kube.create(VIRTUAL_MACHINE_INSTANCETYPES, namespace, body)


def _preference(kube: KubeClient, namespace: str) -> dict[str, Any]:
    body = {
        "apiVersion": GROUP_VERSION,
        "kind": "VirtualMachinePreference",
        "metadata": {"name": "virtio"},
        "spec": {"devices": {"preferredDiskBus": "virtio"}, "cpu": {"preferredCPUTopology": "cores"}},
    }
    return kube.create(VIRTUAL_MACHINE_PREFERENCES, namespace, body)


def _vm(kube: KubeClient, namespace: str) -> dict[str, Any]:
    body = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "sized"},
        "spec": {
            "runStrategy": "Always",
            "instancetype": {"name": "it-small", "kind": "VirtualMachineInstancetype"},
            "preference": {"name": "virtio", "kind": "VirtualMachinePreference"},
            "template": {"spec": {"domain": {"devices": {"disks": [{"name": "root"}]}}}},
        },
    }
    return kube.create(VIRTUAL_MACHINES, namespace, body)


def _vmi(kube: KubeClient, namespace: str) -> dict[str, Any] | None:
    try:
        return kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "sized")
    except NotFoundError:
        return None


def _size(vmi: dict[str, Any] | None) -> tuple[int, str] | None:
    if vmi is None:
        return None
    domain = vmi["spec"]["domain"]
    return domain["cpu"]["cores"], domain["memory"]["guest"]


def _refs(kube: KubeClient, namespace: str) -> tuple[str | None, str | None]:
    status = kube.get(VIRTUAL_MACHINES, namespace, "sized").get("status", {})
    names = [
        (status.get(key) or {}).get("controllerRevisionRef", {}).get("name")
        for key in ("instancetypeRef", "preferenceRef")
    ]
    return names[0], names[1]


def _restart(kube: KubeClient, namespace: str) -> None:
    """What ``virtctl restart`` leads to: the VMI goes, the VM controller builds the next one."""
    old = _vmi(kube, namespace)
    assert old is not None
    kube.delete(VIRTUAL_MACHINE_INSTANCES, namespace, "sized")
    # No VMI controller or virt-handler runs here to finish the old VMI: drop its finalizers for them.
    kube.patch(
        VIRTUAL_MACHINE_INSTANCES, namespace, "sized", {"metadata": {"finalizers": None}}, patch_type="merge"
    )
    eventually(
        lambda: (
            (_vmi(kube, namespace) or {}).get("metadata", {}).get("uid") not in (None, old["metadata"]["uid"])
        )
    )


def _retry_on_conflict(write: Any) -> None:
    for _ in range(20):
        try:
            write()
            return
        except ConflictError:
            threading.Event().wait(0.1)
    raise AssertionError("kept conflicting")


def test_revisions_are_stored_and_keep_the_vm_on_its_copy(
    kube: KubeClient, namespace: str, vm_controller: Events
) -> None:
    it = _instancetype(kube, namespace, 2, "256Mi")
    pref = _preference(kube, namespace)
    vm = _vm(kube, namespace)
    eventually(lambda: _size(_vmi(kube, namespace)) == (2, "256Mi"))
    it_rev, pref_rev = _refs(kube, namespace)
    assert it_rev == f"sized-it-small-v1beta1-{it['metadata']['uid']}-1"
    assert pref_rev == f"sized-virtio-v1beta1-{pref['metadata']['uid']}-1"
    vmi = _vmi(kube, namespace)
    assert vmi is not None
    assert vmi["spec"]["domain"]["devices"]["disks"] == [{"name": "root", "disk": {"bus": "virtio"}}]

    # The apiserver holds KubeVirt's shape: owned by the VM, labelled, the whole object in data.
    revision = kube.get(CONTROLLER_REVISIONS, namespace, it_rev)
    [owner] = revision["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "VirtualMachine",
        vm["metadata"]["uid"],
        True,
    )
    assert (
        revision["metadata"]["labels"]["instancetype.kubevirt.io/object-kind"] == "VirtualMachineInstancetype"
    )
    assert revision["data"]["kind"] == "VirtualMachineInstancetype"
    assert revision["data"]["spec"] == it["spec"]

    # Editing the instance type changes neither the running VMI nor the next one.
    def grow() -> None:
        current = kube.get(VIRTUAL_MACHINE_INSTANCETYPES, namespace, "it-small")
        current["spec"] = {"cpu": {"guest": 4}, "memory": {"guest": "512Mi"}}
        kube.update(VIRTUAL_MACHINE_INSTANCETYPES, namespace, current)

    _retry_on_conflict(grow)
    _restart(kube, namespace)
    assert _size(_vmi(kube, namespace)) == (2, "256Mi")
    assert _refs(kube, namespace)[0] == it_rev

    # The user asks for the new version (KubeVirt: clear the recorded revision), then restarts.
    kube.patch(
        VIRTUAL_MACHINES,
        namespace,
        "sized",
        {"status": {"instancetypeRef": {"controllerRevisionRef": None}}},
        patch_type="merge",
        subresource="status",
    )
    new_rev = f"sized-it-small-v1beta1-{it['metadata']['uid']}-2"
    eventually(lambda: _refs(kube, namespace)[0] == new_rev)
    assert _size(_vmi(kube, namespace)) == (2, "256Mi")  # running VMIs are left alone
    _restart(kube, namespace)
    assert _size(_vmi(kube, namespace)) == (4, "512Mi")
    assert _refs(kube, namespace)[1] == pref_rev  # the preference's copy was kept
    assert not [reason for reason, _ in vm_controller.recorded if reason == "FailedCreate"]
