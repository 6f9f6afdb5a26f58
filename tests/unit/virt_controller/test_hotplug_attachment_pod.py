"""The hotplug attachment pod as KubeVirt's ``RenderHotplugAttachmentPodTemplate`` renders it.

The two ``tests/testdata/hotplug/attachment-pod.*.json`` files are KubeVirt v1.6.6's own output for the
inputs below (launcher image ``localhost/kubevirt/virt-launcher:devel``, default configuration): three
hotplugged volumes (a block claim, a DataVolume's filesystem claim, and a filesystem claim whose volume is
``Ready`` already) with the SELinux context ``system_u:system_r:container_t:s0:c1,c2``, and the block
one alone on a host without SELinux (``none``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubevirt.virt_controller.services.hotplug_pod import (
    SELinuxContextError,
    hotplug_container_resources,
    render_hotplug_attachment_pod,
    selinux_level,
)
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.volumes import Volume

GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "hotplug"
IMAGE = "localhost/kubevirt/virt-launcher:devel"
OWNER: dict[str, Any] = {
    "metadata": {"name": "virt-launcher-testvmi-abcde", "namespace": "default", "uid": "launcher-uid"},
    "spec": {
        "nodeName": "node01",
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
    },
}
VOLUMES = [
    Volume.from_dict(v)
    for v in (
        {"name": "blk", "persistentVolumeClaim": {"claimName": "claim-blk", "hotpluggable": True}},
        {"name": "fs", "dataVolume": {"name": "dv-fs", "hotpluggable": True}},
        {"name": "fs-ready", "persistentVolumeClaim": {"claimName": "claim-ready", "hotpluggable": True}},
    )
]
CLAIMS: dict[str, Any] = {
    "blk": {"metadata": {"name": "claim-blk", "uid": "uid-blk"}, "spec": {"volumeMode": "Block"}},
    "fs": {"metadata": {"name": "dv-fs", "uid": "uid-fs"}, "spec": {"volumeMode": "Filesystem"}},
    "fs-ready": {"metadata": {"name": "claim-ready", "uid": "uid-ready"}},
}


def _vmi(**status: Any) -> VirtualMachineInstance:
    return VirtualMachineInstance.from_dict(
        {
            "metadata": {"name": "testvmi", "namespace": "default"},
            "spec": {"domain": {"devices": {}}},
            "status": {
                "volumeStatus": [{"name": "fs-ready", "target": "", "phase": "Ready", "hotplugVolume": {}}],
                **status,
            },
        }
    )


def _golden(name: str) -> dict[str, Any]:
    pod = json.loads((GOLDEN / name).read_text())
    # What Go's encoder adds for empty structs; the API server reads both the same.
    pod["metadata"].pop("creationTimestamp")
    pod.pop("status")
    return pod  # type: ignore[no-any-return]


def test_the_pod_is_kubevirts_for_block_and_filesystem_claims_under_selinux() -> None:
    vmi = _vmi(selinuxContext="system_u:system_r:container_t:s0:c1,c2")
    pod = render_hotplug_attachment_pod(VOLUMES, OWNER, vmi, CLAIMS, launcher_image=IMAGE)
    assert pod == _golden("attachment-pod.selinux.json")


def test_the_pod_is_kubevirts_on_a_host_without_selinux() -> None:
    pod = render_hotplug_attachment_pod(
        VOLUMES[:1], OWNER, _vmi(selinuxContext="none"), CLAIMS, launcher_image=IMAGE
    )
    assert pod == _golden("attachment-pod.no-selinux.json")


def test_a_volume_without_its_claim_gets_a_pod_volume_but_no_mount() -> None:
    pod = render_hotplug_attachment_pod(
        VOLUMES[1:2], OWNER, _vmi(selinuxContext="none"), {}, launcher_image=IMAGE
    )
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["hotplug-disks", "fs"]
    (container,) = pod["spec"]["containers"]
    assert [m["name"] for m in container["volumeMounts"]] == ["hotplug-disks"]
    assert "volumeDevices" not in container


def test_an_owner_without_tolerations_gives_none_and_the_launcher_type_is_set() -> None:
    owner = {"metadata": OWNER["metadata"], "spec": {"nodeName": "node02"}}
    pod = render_hotplug_attachment_pod(
        VOLUMES[:1],
        owner,
        _vmi(selinuxContext="none"),
        CLAIMS,
        launcher_image=IMAGE,
        selinux_launcher_type="virt_launcher.process",
        resources=hotplug_container_resources(limits={"memory": "100M"}),
    )
    assert "tolerations" not in pod["spec"]
    term = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["node02"]
    container = pod["spec"]["containers"][0]
    assert container["securityContext"]["seLinuxOptions"] == {"type": "virt_launcher.process", "level": "s0"}
    assert container["resources"] == {
        "limits": {"cpu": "100m", "memory": "100M"},
        "requests": {"cpu": "10m", "memory": "2M"},
    }


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"selinuxContext": "system_u:object_r:container_file_t:s0:c5,c6"}, "s0:c5,c6"),
        ({"selinuxContext": "a:b:c:s0:c1:extra"}, "s0:c1:extra"),
        ({"selinuxContext": "none"}, None),
        # A migration target has no context of its own yet: its source's is used.
        ({"migrationState": {"sourceState": {"selinuxContext": "u:r:t:s0:c7,c8"}}}, "s0:c7,c8"),
        ({"migrationState": {"sourceState": {"selinuxContext": "none"}}}, None),
    ],
)
def test_the_selinux_level_follows_the_vmis_context(status: dict[str, Any], expected: str | None) -> None:
    vmi = VirtualMachineInstance.from_dict(
        {"metadata": {"name": "v"}, "spec": {"domain": {"devices": {}}}, "status": status}
    )
    assert selinux_level(vmi) == expected


@pytest.mark.parametrize(
    ("status", "message"),
    [
        ({}, "VMI is missing SELinux context"),
        ({"selinuxContext": "bad:ctx"}, "VMI has invalid SELinux context: bad:ctx"),
    ],
)
def test_no_pod_without_a_usable_selinux_context(status: dict[str, Any], message: str) -> None:
    vmi = VirtualMachineInstance.from_dict(
        {"metadata": {"name": "v"}, "spec": {"domain": {"devices": {}}}, "status": status}
    )
    with pytest.raises(SELinuxContextError) as raised:
        render_hotplug_attachment_pod(VOLUMES[:1], OWNER, vmi, CLAIMS, launcher_image=IMAGE)
    assert str(raised.value) == message
