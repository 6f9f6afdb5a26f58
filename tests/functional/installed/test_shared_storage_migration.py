"""A VM on ReadWriteMany claims live-migrates between the two nodes, a hotplugged disk with it.

The local CSI driver keeps a ReadWriteMany volume in a directory both nodes see, so a claim of that mode
can be mounted by the source and the target launcher pods at once. The CirrOS-compatible guest boots from
its containerDisk with a Block RWX claim as a data disk, gets another hotplugged (``virtctl addvolume``),
writes a marker to each, and is migrated with ``virtctl migrate``. (Block claims, as on Ceph RBD: libvirt
takes a block device with the host cache off as shared storage by itself; the ``disk.img`` of a Filesystem
claim counts as shared only on a filesystem libvirt knows to be one, NFS or CephFS, not on the local
cluster's directory, where KubeVirt would need ``unsafeMigrationOverride``.) The VMI is
LiveMigratable without a block migration; after the move the guest, still logged in, reads both markers
from the target node, the hotplugged volume is held by an attachment pod on the target node and the
source's attachment pod is gone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import install
from localcluster import migration as mig
from localcluster.handle import Cluster
from localcluster.hotplug import attachment_pods, virtctl_with_gate, wait_volume_ready
from localcluster.pvc_vms import DataDisk, claim, container_disk_vm
from localcluster.up import virtctl

from kubevirt_testing.guest_console import PROMPT, Expecter, login_to_cirros, run, virt_api_console
from kubevirt_testing.guest_disks import read_marker, wait_guest_disk, write_marker

JSON = dict[str, Any]
VM = "shared"
COLD = DataDisk("shareddata", "shared-data", "SHAREDDATA")
BLOCK_CLAIM, BLOCK_SERIAL = "shared-block", "SHAREDBLK"
RWX = ("ReadWriteMany",)
BOOT_TIMEOUT = 240.0
MIGRATION_TIMEOUT = 240.0


@pytest.fixture(scope="module")
def place(two_node_cluster: Cluster, nodes: tuple[str, str]) -> Iterator[str]:
    gate = install.feature_gates(two_node_cluster, "HotplugVolumes")
    with gate, two_node_cluster.vm_namespace(f"ft-rwx-{os.getpid() % 10000}") as name:
        yield name


@pytest.fixture(scope="module")
def guest(two_node_cluster: Cluster, place: str) -> JSON:
    """The VM Running with its RWX Block claim."""
    cluster = two_node_cluster
    shared = claim(COLD.claim, "32Mi", block=True, access_modes=RWX)
    listed = {"kind": "List", "apiVersion": "v1", "items": [shared]}
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(listed))
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(container_disk_vm(VM, (COLD,))))
    return mig.wait_running(cluster, place, VM, BOOT_TIMEOUT)


def _resume(cluster: Cluster, namespace: str) -> Expecter:
    """A new console connection to the guest's shell, still logged in from before the migration."""
    expecter = virt_api_console(str(cluster.kubeconfig), namespace, VM)
    expecter.send("\n")
    expecter.expect(PROMPT, 30.0)
    assert run(expecter, "echo resumed") == "resumed"
    return expecter


def test_a_vm_on_rwx_claims_migrates_with_its_hotplugged_disk(
    two_node_cluster: Cluster, nodes: tuple[str, str], place: str, guest: JSON
) -> None:
    cluster = two_node_cluster
    source = guest["status"]["nodeName"]
    target = nodes[1] if source == nodes[0] else nodes[0]
    conditions = {c["type"]: c for c in guest["status"].get("conditions", [])}
    assert conditions["LiveMigratable"]["status"] == "True", conditions["LiveMigratable"]

    # The Block RWX claim, provisioned for the VM's node, hotplugged on virtctl's default bus (scsi).
    block = claim(BLOCK_CLAIM, "32Mi", block=True, node=source, access_modes=RWX)
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(block))
    virtctl_with_gate(
        cluster, "addvolume", VM, "-n", place, f"--volume-name={BLOCK_CLAIM}", f"--serial={BLOCK_SERIAL}"
    )
    before = wait_volume_ready(cluster, place, VM, BLOCK_CLAIM)["hotplugVolume"]
    pods = {p["metadata"]["name"]: p for p in attachment_pods(cluster, place)}
    assert pods[before["attachPodName"]]["spec"]["nodeName"] == source

    expecter = virt_api_console(str(cluster.kubeconfig), place, VM)
    try:
        login_to_cirros(expecter, VM)
        cold_device = wait_guest_disk(expecter, COLD.serial, present=True)
        block_device = wait_guest_disk(expecter, BLOCK_SERIAL, present=True)
        write_marker(expecter, cold_device, "written-on-the-source-cold")
        write_marker(expecter, block_device, "written-on-the-source-block")
    finally:
        expecter.stream.close()
    vmi = mig.vmi(cluster, place, VM)
    conditions = {c["type"]: c for c in vmi["status"].get("conditions", [])}
    assert conditions["LiveMigratable"]["status"] == "True", conditions["LiveMigratable"]

    known = {m["metadata"]["name"] for m in mig.migrations_of(cluster, place, VM)}
    started = virtctl(cluster, "migrate", VM, "-n", place)
    assert started.returncode == 0, started.stderr
    [created] = [m for m in mig.migrations_of(cluster, place, VM) if m["metadata"]["name"] not in known]
    done = mig.wait_phase(cluster, place, created["metadata"]["name"], mig.FINAL_PHASES, MIGRATION_TIMEOUT)
    assert mig.phase(done) == "Succeeded", json.dumps(done.get("status"))

    vmi = mig.vmi(cluster, place, VM)
    assert vmi["status"]["nodeName"] == target
    # The containerDisk's overlay is node-local: KubeVirt's method is a block migration (of that disk only).
    assert vmi["status"]["migrationMethod"] == "BlockMigration"
    assert vmi["status"]["migrationState"]["targetAttachmentPodUID"] != before["attachPodUID"]

    # The hotplugged volume is held on the target by an attachment pod there; the source's one went.
    after = wait_volume_ready(
        cluster,
        place,
        VM,
        BLOCK_CLAIM,
        attachPodUID=vmi["status"]["migrationState"]["targetAttachmentPodUID"],
    )["hotplugVolume"]
    pods = {p["metadata"]["name"]: p for p in attachment_pods(cluster, place)}
    assert pods[after["attachPodName"]]["spec"]["nodeName"] == target
    mig.poll(
        "the source's attachment pod gone",
        lambda: (
            before["attachPodName"] not in {p["metadata"]["name"] for p in attachment_pods(cluster, place)}
        ),
        120.0,
    )

    # The guest, never rebooted, reads on the target what it wrote on the source, and writes on.
    expecter = _resume(cluster, place)
    try:
        assert read_marker(expecter, cold_device) == "written-on-the-source-cold"
        assert read_marker(expecter, block_device) == "written-on-the-source-block"
        write_marker(expecter, block_device, "written-on-the-target")
        assert read_marker(expecter, block_device) == "written-on-the-target"
    finally:
        expecter.stream.close()
