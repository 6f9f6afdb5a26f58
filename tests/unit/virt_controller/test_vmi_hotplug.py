"""The VMI controller's hotplug attachment pods and the volume status it keeps for hotplugged volumes
(KubeVirt's ``handleHotplugVolumes`` and ``updateVolumeStatus``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.controller import Store, UIDTrackingControllerExpectations, key_for
from kubevirt.virt_controller.watch.common import SyncError
from kubevirt.virt_controller.watch.hotplug import (
    AttachmentPods,
    active_and_old,
    carries_exactly,
    needs_handling,
)
from kubevirt.virt_controller.watch.pods import pod_name
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.volumes import Volume

from .fakes import JSON, Cluster, FakeApi, FakeEvents
from .harness import NAMESPACE, Controllers, schedule_pod, set_vmi_phase, vm_manifest, vmi_manifest

VMI = "testvmi"
KEY = f"{NAMESPACE}/{VMI}"


def _pvc(name: str, *, mode: str = "Filesystem", phase: str = "Bound", owner: JSON | None = None) -> JSON:
    meta: JSON = {"name": name, "namespace": NAMESPACE}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "volumeMode": mode,
            "resources": {"requests": {"storage": "1Gi"}},
        },
        "status": {"phase": phase, "capacity": {"storage": "1Gi"}},
    }


def _hotplugged(name: str, claim: str) -> JSON:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim, "hotpluggable": True}}


def _vmi(cluster: Cluster) -> JSON:
    return cluster.api.get(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VMI)


def _statuses(cluster: Cluster) -> dict[str, JSON]:
    return {e["name"]: e for e in _vmi(cluster)["status"].get("volumeStatus") or []}


def _launcher(cluster: Cluster) -> JSON:
    (pod,) = [
        p
        for p in cluster.api.find(PODS, NAMESPACE)
        if p["metadata"]["labels"]["kubevirt.io"] == "virt-launcher"
    ]
    return pod


def _attachment_pods(cluster: Cluster) -> list[JSON]:
    return [
        p
        for p in cluster.api.find(PODS, NAMESPACE)
        if p["metadata"]["labels"]["kubevirt.io"] == "hotplug-disk"
    ]


def _claims_of(pod: JSON) -> list[str]:
    return [v["name"] for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v]


def _running(
    cluster: Cluster, *pvcs: JSON, volumes: tuple[JSON, ...] = (), selinux: str | None = "none"
) -> Controllers:
    """A Running VMI with ``volumes`` (hotplugged ones among them) whose launcher pod runs on node01;
    virt-handler wrote its SELinux context (``none``: a host without SELinux)."""
    for pvc in pvcs:
        cluster.api.put(PERSISTENT_VOLUME_CLAIMS, pvc)
    controllers = Controllers(cluster)
    manifest = vmi_manifest(VMI)
    manifest["spec"]["volumes"] = [{"name": "boot", "containerDisk": {"image": "cirros"}}, *volumes]
    manifest["spec"]["domain"]["devices"]["disks"] = [
        {"name": v["name"], "disk": {}} for v in manifest["spec"]["volumes"]
    ]
    cluster.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, manifest)
    controllers.run(only=("vmi",))
    schedule_pod(cluster, pod_name(_launcher(cluster)))
    controllers.run(only=("vmi",))
    extra = {"selinuxContext": selinux} if selinux is not None else {}
    set_vmi_phase(cluster, VMI, "Running", **extra)
    controllers.run(only=("vmi",))
    return controllers


def _edit_vmi(cluster: Cluster, controllers: Controllers, change: Any) -> None:
    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VMI, change)
    controllers.run(only=("vmi",))


def _plug(cluster: Cluster, controllers: Controllers, volume: JSON) -> None:
    """virt-api's addvolume: the volume and its disk join the VMI's spec."""

    def add(vmi: JSON) -> None:
        vmi["spec"].setdefault("volumes", []).append(volume)
        disks = vmi["spec"]["domain"]["devices"].setdefault("disks", [])
        disks.append({"name": volume["name"], "disk": {"bus": "scsi"}})

    _edit_vmi(cluster, controllers, add)


def _unplug(cluster: Cluster, controllers: Controllers, name: str) -> None:
    def remove(vmi: JSON) -> None:
        vmi["spec"]["volumes"] = [v for v in vmi["spec"]["volumes"] if v["name"] != name]
        disks = vmi["spec"]["domain"]["devices"]["disks"]
        vmi["spec"]["domain"]["devices"]["disks"] = [d for d in disks if d["name"] != name]

    _edit_vmi(cluster, controllers, remove)


def _handler_sets_phase(cluster: Cluster, controllers: Controllers, name: str, phase: str) -> None:
    """virt-handler reports a phase of its own for a hotplugged volume."""

    def change(vmi: JSON) -> None:
        for entry in vmi["status"]["volumeStatus"]:
            if entry["name"] == name:
                entry.update(phase=phase, reason="", message="")

    _edit_vmi(cluster, controllers, change)


def _start_attachment(cluster: Cluster, controllers: Controllers, pod: JSON) -> None:
    """The scheduler binds the attachment pod to its node and the kubelet starts its container."""

    def run(p: JSON) -> None:
        p["spec"]["nodeName"] = "node01"
        p["status"] = {
            "phase": "Running",
            "containerStatuses": [{"name": "hotplug-disk", "ready": True, "state": {"running": {}}}],
        }

    cluster.api.edit(PODS, NAMESPACE, pod_name(pod), run)
    controllers.run(only=("vmi",))


# -- one volume plugged in -------------------------------------------------------------------------------


def test_a_hotplugged_claim_gets_an_attachment_pod_on_the_launchers_node() -> None:
    cluster = Cluster()
    controllers = _running(cluster, _pvc("disk-h"))
    _plug(cluster, controllers, _hotplugged("extra", "disk-h"))
    assert controllers.errors == []
    (pod,) = _attachment_pods(cluster)
    launcher = _launcher(cluster)
    assert pod_name(pod).startswith("hp-volume-")
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod_name(launcher),
            "uid": launcher["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod["spec"]["containers"][0]["image"] == launcher["spec"]["containers"][0]["image"]
    assert pod["spec"]["containers"][0]["volumeMounts"][1] == {"name": "extra", "mountPath": "/extra"}
    affinity = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert affinity["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["node01"]
    assert (
        f"{NAMESPACE}/{VMI}",
        "Normal",
        "SuccessfulCreate",
        f"Created attachment pod {pod_name(pod)}",
    ) in (controllers.events.recorded)
    # The pod's creation was seen (through its launcher pod) and the next pass named it.
    entry = _statuses(cluster)["extra"]
    assert entry["phase"] == "AttachedToNode"
    assert entry["reason"] == "SuccessfulCreate"
    assert entry["message"] == f"Created hotplug attachment pod {pod_name(pod)}, for volume extra"
    assert entry["hotplugVolume"] == {"attachPodName": pod_name(pod)}  # no UID until its container is ready
    assert "SuccessfulCreate" in [
        r for _, _, r, m in controllers.events.recorded if m.startswith("Created hotplug")
    ]

    _start_attachment(cluster, controllers, pod)
    entry = _statuses(cluster)["extra"]
    assert entry["hotplugVolume"] == {"attachPodName": pod_name(pod), "attachPodUID": pod["metadata"]["uid"]}
    assert entry["phase"] == "AttachedToNode"


def test_a_block_claim_is_a_device_under_its_claims_uid() -> None:
    cluster = Cluster()
    controllers = _running(cluster, _pvc("disk-b", mode="Block"))
    _plug(cluster, controllers, _hotplugged("raw", "disk-b"))
    (pod,) = _attachment_pods(cluster)
    uid = cluster.api.get(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, "disk-b")["metadata"]["uid"]
    container = pod["spec"]["containers"][0]
    assert container["volumeDevices"] == [{"name": "raw", "devicePath": f"/path/raw/{uid}"}]
    assert [m["name"] for m in container["volumeMounts"]] == ["hotplug-disks"]


def test_an_unbound_claim_is_attached_all_the_same() -> None:
    """The attachment pod is the consumer a WaitForFirstConsumer class waits for."""
    cluster = Cluster()
    controllers = _running(cluster, _pvc("disk-h", phase="Pending"))
    _plug(cluster, controllers, _hotplugged("extra", "disk-h"))
    assert len(_attachment_pods(cluster)) == 1
    assert _statuses(cluster)["extra"]["phase"] == "AttachedToNode"


def test_the_phases_virt_handler_owns_are_left_alone() -> None:
    cluster = Cluster()
    controllers = _running(cluster, _pvc("disk-h"))
    _plug(cluster, controllers, _hotplugged("extra", "disk-h"))
    (pod,) = _attachment_pods(cluster)
    _start_attachment(cluster, controllers, pod)
    for phase in ("MountedToPod", "Ready"):
        _handler_sets_phase(cluster, controllers, "extra", phase)
        entry = _statuses(cluster)["extra"]
        assert entry["phase"] == phase
        assert entry["hotplugVolume"]["attachPodUID"] == pod["metadata"]["uid"]
    assert len(_attachment_pods(cluster)) == 1
    assert controllers.errors == []


def test_without_virt_handlers_selinux_context_no_pod_is_made() -> None:
    cluster = Cluster()
    controllers = _running(cluster, _pvc("disk-h"), selinux=None)
    _plug(cluster, controllers, _hotplugged("extra", "disk-h"))
    assert _attachment_pods(cluster) == []
    assert controllers.errors == []
    entry = _statuses(cluster)["extra"]
    assert (entry["phase"], entry["reason"], entry["message"]) == (
        "Bound",
        "PVCNotReady",
        "PVC is in phase Bound",
    )
    # Once virt-handler writes it, the pod follows.
    _edit_vmi(cluster, controllers, lambda vmi: vmi["status"].update(selinuxContext="none"))
    assert len(_attachment_pods(cluster)) == 1


def test_a_missing_claim_holds_the_pod_back_and_is_retried() -> None:
    cluster = Cluster()
    controllers = _running(cluster)
    _plug(cluster, controllers, _hotplugged("extra", "disk-late"))
    assert _attachment_pods(cluster) == []
    assert controllers.errors
    assert {(name, key, type(err)) for name, key, err in controllers.errors} == {("vmi", KEY, SyncError)}
    assert {(err.reason, err.message) for _, _, err in controllers.errors if isinstance(err, SyncError)} == {
        ("PVCNotReady", "Error determining volume status didn't find PVC disk-late")
    }
    entry = _statuses(cluster)["extra"]
    assert (entry["phase"], entry["reason"], entry["message"]) == (
        "Pending",
        "FailedPvcNotFound",
        "PVC disk-late not found",
    )
    controllers.errors.clear()
    cluster.api.put(PERSISTENT_VOLUME_CLAIMS, _pvc("disk-late"))
    controllers.run(only=("vmi",))  # the claim's add event queues the VMI
    assert controllers.errors == []
    assert len(_attachment_pods(cluster)) == 1


# -- the set changes ---------------------------------------------------------------------------------------


def test_a_second_volume_gets_a_new_pod_that_replaces_the_old_once_running() -> None:
    cluster = Cluster()
    controllers = _running(cluster, _pvc("disk-1"), _pvc("disk-2"))
    _plug(cluster, controllers, _hotplugged("one", "disk-1"))
    (first,) = _attachment_pods(cluster)
    _start_attachment(cluster, controllers, first)
    _handler_sets_phase(cluster, controllers, "one", "Ready")

    _plug(cluster, controllers, _hotplugged("two", "disk-2"))
    pods = {pod_name(p): p for p in _attachment_pods(cluster)}
    assert len(pods) == 2  # the running old pod stays until the new one runs
    (second,) = [p for name, p in pods.items() if name != pod_name(first)]
    assert _claims_of(second) == ["one", "two"]
    # The Ready volume is not mounted again by the new pod; the new one is.
    assert [m["name"] for m in second["spec"]["containers"][0]["volumeMounts"]] == ["hotplug-disks", "two"]
    statuses = _statuses(cluster)
    assert statuses["one"]["phase"] == "Ready"
    assert statuses["one"]["hotplugVolume"] == {"attachPodName": pod_name(second)}
    assert statuses["two"]["phase"] == "AttachedToNode"

    _start_attachment(cluster, controllers, second)
    assert [pod_name(p) for p in _attachment_pods(cluster)] == [pod_name(second)]
    assert ("delete", "pods", None) in cluster.api.writes
    assert _statuses(cluster)["one"]["hotplugVolume"]["attachPodUID"] == second["metadata"]["uid"]


def test_an_unplugged_volume_keeps_its_pod_and_entry_until_virt_handler_unmounts_it() -> None:
    cluster = Cluster()
    controllers = _running(cluster, _pvc("disk-h"))
    _plug(cluster, controllers, _hotplugged("extra", "disk-h"))
    (pod,) = _attachment_pods(cluster)
    _start_attachment(cluster, controllers, pod)
    _handler_sets_phase(cluster, controllers, "extra", "Ready")
    # Something else holds the pod, so its deletion is seen while it is still there.
    cluster.api.edit(PODS, NAMESPACE, pod_name(pod), lambda p: p["metadata"].update(finalizers=["test/hold"]))

    _unplug(cluster, controllers, "extra")
    assert len(_attachment_pods(cluster)) == 1  # in use in the launcher pod
    entry = _statuses(cluster)["extra"]
    assert entry["phase"] == "Ready"
    assert entry["hotplugVolume"] == {"attachPodName": pod_name(pod), "attachPodUID": pod["metadata"]["uid"]}

    _handler_sets_phase(cluster, controllers, "extra", "UnMountedFromPod")
    (going,) = _attachment_pods(cluster)
    assert going["metadata"].get("deletionTimestamp")
    entry = _statuses(cluster)["extra"]
    assert entry["phase"] == "Detaching"
    assert entry["reason"] == "SuccessfulDelete"
    assert entry["message"] == f"Deleted hotplug attachment pod {pod_name(pod)}, for volume extra"
    assert (
        KEY,
        "Normal",
        "SuccessfulDelete",
        f"Deleted attachment pod {pod_name(pod)}",
    ) in controllers.events.recorded

    cluster.api.remove(PODS, NAMESPACE, pod_name(pod))
    controllers.run(only=("vmi",))
    assert "extra" not in _statuses(cluster)
    assert controllers.errors == []


def test_a_volume_unplugged_before_it_was_mounted_goes_at_once() -> None:
    cluster = Cluster()
    controllers = _running(cluster, _pvc("disk-h"))
    _plug(cluster, controllers, _hotplugged("extra", "disk-h"))
    assert len(_attachment_pods(cluster)) == 1
    _unplug(cluster, controllers, "extra")
    assert _attachment_pods(cluster) == []
    assert "extra" not in _statuses(cluster)


def test_a_finished_vmi_loses_its_attachment_pods() -> None:
    cluster = Cluster()
    controllers = _running(cluster, _pvc("disk-h"))
    cluster.api.edit(
        VIRTUAL_MACHINE_INSTANCES,
        NAMESPACE,
        VMI,
        lambda vmi: (
            vmi["metadata"]
            .setdefault("annotations", {})
            .update({"kubevirt.io/keep-launcher-alive-after-failure": "true"})
        ),
    )
    _plug(cluster, controllers, _hotplugged("extra", "disk-h"))
    assert len(_attachment_pods(cluster)) == 1
    set_vmi_phase(cluster, VMI, "Failed")
    controllers.run(only=("vmi",))
    assert _attachment_pods(cluster) == []
    assert len(cluster.api.find(PODS, NAMESPACE)) == 1  # the launcher is kept, as asked


def test_the_attachment_pods_of_a_finished_launcher_are_deleted() -> None:
    cluster = Cluster()
    controllers = _running(cluster, _pvc("disk-h"))
    _plug(cluster, controllers, _hotplugged("extra", "disk-h"))
    (pod,) = _attachment_pods(cluster)
    # A second launcher of the VMI on another node (a finished migration source, say) that has finished.
    launcher = _launcher(cluster)
    old = {
        **launcher,
        "metadata": {**launcher["metadata"], "name": "virt-launcher-old", "uid": "old-launcher"},
        "spec": {**launcher["spec"], "nodeName": "node02"},
        "status": {"phase": "Succeeded"},
    }
    cluster.api.put(PODS, old)
    orphan = {
        **pod,
        "metadata": {
            **pod["metadata"],
            "name": "hp-volume-orphan",
            "uid": "orphan-uid",
            "ownerReferences": [
                {**pod["metadata"]["ownerReferences"][0], "name": "virt-launcher-old", "uid": "old-launcher"}
            ],
        },
    }
    cluster.api.put(PODS, orphan)
    controllers.run(only=("vmi",))
    assert [pod_name(p) for p in _attachment_pods(cluster)] == [pod_name(pod)]


# -- the ephemeral-hotplug annotation ----------------------------------------------------------------------


def test_a_vm_owned_vmi_lists_the_hotplugged_volumes_its_vm_lacks() -> None:
    cluster = Cluster()
    cluster.api.put(PERSISTENT_VOLUME_CLAIMS, _pvc("disk-h"))
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm_manifest(VMI, runStrategy="Always"))
    controllers.run()
    schedule_pod(cluster, pod_name(_launcher(cluster)))
    controllers.run()
    set_vmi_phase(cluster, VMI, "Running", selinuxContext="none")
    controllers.run()
    _plug(cluster, controllers, _hotplugged("extra", "disk-h"))
    annotations = _vmi(cluster)["metadata"]["annotations"]
    assert annotations["kubevirt.io/ephemeral-hotplug-volumes"] == '["extra"]'

    def persist(vm: JSON) -> None:
        spec = vm["spec"]["template"]["spec"]
        spec["volumes"] = [_hotplugged("extra", "disk-h")]
        spec["domain"]["devices"]["disks"] = [{"name": "extra", "disk": {"bus": "scsi"}}]

    cluster.api.edit(VIRTUAL_MACHINES, NAMESPACE, VMI, persist)
    controllers.run(only=("vmi",))  # the VM's volume change queues its VMI
    assert "kubevirt.io/ephemeral-hotplug-volumes" not in _vmi(cluster)["metadata"]["annotations"]


# -- the pieces --------------------------------------------------------------------------------------------


def _volume(name: str) -> Volume:
    return Volume.from_dict(_hotplugged(name, f"claim-{name}"))


def _pod(name: str, volumes: list[str], *, created: str = "2026-01-01T12:00:00Z", **status: Any) -> JSON:
    pod: JSON = {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
        },
        "spec": {
            "volumes": [
                {"name": "hotplug-disks", "emptyDir": {}},
                *({"name": v, "persistentVolumeClaim": {"claimName": f"claim-{v}"}} for v in volumes),
                {"name": "kube-api-access-x", "projected": {}},
            ]
        },
        "status": status,
    }
    return pod


def test_a_pod_carries_exactly_its_claims_whatever_else_it_mounts() -> None:
    pod = _pod("p", ["a", "b"])
    assert carries_exactly(pod, [_volume("a"), _volume("b")])
    assert not carries_exactly(pod, [_volume("a")])
    assert not carries_exactly(pod, [_volume("a"), _volume("b"), _volume("c")])
    without_token = {**pod, "spec": {"volumes": pod["spec"]["volumes"][:-1]}}
    assert carries_exactly(without_token, [_volume("a"), _volume("b")])


def test_the_active_pod_and_the_old_ones_newest_first() -> None:
    old_one = _pod("old1", ["a"], created="2026-01-01T12:00:00Z")
    old_two = _pod("old2", ["b"], created="2026-01-01T12:00:05Z")
    active = _pod("new", ["a", "b"])
    going = {
        **_pod("going", ["a", "b"]),
        "metadata": {**active["metadata"], "name": "going", "deletionTimestamp": "x"},
    }
    found, old = active_and_old([_volume("a"), _volume("b")], [old_one, going, old_two, active])
    assert found is active
    assert [p["metadata"]["name"] for p in old] == ["old2", "old1"]
    assert active_and_old([_volume("a"), _volume("b")], [going]) == (None, [])


@pytest.mark.parametrize(
    ("volumes", "pods", "expected"),
    [
        ([], [], False),
        (["a"], [], True),
        ([], [["a"]], True),
        (["a"], [["a"]], False),
        (["a", "b"], [["a"]], True),
        (["a"], [["a"], ["a"]], True),
    ],
)
def test_when_the_pods_need_handling(volumes: list[str], pods: list[list[str]], expected: bool) -> None:
    built = [_pod(f"p{i}", v) for i, v in enumerate(pods)]
    assert needs_handling([_volume(v) for v in volumes], built) is expected


def _manager(
    api: FakeApi, pods: Store[Any], pvcs: dict[str, JSON], dvs: dict[str, JSON] | None
) -> AttachmentPods:
    def render(volumes: Any, owner: Any, vmi: Any, claims: Any) -> JSON:
        return {
            "metadata": {"generateName": "hp-volume-", "labels": {"kubevirt.io": "hotplug-disk"}},
            "spec": {"claims": sorted(claims)},
        }

    return AttachmentPods(
        api=api,
        events=FakeEvents(),
        pods=pods,
        expectations=UIDTrackingControllerExpectations(),
        render=render,
        find_pvc=lambda _ns, name: pvcs.get(name),
        find_data_volume=(lambda _ns, name: dvs.get(name)) if dvs is not None else None,
    )


def _running_vmi(*volumes: JSON) -> VirtualMachineInstance:
    manifest = vmi_manifest(VMI)
    manifest["metadata"]["uid"] = "vmi-uid"
    manifest["spec"]["volumes"] = list(volumes)
    manifest["status"] = {"phase": "Running", "selinuxContext": "none"}
    return VirtualMachineInstance.from_dict(manifest)


_LAUNCHER: JSON = {
    "metadata": {"name": "virt-launcher-x", "namespace": NAMESPACE, "uid": "launcher-uid"},
    "spec": {"nodeName": "node01", "volumes": []},
    "status": {"phase": "Running"},
}
_DV_OWNER: JSON = {
    "apiVersion": "cdi.kubevirt.io/v1beta1",
    "kind": "DataVolume",
    "name": "dv",
    "uid": "dv-uid",
    "controller": True,
}


@pytest.mark.parametrize(
    ("dv_phase", "created"),
    [
        ("Succeeded", True),
        ("PendingPopulation", True),
        ("ImportInProgress", False),
        ("WaitForFirstConsumer", False),
    ],
)
def test_a_data_volumes_claim_is_attached_once_populated(dv_phase: str, created: bool) -> None:
    api = FakeApi()
    manager = _manager(
        api, Store(), {"dv": _pvc("dv", owner=_DV_OWNER)}, {"dv": {"status": {"phase": dv_phase}}}
    )
    volume = {"name": "data", "dataVolume": {"name": "dv", "hotpluggable": True}}
    manager.sync(_running_vmi(volume), _LAUNCHER, KEY)
    assert len(api.find(PODS, NAMESPACE)) == (1 if created else 0)


def test_a_data_volumes_claim_without_cdis_informer_is_an_error() -> None:
    manager = _manager(FakeApi(), Store(), {"dv": _pvc("dv", owner=_DV_OWNER)}, None)
    volume = {"name": "data", "dataVolume": {"name": "dv", "hotpluggable": True}}
    with pytest.raises(SyncError) as raised:
        manager.sync(_running_vmi(volume), _LAUNCHER, KEY)
    assert raised.value.message == f"Error determining volume status unable to find datavolume {NAMESPACE}/dv"
    assert raised.value.reason == "PVCNotReady"


def test_a_new_pod_waits_while_an_old_one_is_still_pending() -> None:
    api = FakeApi()
    pods: Store[Any] = Store()
    pending = _pod("old", ["a"])
    pending["metadata"]["ownerReferences"] = [
        {"kind": "Pod", "name": "virt-launcher-x", "uid": "launcher-uid", "controller": True}
    ]
    pending["status"] = {"phase": "Pending"}
    pods.upsert(pending)
    manager = _manager(api, pods, {"claim-a": _pvc("claim-a"), "claim-b": _pvc("claim-b")}, None)
    manager.sync(_running_vmi(_hotplugged("a", "claim-a"), _hotplugged("b", "claim-b")), _LAUNCHER, KEY)
    assert api.find(PODS, NAMESPACE) == []
    assert key_for(NAMESPACE, "old") in [key_for(NAMESPACE, p["metadata"]["name"]) for p in pods.list()]
