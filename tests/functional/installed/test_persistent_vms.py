"""VMs whose disks are PersistentVolumeClaims on the local cluster's CSI storage, with booted guests: the
CirrOS-compatible guest boots from a claim filled from its containerDisk image (examples/), with a
filesystem claim (as a ``dataVolume`` volume naming it, which KubeVirt takes without CDI) and a block claim
as data disks. What the guest writes to each disk is there after a stop
and a start, and after the VM is deleted and a new VM boots from the same claims, which deleting the VM
left in place. Node-local ReadWriteOnce claims make the VMI not live-migratable, for KubeVirt's reason.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster.handle import Cluster
from localcluster.pvc_vms import (
    ROOT_CLAIM,
    DataDisk,
    bound_volume,
    claim,
    import_root_claim,
    pvc_root_vm,
    volume_path,
)
from localcluster.vmis import set_run_strategy, wait_vmi_phase

from kubevirt_testing.guest_console import Expecter, cirros_login, run
from kubevirt_testing.guest_disks import disk_bytes, guest_disk, read_marker, write_marker

DATA_SIZE = "64Mi"
MIB = 1 << 20
DISKS = (
    DataDisk("datafs", "data-fs", "DATAFS", data_volume=True),
    DataDisk("datablock", "data-block", "DATABLOCK"),
)
BLOCK_CLAIMS = {"data-block"}
MARKERS = {disk.serial: f"written-first-to-{disk.serial}" for disk in DISKS}
RUNNING_TIMEOUT = 240.0


@pytest.fixture(scope="module")
def storage_namespace(cluster: Cluster, kubevirt: float) -> Iterator[str]:
    with cluster.vm_namespace(f"ft-persistent-{os.getpid() % 10000}") as name:
        yield name


@pytest.fixture(scope="module")
def claims(cluster: Cluster, storage_namespace: str) -> None:
    """The root claim filled by the example's import Job, and the two empty data claims."""
    data = [claim(d.claim, DATA_SIZE, block=d.claim in BLOCK_CLAIMS) for d in DISKS]
    listed = {"kind": "List", "apiVersion": "v1", "items": data}
    cluster.kubectl("apply", "-n", storage_namespace, "-f", "-", stdin=json.dumps(listed))
    import_root_claim(cluster, storage_namespace)


def _running(
    cluster: Cluster, namespace: str, name: str, *, other_than_uid: str | None = None
) -> dict[str, Any]:
    try:
        return wait_vmi_phase(
            cluster, name, namespace, timeout=RUNNING_TIMEOUT, other_than_uid=other_than_uid
        )
    except AssertionError as error:
        handler = cluster.kubectl(
            "logs", "-n", "kubevirt", "-l", "kubevirt.io=virt-handler", "--tail=40", check=False
        )
        vmi = cluster.kubectl("get", "vmi", name, "-n", namespace, "-o", "json", check=False)
        raise AssertionError(f"{error}\n{handler.stdout[-4000:]}\n{vmi.stdout[-4000:]}") from error


def _device(expecter: Expecter, serial: str) -> str:
    """The guest's block device with ``serial`` (a virtio disk)."""
    found = guest_disk(expecter, serial)
    assert found.startswith("vd"), f"no single virtio disk with serial {serial}: {found!r}"
    return found


def _write_markers(expecter: Expecter) -> None:
    for disk in DISKS:
        write_marker(expecter, _device(expecter, disk.serial), MARKERS[disk.serial])


def _read_markers(expecter: Expecter) -> dict[str, str]:
    return {disk.serial: read_marker(expecter, _device(expecter, disk.serial)) for disk in DISKS}


def _what_the_guest_finds(cluster: Cluster, namespace: str, name: str) -> tuple[dict[str, str], int]:
    """The markers on the data disks and the boots recorded on the root disk, as the guest reads them."""
    expecter = cirros_login(str(cluster.kubeconfig), namespace, name)
    try:
        return _read_markers(expecter), _boots(expecter)
    finally:
        expecter.stream.close()


def _boots(expecter: Expecter) -> int:
    """The boots the guest's boot disk recorded (CirrOS's ``last``)."""
    return sum(1 for line in run(expecter, "last reboot").splitlines() if line.startswith("reboot"))


def test_a_vm_on_claims_keeps_its_data_across_a_restart_and_a_new_vm(
    cluster: Cluster, storage_namespace: str, claims: None
) -> None:
    namespace = storage_namespace
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(pvc_root_vm("persistent", DISKS)))
    vmi = _running(cluster, namespace, "persistent")

    # Node-local ReadWriteOnce claims: KubeVirt's verdict on live migration.
    conditions = {c["type"]: c for c in vmi["status"].get("conditions", [])}
    migratable = conditions["LiveMigratable"]
    assert (migratable["status"], migratable["reason"]) == ("False", "DisksNotLiveMigratable")
    assert "is not shared, live migration requires that all PVCs must be shared" in migratable["message"]
    claimed = {
        s["name"]: s["persistentVolumeClaimInfo"]
        for s in vmi["status"]["volumeStatus"]
        if "persistentVolumeClaimInfo" in s
    }
    assert set(claimed) == {"rootdisk", "datafs", "datablock"}
    assert claimed["datablock"]["volumeMode"] == "Block"
    assert claimed["datafs"]["volumeMode"] == "Filesystem"

    expecter = cirros_login(str(cluster.kubeconfig), namespace, "persistent")
    try:
        assert _boots(expecter) == 1  # a fresh copy of the image's disk
        # disk.img fills the filesystem claim; the block claim is the device itself.
        assert disk_bytes(expecter, _device(expecter, "DATABLOCK")) == 64 * MIB
        assert 0.9 * 64 * MIB <= disk_bytes(expecter, _device(expecter, "DATAFS")) <= 64 * MIB
        _write_markers(expecter)
    finally:
        expecter.stream.close()

    set_run_strategy(cluster, namespace, "persistent", "Halted")
    cluster.wait_until("the VMI is gone", lambda: cluster.find("vmi", "persistent", namespace) is None, 120)
    set_run_strategy(cluster, namespace, "persistent", "Always")
    _running(cluster, namespace, "persistent", other_than_uid=vmi["metadata"]["uid"])
    assert _what_the_guest_finds(cluster, namespace, "persistent") == (MARKERS, 2)

    cluster.kubectl("delete", "vm", "persistent", "-n", namespace, "--wait=true", "--timeout=120s")
    cluster.wait_until("the VMI is gone", lambda: cluster.find("vmi", "persistent", namespace) is None, 120)
    for claim_name in (ROOT_CLAIM, *(d.claim for d in DISKS)):
        left = cluster.find("pvc", claim_name, namespace) or {}
        assert left.get("status", {}).get("phase") == "Bound", f"{claim_name} not left bound"

    cluster.kubectl(
        "create", "-n", namespace, "-f", "-", stdin=json.dumps(pvc_root_vm("persistent-again", DISKS))
    )
    _running(cluster, namespace, "persistent-again")
    assert _what_the_guest_finds(cluster, namespace, "persistent-again") == (MARKERS, 3)


def test_disk_img_on_a_filesystem_claim_is_the_qemu_users(
    cluster: Cluster, storage_namespace: str, claims: None
) -> None:
    """The launcher made disk.img on the empty filesystem claim for the non-root launcher (uid 107), no
    larger than the claim."""
    pv = bound_volume(cluster, storage_namespace, "data-fs")
    stat = (volume_path(cluster, pv) / "disk.img").stat()
    assert (stat.st_uid, stat.st_gid) == (107, 107)
    assert stat.st_size <= 64 * MIB
