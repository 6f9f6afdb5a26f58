"""``status.volumeStatus`` from the VMI controller, as KubeVirt's ``updateVolumeStatus`` writes it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS, VIRTUAL_MACHINE_INSTANCES
from kubevirt.virt_controller.watch.common import SyncError
from kubevirt.virt_controller.watch.pods import pod_name
from kubevirt.virt_controller.watch.volumestatus import (
    DEFAULT_FS_OVERHEAD,
    FilesystemOverhead,
    is_preallocated,
)

from .fakes import JSON, Cluster
from .harness import NAMESPACE, Controllers, schedule_pod, vmi_manifest

VMI = "testvmi"


def _pvc(
    name: str,
    *,
    mode: str = "Filesystem",
    access: tuple[str, ...] = ("ReadWriteOnce",),
    size: str = "10Gi",
    annotations: dict[str, str] | None = None,
    storage_class: str | None = "local",
) -> JSON:
    spec: JSON = {
        "accessModes": list(access),
        "volumeMode": mode,
        "resources": {"requests": {"storage": size}},
        "volumeName": f"pv-{name}",
    }
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": annotations or {}},
        "spec": spec,
        "status": {"phase": "Bound", "accessModes": list(access), "capacity": {"storage": size}},
    }


def _vmi_with(*volumes: JSON) -> JSON:
    vmi = vmi_manifest(VMI)
    vmi["spec"]["domain"]["devices"]["disks"] = [
        {"name": v["name"], "disk": {"bus": "virtio"}} for v in volumes if "cloudInitNoCloud" not in v
    ]
    vmi["spec"]["volumes"] = list(volumes)
    return vmi


def _claim(name: str, claim: str, **extra: Any) -> JSON:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim, **extra}}


def _container_disk(name: str) -> JSON:
    return {"name": name, "containerDisk": {"image": "quay.io/kubevirt/cirros-container-disk-demo"}}


def _vmi(cluster: Cluster) -> JSON:
    return cluster.api.get(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VMI)


def _launcher(cluster: Cluster) -> str:
    return pod_name(cluster.api.find(PODS, NAMESPACE)[0])


def _vmi_writes(cluster: Cluster) -> list[tuple[str, str, str | None]]:
    return [w for w in cluster.api.writes if w[1] == VIRTUAL_MACHINE_INSTANCES.plural]


def _scheduled(cluster: Cluster, vmi: JSON, *pvcs: JSON) -> Controllers:
    """The VMI created with its claims present, its launcher pod scheduled and started: Scheduled."""
    for pvc in pvcs:
        cluster.api.put(PERSISTENT_VOLUME_CLAIMS, pvc)
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, vmi)
    controllers.run(only=("vmi",))
    assert _vmi(cluster)["status"]["phase"] == "Scheduling"
    assert "volumeStatus" not in _vmi(cluster)["status"]  # written with the hand-over, not before
    schedule_pod(cluster, _launcher(cluster))
    controllers.run(only=("vmi",))
    assert controllers.errors == []
    assert _vmi(cluster)["status"]["phase"] == "Scheduled"
    return controllers


def _running(cluster: Cluster, controllers: Controllers, targets: dict[str, str]) -> None:
    """virt-handler reports Running and fills each volume's target from the domain."""

    def change(vmi: JSON) -> None:
        vmi["status"]["phase"] = "Running"
        for entry in vmi["status"].get("volumeStatus") or []:
            entry["target"] = targets.get(entry["name"], "")

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VMI, change)
    controllers.run(only=("vmi",))
    assert controllers.errors == []


def test_a_filesystem_rwo_claim_is_described_with_the_scheduled_write() -> None:
    cluster = Cluster()
    vmi = _vmi_with(_claim("rootdisk", "disk-a"), _container_disk("boot"))
    for pvc in [_pvc("disk-a", size="10Gi")]:
        cluster.api.put(PERSISTENT_VOLUME_CLAIMS, pvc)
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, vmi)
    cluster.api.writes.clear()
    controllers.run(only=("vmi",))
    schedule_pod(cluster, _launcher(cluster))
    controllers.run(only=("vmi",))
    status = _vmi(cluster)["status"]
    assert status["phase"] == "Scheduled"
    # Every volume has an entry, sorted by name; only the claim's has persistentVolumeClaimInfo.
    assert status["volumeStatus"] == [
        {"name": "boot", "target": ""},
        {
            "name": "rootdisk",
            "target": "",
            "persistentVolumeClaimInfo": {
                "claimName": "disk-a",
                "accessModes": ["ReadWriteOnce"],
                "volumeMode": "Filesystem",
                "capacity": {"storage": "10Gi"},
                "requests": {"storage": "10Gi"},
                "filesystemOverhead": "0.055",
            },
        },
    ]
    # It rides with the Scheduled update: still one write for Scheduling and one for Scheduled.
    assert _vmi_writes(cluster) == [("update", "virtualmachineinstances", None)] * 2


def test_a_block_rwx_claim_reports_its_mode_and_access() -> None:
    cluster = Cluster()
    _scheduled(
        cluster,
        _vmi_with(_claim("shared", "disk-b")),
        _pvc("disk-b", mode="Block", access=("ReadWriteMany",), size="2Gi"),
    )
    (entry,) = _vmi(cluster)["status"]["volumeStatus"]
    assert entry == {
        "name": "shared",
        "target": "",
        "persistentVolumeClaimInfo": {
            "claimName": "disk-b",
            "accessModes": ["ReadWriteMany"],
            "volumeMode": "Block",
            "capacity": {"storage": "2Gi"},
            "requests": {"storage": "2Gi"},
            # Without CDI KubeVirt takes its default for every claim, block ones included.
            "filesystemOverhead": "0.055",
        },
    }


def test_a_data_volume_is_described_by_the_claim_of_its_name() -> None:
    cluster = Cluster()
    _scheduled(
        cluster,
        _vmi_with({"name": "dv-disk", "dataVolume": {"name": "fedora-dv"}}),
        _pvc("fedora-dv", size="5Gi"),
    )
    (entry,) = _vmi(cluster)["status"]["volumeStatus"]
    assert entry["name"] == "dv-disk"
    assert entry["persistentVolumeClaimInfo"]["claimName"] == "fedora-dv"
    assert entry["persistentVolumeClaimInfo"]["capacity"] == {"storage": "5Gi"}
    assert "hotplugVolume" not in entry


@pytest.mark.parametrize(
    "annotation",
    ["cdi.kubevirt.io/storage.preallocation", "cdi.kubevirt.io/storage.thick-provisioned"],
)
def test_a_preallocated_claim_is_marked(annotation: str) -> None:
    cluster = Cluster()
    _scheduled(
        cluster,
        _vmi_with(_claim("a", "disk-a"), _claim("b", "disk-b")),
        _pvc("disk-a", annotations={annotation: "true"}),
        _pvc("disk-b", annotations={annotation: "false"}),
    )
    entries = {e["name"]: e for e in _vmi(cluster)["status"]["volumeStatus"]}
    assert entries["a"]["persistentVolumeClaimInfo"]["preallocated"] is True
    assert "preallocated" not in entries["b"]["persistentVolumeClaimInfo"]  # false is omitted, as in Go


def test_is_preallocated_matches_any_prefix_and_only_true() -> None:
    assert is_preallocated({"example.com/storage.preallocation": "true"})
    assert not is_preallocated({"cdi.kubevirt.io/storage.preallocation": "True"})
    assert not is_preallocated(None)


def test_a_claim_missing_from_the_cache_gets_an_entry_without_claim_info() -> None:
    cluster = Cluster()
    cluster.api.put(PERSISTENT_VOLUME_CLAIMS, _pvc("disk-a"))
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, _vmi_with(_claim("rootdisk", "disk-a")))
    controllers.run(only=("vmi",))
    # The claim goes away after the pod was made, before it runs.
    cluster.api.remove(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, "disk-a")
    schedule_pod(cluster, _launcher(cluster))
    controllers.run(only=("vmi",))
    assert controllers.errors == []
    status = _vmi(cluster)["status"]
    assert status["phase"] == "Scheduled"
    assert status["volumeStatus"] == [{"name": "rootdisk", "target": ""}]


def test_a_claim_that_leaves_the_cache_keeps_the_info_it_had() -> None:
    cluster = Cluster()
    controllers = _scheduled(cluster, _vmi_with(_claim("rootdisk", "disk-a")), _pvc("disk-a"))
    _running(cluster, controllers, {"rootdisk": "vda"})
    before = _vmi(cluster)["status"]["volumeStatus"]
    cluster.api.remove(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, "disk-a")
    cluster.api.writes.clear()
    controllers.queues["vmi"].add(f"{NAMESPACE}/{VMI}")
    controllers.run(only=("vmi",))
    assert _vmi(cluster)["status"]["volumeStatus"] == before
    assert _vmi_writes(cluster) == []


def test_an_expanded_claim_updates_the_running_vmi_and_keeps_the_target() -> None:
    cluster = Cluster()
    controllers = _scheduled(cluster, _vmi_with(_claim("rootdisk", "disk-a")), _pvc("disk-a", size="10Gi"))
    _running(cluster, controllers, {"rootdisk": "vda"})
    cluster.api.writes.clear()

    def expand(pvc: JSON) -> None:
        pvc["spec"]["resources"]["requests"]["storage"] = "20Gi"
        pvc["status"]["capacity"]["storage"] = "20Gi"

    cluster.api.edit(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, "disk-a", expand)
    controllers.run(only=("vmi",))  # the claim's update event queues the VMI
    assert controllers.errors == []
    assert _vmi_writes(cluster) == [("patch", "virtualmachineinstances", None)]
    (entry,) = _vmi(cluster)["status"]["volumeStatus"]
    assert entry["target"] == "vda"  # virt-handler's, carried over
    assert entry["persistentVolumeClaimInfo"]["capacity"] == {"storage": "20Gi"}
    assert entry["persistentVolumeClaimInfo"]["requests"] == {"storage": "20Gi"}


def test_only_a_size_change_of_a_claim_wakes_a_running_vmi() -> None:
    cluster = Cluster()
    controllers = _scheduled(cluster, _vmi_with(_claim("rootdisk", "disk-a")), _pvc("disk-a"))
    _running(cluster, controllers, {"rootdisk": "vda"})

    def relabel(pvc: JSON) -> None:
        pvc["metadata"]["labels"] = {"team": "storage"}

    cluster.api.edit(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, "disk-a", relabel)
    cluster.sync()
    assert controllers.queues["vmi"].keys == []


def test_nothing_is_written_when_the_volume_status_did_not_change() -> None:
    cluster = Cluster()
    controllers = _scheduled(
        cluster,
        _vmi_with(_claim("rootdisk", "disk-a"), _container_disk("boot")),
        _pvc("disk-a", annotations={"cdi.kubevirt.io/storage.preallocation": "true"}),
    )
    _running(cluster, controllers, {"rootdisk": "vda", "boot": "vdb"})
    before = _vmi(cluster)
    cluster.api.writes.clear()
    for _ in range(2):
        controllers.queues["vmi"].add(f"{NAMESPACE}/{VMI}")
        controllers.run(only=("vmi",))
    assert controllers.errors == []
    assert _vmi_writes(cluster) == []
    assert _vmi(cluster)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_entries_of_volumes_no_longer_in_the_spec_are_dropped() -> None:
    cluster = Cluster()
    controllers = _scheduled(cluster, _vmi_with(_claim("rootdisk", "disk-a")), _pvc("disk-a"))

    def stale(vmi: JSON) -> None:
        vmi["status"]["phase"] = "Running"
        vmi["status"]["volumeStatus"] = [
            *vmi["status"]["volumeStatus"],
            {"name": "zz-gone", "target": "vdz", "phase": "Ready"},
        ]

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VMI, stale)
    controllers.run(only=("vmi",))
    assert [e["name"] for e in _vmi(cluster)["status"]["volumeStatus"]] == ["rootdisk"]


def test_a_hotpluggable_claim_not_in_the_pod_gets_the_claims_phase() -> None:
    cluster = Cluster()
    _scheduled(
        cluster,
        _vmi_with(_claim("rootdisk", "disk-a"), _claim("extra", "disk-h", hotpluggable=True)),
        _pvc("disk-a"),
        _pvc("disk-h", size="1Gi"),
    )
    entries = {e["name"]: e for e in _vmi(cluster)["status"]["volumeStatus"]}
    assert "hotplugVolume" not in entries["rootdisk"]
    extra = entries["extra"]
    assert extra["hotplugVolume"] == {}
    assert (extra["phase"], extra["reason"], extra["message"]) == (
        "Bound",
        "PVCNotReady",
        "PVC is in phase Bound",
    )
    assert extra["persistentVolumeClaimInfo"]["claimName"] == "disk-h"


def test_the_running_patch_replaces_the_volume_status_under_a_version_test() -> None:
    cluster = Cluster()
    controllers = _scheduled(cluster, _vmi_with(_claim("rootdisk", "disk-a")), _pvc("disk-a"))
    _running(cluster, controllers, {"rootdisk": "vda"})
    seen: list[Any] = []
    original = cluster.api.patch

    def spy(*args: Any, **kwargs: Any) -> JSON:
        seen.append(copy.deepcopy(args[3]))
        return original(*args, **kwargs)

    cluster.api.patch = spy  # type: ignore[method-assign]
    cluster.api.edit(
        PERSISTENT_VOLUME_CLAIMS,
        NAMESPACE,
        "disk-a",
        lambda pvc: pvc["status"]["capacity"].update(storage="11Gi"),
    )
    controllers.run(only=("vmi",))
    vmi_patches = [ops for ops in seen if any(op["path"] == "/status/volumeStatus" for op in ops)]
    assert len(vmi_patches) == 1
    ops = vmi_patches[0]
    assert ops[0]["op"] == "test"
    assert ops[0]["path"] == "/metadata/resourceVersion"
    assert [op["path"] for op in ops[1:]] == ["/status/volumeStatus"]


# -- filesystem overhead with CDI installed ------------------------------------------------------------

_CDI_CONFIG: JSON = {
    "metadata": {"name": "config"},
    "status": {"filesystemOverhead": {"global": "0.06", "storageClass": {"fast": "0.1"}}},
}


def test_the_filesystem_overhead_follows_cdi_config_when_cdi_is_installed() -> None:
    overhead = FilesystemOverhead(cdis=lambda: [{"kind": "CDI"}], cdi_config=lambda _: _CDI_CONFIG)
    assert overhead(_pvc("a", storage_class="fast")) == "0.1"
    assert overhead(_pvc("a", storage_class="slow")) == "0.06"
    assert overhead(_pvc("a", storage_class=None)) == "0.06"
    assert overhead(_pvc("a", mode="Block", storage_class="fast")) == "0"


def test_without_exactly_one_cdi_the_default_overhead_is_used() -> None:
    assert FilesystemOverhead()(_pvc("a")) == DEFAULT_FS_OVERHEAD
    two = FilesystemOverhead(cdis=lambda: [{}, {}], cdi_config=lambda _: _CDI_CONFIG)
    assert two(_pvc("a", storage_class="fast")) == DEFAULT_FS_OVERHEAD


def test_cdi_without_its_config_fails_the_status_update() -> None:
    overhead = FilesystemOverhead(cdis=lambda: [{}], cdi_config=lambda _: None)
    with pytest.raises(SyncError):
        overhead(_pvc("a"))
    uninitialised = FilesystemOverhead(cdis=lambda: [{}], cdi_config=lambda _: {"status": {}})
    with pytest.raises(SyncError):
        uninitialised(_pvc("a"))
