"""Volume hotplug in virt-controller against a real kube-apiserver: the VM controller's template patch for
a volume request, and the VMI controller's attachment pod (accepted by the API server's validation, with
the service-account token volume its admission adds) and the volume status that follows it.

There is no scheduler, kubelet, virt-api or virt-handler: the test plays them (the rendered launcher pod
names its node; virt-api's VMI subresource is a recorder; the pod statuses and the VMI's phase and SELinux
context are written by the test).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubevirt.client import (
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    EventRecorder,
    KubeClient,
)
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_testing.controller_threads import launcher_pod, vm_and_vmi_controllers
from kubevirt_testing.waiting import eventually

pytestmark = pytest.mark.timeout(120)

NODE = "hotplug-node"
IMAGE = "virt-launcher:test"


def render_pod(vmi: VirtualMachineInstance) -> dict[str, Any]:
    return launcher_pod(vmi, node=NODE, image=IMAGE)


@dataclass
class RecordedVolumes:
    """virt-api's VMI addvolume/removevolume, recorded only."""

    calls: list[tuple[str, str | None, str, dict[str, Any]]] = field(default_factory=list)

    def add_volume(self, namespace: str | None, name: str, options: Mapping[str, Any]) -> None:
        self.calls.append(("add", namespace, name, dict(options)))

    def remove_volume(self, namespace: str | None, name: str, options: Mapping[str, Any]) -> None:
        self.calls.append(("remove", namespace, name, dict(options)))


@pytest.fixture
def running(kube: KubeClient, namespace: str) -> Iterator[RecordedVolumes]:
    recorded = RecordedVolumes()
    events = EventRecorder(kube, "virt-controller", host="test")
    with vm_and_vmi_controllers(
        kube,
        namespace,
        api=kube,
        events=events,
        render_pod=render_pod,
        pod_selector="kubevirt.io",
        claims=True,
        vmi_volumes=recorded,
        launcher_image=IMAGE,
    ):
        try:
            yield recorded
        finally:
            events.stop()


def _pods(kube: KubeClient, namespace: str, app: str) -> list[dict[str, Any]]:
    return [
        p
        for p in kube.list(PODS, namespace, label_selector=f"kubevirt.io={app}")[0]
        if not p["metadata"].get("deletionTimestamp")
    ]


def _run_pod(kube: KubeClient, namespace: str, pod: Mapping[str, Any], container: str) -> None:
    status = {
        "phase": "Running",
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [
            {
                "name": container,
                "ready": True,
                "restartCount": 0,
                "image": IMAGE,
                "imageID": "",
                "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
            }
        ],
    }
    kube.patch(
        PODS, namespace, pod["metadata"]["name"], {"status": status}, patch_type="merge", subresource="status"
    )


def _entry(kube: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    vmi = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vmi1")
    return next((e for e in vmi.get("status", {}).get("volumeStatus") or [] if e["name"] == name), None)


def test_a_hotplugged_claim_gets_an_attachment_pod_the_api_server_accepts(
    kube: KubeClient, namespace: str, running: RecordedVolumes
) -> None:
    kube.create(
        PERSISTENT_VOLUME_CLAIMS,
        namespace,
        {
            "metadata": {"name": "disk-h"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "volumeMode": "Block",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    kube.create(
        VIRTUAL_MACHINE_INSTANCES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "metadata": {"name": "vmi1"},
            "spec": {"domain": {"devices": {}}},
        },
    )
    eventually(lambda: len(_pods(kube, namespace, "virt-launcher")) == 1)
    (launcher,) = _pods(kube, namespace, "virt-launcher")
    _run_pod(kube, namespace, launcher, "compute")
    eventually(
        lambda: (
            kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vmi1").get("status", {}).get("phase")
            == "Scheduled"
        )
    )
    # virt-handler: Running, on a host without SELinux. Then virt-api's addvolume.
    patch = [
        {"op": "replace", "path": "/status/phase", "value": "Running"},
        {"op": "add", "path": "/status/selinuxContext", "value": "none"},
        {
            "op": "add",
            "path": "/spec/volumes",
            "value": [
                {"name": "extra", "persistentVolumeClaim": {"claimName": "disk-h", "hotpluggable": True}}
            ],
        },
        {
            "op": "add",
            "path": "/spec/domain/devices/disks",
            "value": [{"name": "extra", "disk": {"bus": "scsi"}}],
        },
    ]
    kube.patch(VIRTUAL_MACHINE_INSTANCES, namespace, "vmi1", patch)

    eventually(lambda: len(_pods(kube, namespace, "hotplug-disk")) == 1)
    (attachment,) = _pods(kube, namespace, "hotplug-disk")
    assert attachment["metadata"]["name"].startswith("hp-volume-")
    assert attachment["metadata"]["ownerReferences"][0]["uid"] == launcher["metadata"]["uid"]
    pvc_uid = kube.get(PERSISTENT_VOLUME_CLAIMS, namespace, "disk-h")["metadata"]["uid"]
    assert attachment["spec"]["containers"][0]["volumeDevices"] == [
        {"name": "extra", "devicePath": f"/path/extra/{pvc_uid}"}
    ]
    # The API server added its token volume; the pod still counts as the one for this volume.
    assert len(attachment["spec"]["volumes"]) == 3
    eventually(lambda: (_entry(kube, namespace, "extra") or {}).get("phase") == "AttachedToNode")

    _run_pod(kube, namespace, attachment, "hotplug-disk")
    eventually(
        lambda: (
            (_entry(kube, namespace, "extra") or {}).get("hotplugVolume", {}).get("attachPodUID")
            == attachment["metadata"]["uid"]
        )
    )
    assert len(_pods(kube, namespace, "hotplug-disk")) == 1  # no second pod for the same set

    # virt-api's removevolume before virt-handler mounted it: the pod goes, then the entry.
    kube.patch(
        VIRTUAL_MACHINE_INSTANCES,
        namespace,
        "vmi1",
        [
            {"op": "replace", "path": "/spec/volumes", "value": []},
            {"op": "replace", "path": "/spec/domain/devices/disks", "value": []},
        ],
    )
    eventually(lambda: kube.list(PODS, namespace, label_selector="kubevirt.io=hotplug-disk")[0] == [])
    eventually(lambda: _entry(kube, namespace, "extra") is None)


def test_a_volume_request_is_written_into_the_vms_template(
    kube: KubeClient, namespace: str, running: RecordedVolumes
) -> None:
    kube.create(
        VIRTUAL_MACHINES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": "vm1"},
            "spec": {"runStrategy": "Halted", "template": {"spec": {"domain": {"devices": {}}}}},
        },
    )
    eventually(lambda: "printableStatus" in kube.get(VIRTUAL_MACHINES, namespace, "vm1").get("status", {}))
    options = {
        "name": "extra",
        "disk": {"name": "extra", "disk": {"bus": "virtio"}},
        "volumeSource": {"persistentVolumeClaim": {"claimName": "disk-h"}},
    }
    kube.patch(
        VIRTUAL_MACHINES,
        namespace,
        "vm1",
        [{"op": "add", "path": "/status/volumeRequests", "value": [{"addVolumeOptions": options}]}],
        subresource="status",
    )

    def template() -> dict[str, Any]:
        return kube.get(VIRTUAL_MACHINES, namespace, "vm1")["spec"]["template"]["spec"]  # type: ignore[no-any-return]

    eventually(lambda: "volumes" in template())
    assert template()["volumes"] == [
        {"name": "extra", "persistentVolumeClaim": {"claimName": "disk-h", "hotpluggable": True}}
    ]
    assert template()["domain"]["devices"]["disks"] == [{"name": "extra", "disk": {"bus": "virtio"}}]
    eventually(lambda: "volumeRequests" not in kube.get(VIRTUAL_MACHINES, namespace, "vm1")["status"])
    assert running.calls == []  # no VMI to hand it to
