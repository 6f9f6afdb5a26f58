"""The VM controller's volume hotplug: ``status.volumeRequests`` applied to the template and handed to
the VMI (KubeVirt's ``handleVolumeRequests`` and ``trimDoneVolumeRequests``), and the
DeclarativeHotplugVolumes path."""

from __future__ import annotations

import copy
from typing import Any

from kubevirt.client import (
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    InvalidError,
)
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_controller.watch.pods import pod_name
from kubevirt.virt_controller.watch.volumerequests import (
    SubresourceVolumes,
    apply_volume_request,
    pending_requests,
)
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstanceSpec
from kubevirt_api.core.v1.vm import VirtualMachineVolumeRequest

from .fakes import JSON, Cluster
from .harness import NAMESPACE, Controllers, schedule_pod, set_vmi_phase, vm_manifest

VM = "testvm"
ADD_OPTIONS: JSON = {
    "name": "extra",
    "disk": {"name": "extra", "disk": {"bus": "scsi"}, "serial": "HP1"},
    "volumeSource": {"persistentVolumeClaim": {"claimName": "disk-h"}},
}


def _vm(cluster: Cluster) -> JSON:
    return cluster.api.get(VIRTUAL_MACHINES, NAMESPACE, VM)


def _vmi(cluster: Cluster) -> JSON:
    return cluster.api.get(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VM)


def _template(cluster: Cluster) -> JSON:
    return _vm(cluster)["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def _with_requests(cluster: Cluster, controllers: Controllers, *requests: JSON) -> None:
    """virt-api's VM addvolume/removevolume: the request lands in the VM's status."""
    cluster.api.edit(
        VIRTUAL_MACHINES,
        NAMESPACE,
        VM,
        lambda vm: vm["status"].update(volumeRequests=copy.deepcopy(list(requests))),
    )
    controllers.run()


def _claim(cluster: Cluster) -> None:
    cluster.api.put(
        PERSISTENT_VOLUME_CLAIMS,
        {
            "metadata": {"name": "disk-h", "namespace": NAMESPACE},
            "spec": {"volumeMode": "Filesystem"},
            "status": {"phase": "Bound"},
        },
    )


def _running_vm(cluster: Cluster, **spec: Any) -> Controllers:
    _claim(cluster)
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm_manifest(VM, runStrategy="Always", **spec))
    controllers.run()
    schedule_pod(cluster, pod_name(cluster.api.find(PODS, NAMESPACE)[0]))
    controllers.run()
    set_vmi_phase(cluster, VM, "Running", selinuxContext="none")
    controllers.run()
    assert controllers.errors == []
    return controllers


def test_an_add_request_goes_into_the_template_and_to_the_running_vmi() -> None:
    cluster = Cluster()
    controllers = _running_vm(cluster)
    assert controllers.vmi_volumes is not None
    cluster.api.writes.clear()
    _with_requests(cluster, controllers, {"addVolumeOptions": ADD_OPTIONS})
    assert controllers.errors == []
    template = _template(cluster)
    assert template["volumes"] == [
        {"name": "extra", "persistentVolumeClaim": {"claimName": "disk-h", "hotpluggable": True}}
    ]
    assert template["domain"]["devices"]["disks"] == [
        {"name": "extra", "disk": {"bus": "scsi"}, "serial": "HP1"}
    ]
    assert controllers.vmi_volumes.calls == [("add", NAMESPACE, VM, ADD_OPTIONS)]
    # Done: the request leaves the status; the VMI has the volume (virt-api put it there).
    assert "volumeRequests" not in _vm(cluster)["status"]
    assert [v["name"] for v in _vmi(cluster)["spec"]["volumes"]] == ["extra"]
    # One patch of the template, no update of the whole VM.
    assert cluster.api.count_writes("patch", VIRTUAL_MACHINES) == 1
    assert cluster.api.count_writes("update", VIRTUAL_MACHINES) == 0
    # Nothing more happens on later passes.
    controllers.queues["vm"].add(f"{NAMESPACE}/{VM}")
    controllers.run()
    assert len(controllers.vmi_volumes.calls) == 1


def test_the_template_patch_is_guarded_by_the_vms_version() -> None:
    cluster = Cluster()
    controllers = _running_vm(cluster)
    seen: list[Any] = []
    original = cluster.api.patch

    def spy(resource: Any, namespace: Any, name: str, patch: Any, **kwargs: Any) -> JSON:
        if resource is VIRTUAL_MACHINES:
            seen.append(copy.deepcopy(patch))
        return original(resource, namespace, name, patch, **kwargs)

    cluster.api.patch = spy  # type: ignore[method-assign]
    before = _vm(cluster)["metadata"]["resourceVersion"]
    cluster.api.edit(
        VIRTUAL_MACHINES,
        NAMESPACE,
        VM,
        lambda vm: vm["status"].update(volumeRequests=[{"addVolumeOptions": ADD_OPTIONS}]),
    )
    controllers.run()
    (ops,) = [p for p in seen if isinstance(p, list) and any("volumes" in op["path"] for op in p)]
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": str(int(before) + 1)}
    assert [op["path"] for op in ops[1:]] == [
        "/spec/template/spec/volumes",
        "/spec/template/spec/domain/devices/disks",
    ]


def test_a_remove_request_takes_the_volume_out_of_the_template_and_the_vmi() -> None:
    cluster = Cluster()
    controllers = _running_vm(cluster)
    assert controllers.vmi_volumes is not None
    _with_requests(cluster, controllers, {"addVolumeOptions": ADD_OPTIONS})
    _with_requests(cluster, controllers, {"removeVolumeOptions": {"name": "extra"}})
    assert controllers.errors == []
    template = _template(cluster)
    assert "volumes" not in template
    assert "disks" not in template["domain"]["devices"]
    assert controllers.vmi_volumes.calls[-1] == ("remove", NAMESPACE, VM, {"name": "extra"})
    assert _vmi(cluster)["spec"]["volumes"] == []
    assert "volumeRequests" not in _vm(cluster)["status"]


def test_a_stopped_vm_only_changes_its_template() -> None:
    cluster = Cluster()
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm_manifest(VM, runStrategy="Halted"))
    controllers.run()
    _with_requests(cluster, controllers, {"addVolumeOptions": ADD_OPTIONS})
    assert controllers.vmi_volumes is not None
    assert controllers.vmi_volumes.calls == []
    assert [v["name"] for v in _template(cluster)["volumes"]] == ["extra"]
    assert "volumeRequests" not in _vm(cluster)["status"]


def test_a_vmi_that_has_the_volume_already_is_not_asked_again() -> None:
    cluster = Cluster()
    controllers = _running_vm(cluster)
    assert controllers.vmi_volumes is not None

    def plugged(vmi: JSON) -> None:
        vmi["spec"]["volumes"] = [
            {"name": "extra", "persistentVolumeClaim": {"claimName": "disk-h", "hotpluggable": True}}
        ]

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VM, plugged)
    _with_requests(cluster, controllers, {"addVolumeOptions": ADD_OPTIONS})
    assert controllers.vmi_volumes.calls == []
    assert [v["name"] for v in _template(cluster)["volumes"]] == ["extra"]


def test_a_refused_vmi_request_fails_the_vm_and_keeps_the_request() -> None:
    cluster = Cluster()
    controllers = _running_vm(cluster)
    assert controllers.vmi_volumes is not None
    controllers.vmi_volumes.fail = InvalidError(
        422, "Invalid", "Unable to add volume [extra] because it already exists"
    )
    _with_requests(cluster, controllers, {"addVolumeOptions": ADD_OPTIONS})
    vm = _vm(cluster)
    failure = next(c for c in vm["status"]["conditions"] if c["type"] == "Failure")
    assert failure["reason"] == "HotPlugVolumeError"
    assert failure["message"] == (
        "Error encountered while handling volume hotplug requests: "
        "Unable to add volume [extra] because it already exists"
    )
    assert vm["status"]["volumeRequests"] == [{"addVolumeOptions": ADD_OPTIONS}]
    assert "volumes" not in vm["spec"]["template"]["spec"]
    # Once virt-api takes it, the retry goes through.
    controllers.vmi_volumes.fail = None
    controllers.requeue_failed()
    controllers.run()
    vm = _vm(cluster)
    assert "volumeRequests" not in vm["status"]
    assert not any(c["type"] == "Failure" for c in vm["status"].get("conditions") or [])


def test_the_vmi_subresources_are_put_through_the_aggregated_api() -> None:
    sent: list[tuple[str, str, Any]] = []

    class Client:
        def request(self, method: str, path: str, *, body: Any = None) -> bytes:
            sent.append((method, path, body))
            return b""

    volumes = SubresourceVolumes(Client())
    volumes.add_volume("ns1", "vm1", ADD_OPTIONS)
    volumes.remove_volume("ns1", "vm1", {"name": "extra"})
    base = "/apis/subresources.kubevirt.io/v1/namespaces/ns1/virtualmachineinstances/vm1"
    assert sent == [
        ("PUT", f"{base}/addvolume", ADD_OPTIONS),
        ("PUT", f"{base}/removevolume", {"name": "extra"}),
    ]


# -- the pieces --------------------------------------------------------------------------------------------


def _spec(**extra: Any) -> VirtualMachineInstanceSpec:
    return VirtualMachineInstanceSpec.from_dict({"domain": {"devices": {}}, **extra})


def test_a_data_volume_request_is_marked_hotpluggable_and_a_known_name_is_left_alone() -> None:
    spec = _spec(volumes=[{"name": "extra", "containerDisk": {"image": "x"}}])
    request = VirtualMachineVolumeRequest.from_dict(
        {"addVolumeOptions": {**ADD_OPTIONS, "volumeSource": {"dataVolume": {"name": "dv"}}}}
    )
    apply_volume_request(spec, request)
    assert [v.to_dict() for v in spec.volumes or []] == [{"name": "extra", "containerDisk": {"image": "x"}}]
    assert spec.domain.devices.disks is None
    other = _spec()
    apply_volume_request(other, request)
    assert [v.to_dict() for v in other.volumes or []] == [
        {"name": "extra", "dataVolume": {"name": "dv", "hotpluggable": True}}
    ]


def test_requests_are_done_once_the_template_shows_them() -> None:
    def vm(volumes: list[str], disks: list[str], *requests: JSON) -> VirtualMachine:
        manifest = vm_manifest(VM)
        manifest["spec"]["template"]["spec"]["volumes"] = [
            {"name": n, "persistentVolumeClaim": {"claimName": n}} for n in volumes
        ]
        manifest["spec"]["template"]["spec"]["domain"]["devices"]["disks"] = [{"name": n} for n in disks]
        manifest["status"] = {"volumeRequests": list(requests)}
        return VirtualMachine.from_dict(manifest)

    add = {"addVolumeOptions": ADD_OPTIONS}
    remove = {"removeVolumeOptions": {"name": "extra"}}
    assert pending_requests(vm(["extra"], ["extra"], add)) == []
    assert len(pending_requests(vm(["extra"], [], add))) == 1  # the disk is still missing
    assert pending_requests(vm([], [], remove)) == []
    assert len(pending_requests(vm([], ["extra"], remove))) == 1


# -- DeclarativeHotplugVolumes -------------------------------------------------------------------------------


def _declarative(cluster: Cluster, *gates: str) -> Controllers:
    _claim(cluster)
    controllers = Controllers(cluster, config=ClusterConfig.build(feature_gates=gates))
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm_manifest(VM, runStrategy="Always"))
    controllers.run()
    schedule_pod(cluster, pod_name(cluster.api.find(PODS, NAMESPACE)[0]))
    controllers.run()
    set_vmi_phase(cluster, VM, "Running", selinuxContext="none")
    controllers.run()
    return controllers


def _template_volume(
    cluster: Cluster, controllers: Controllers, *, present: bool, only: tuple[str, ...] | None = None
) -> None:
    def change(vm: JSON) -> None:
        spec = vm["spec"]["template"]["spec"]
        if present:
            spec["volumes"] = [
                {"name": "extra", "persistentVolumeClaim": {"claimName": "disk-h", "hotpluggable": True}}
            ]
            spec["domain"]["devices"]["disks"] = [{"name": "extra", "disk": {"bus": "scsi"}}]
        else:
            spec.pop("volumes", None)
            spec["domain"]["devices"].pop("disks", None)

    cluster.api.edit(VIRTUAL_MACHINES, NAMESPACE, VM, change)
    controllers.run(only=only)


def test_declaratively_the_templates_hotpluggable_volume_is_patched_into_the_vmi() -> None:
    cluster = Cluster()
    controllers = _declarative(cluster, "DeclarativeHotplugVolumes")
    seen: list[Any] = []
    original = cluster.api.patch

    def spy(resource: Any, namespace: Any, name: str, patch: Any, **kwargs: Any) -> JSON:
        if resource is VIRTUAL_MACHINE_INSTANCES and isinstance(patch, list):
            seen.append(copy.deepcopy(patch))
        return original(resource, namespace, name, patch, **kwargs)

    cluster.api.patch = spy  # type: ignore[method-assign]
    _template_volume(cluster, controllers, present=True)
    assert controllers.errors == []
    spec = _vmi(cluster)["spec"]
    assert spec["volumes"] == [
        {"name": "extra", "persistentVolumeClaim": {"claimName": "disk-h", "hotpluggable": True}}
    ]
    assert spec["domain"]["devices"]["disks"] == [{"name": "extra", "disk": {"bus": "scsi"}}]
    (ops,) = [p for p in seen if p[0]["path"] == "/spec/volumes"]
    assert [(op["op"], op["path"]) for op in ops] == [
        ("test", "/spec/volumes"),
        ("test", "/spec/domain/devices/disks"),
        ("add", "/spec/volumes"),
        ("add", "/spec/domain/devices/disks"),
    ]
    assert ops[0]["value"] is None

    # Taken out of the template, it leaves the VMI.
    _template_volume(cluster, controllers, present=False)
    spec = _vmi(cluster)["spec"]
    assert spec["volumes"] == []
    assert spec["domain"]["devices"]["disks"] == []


def test_with_the_hotplug_gate_the_declarative_path_is_off() -> None:
    cluster = Cluster()
    controllers = _declarative(cluster, "DeclarativeHotplugVolumes", "HotplugVolumes")
    _template_volume(cluster, controllers, present=True)
    assert "volumes" not in _vmi(cluster)["spec"]


def test_a_volume_being_unplugged_is_not_added_back_declaratively() -> None:
    cluster = Cluster()
    controllers = _declarative(cluster, "DeclarativeHotplugVolumes")

    def unplugging(vmi: JSON) -> None:
        vmi["status"]["volumeStatus"] = [
            {"name": "extra", "target": "", "phase": "Detaching", "hotplugVolume": {}}
        ]

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VM, unplugging)
    # (The VMI controller keeps such an entry while its attachment pod exists; none is made here.)
    _template_volume(cluster, controllers, present=True, only=("vm",))
    assert "volumes" not in _vmi(cluster)["spec"]
