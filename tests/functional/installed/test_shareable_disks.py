"""A ``shareable`` disk: two running VMs use one Block claim at once, as KubeVirt lets a clustered
filesystem or a quorum disk be shared. Without ``shareable`` QEMU's image lock keeps a second VM off a
disk another runs on (``test_claim_problems.py``); with it both guests boot on the claim's node, what one
writes the other reads, and the domain carries libvirt's ``<shareable/>`` with the host cache off."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster.handle import Cluster
from localcluster.pvc_vms import DataDisk, claim, container_disk_vm
from localcluster.vmis import wait_vmi_phase

from kubevirt_testing.guest_console import cirros_login
from kubevirt_testing.guest_disks import read_marker, wait_guest_disk, write_marker

JSON = dict[str, Any]
CLAIM, SERIAL = "quorum", "QUORUM"
VMS = ("left", "right")
RUNNING_TIMEOUT = 240.0
# The launcher's own libvirtd, in session mode as the qemu user.
LAUNCHER_LIBVIRT = "qemu+unix:///session?socket=/var/run/kubevirt-private/libvirt/sock/libvirt-sock"


@pytest.fixture(scope="module")
def place(cluster: Cluster, kubevirt: float) -> Iterator[str]:
    with cluster.vm_namespace(f"ft-shareable-{os.getpid() % 10000}") as name:
        yield name


def _sharing_vm(name: str) -> JSON:
    vm = container_disk_vm(name, (DataDisk("quorum", CLAIM, SERIAL),))
    disks = vm["spec"]["template"]["spec"]["domain"]["devices"]["disks"]
    (shared,) = [d for d in disks if d["name"] == "quorum"]
    shared["shareable"] = True
    return vm


@pytest.fixture(scope="module")
def running(cluster: Cluster, place: str) -> list[JSON]:
    """Both VMs Running on the one claim."""
    items = [claim(CLAIM, "16Mi", block=True), *(_sharing_vm(name) for name in VMS)]
    listed = {"kind": "List", "apiVersion": "v1", "items": items}
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(listed))
    return [wait_vmi_phase(cluster, name, place, timeout=RUNNING_TIMEOUT) for name in VMS]


def test_two_running_vms_share_one_claim(cluster: Cluster, place: str, running: list[JSON]) -> None:
    left, right = running
    assert left["status"]["nodeName"] == right["status"]["nodeName"]  # the node-local claim's node
    writer, reader = (cirros_login(str(cluster.kubeconfig), place, name) for name in VMS)
    try:
        write_marker(writer, wait_guest_disk(writer, SERIAL, present=True), "written-by-left")
        device = wait_guest_disk(reader, SERIAL, present=True)
        assert read_marker(reader, device) == "written-by-left"
        write_marker(reader, device, "written-by-right")
        assert read_marker(writer, wait_guest_disk(writer, SERIAL, present=True)) == "written-by-right"
    finally:
        writer.stream.close()
        reader.stream.close()


def test_the_shared_disk_is_shareable_with_no_host_cache(
    cluster: Cluster, place: str, running: list[JSON]
) -> None:
    selector = f"kubevirt.io/created-by={running[0]['metadata']['uid']}"
    pods = cluster.kubectl_json("get", "pods", "-n", place, "-l", selector)["items"]
    assert isinstance(pods, list)
    (pod,) = [p for p in pods if p["status"].get("phase") == "Running"]
    xml = cluster.kubectl(
        "exec",
        "-n",
        place,
        pod["metadata"]["name"],
        "-c",
        "compute",
        "--",
        "virsh",
        "-c",
        LAUNCHER_LIBVIRT,
        "dumpxml",
        f"{place}_left",
    ).stdout
    disk = xml[xml.index("<alias name='ua-quorum'/>") - 600 : xml.index("<alias name='ua-quorum'/>")]
    assert "<shareable/>" in disk, disk
    assert "cache='none'" in disk, disk
