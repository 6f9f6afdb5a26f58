"""Volume hotplug (the HotplugVolumes feature gate) on a running VM with a booted guest, through virtctl and
virt-api's addvolume/removevolume subresources: a Block claim and a Filesystem claim (holding a blank
``disk.img``, as a blank DataVolume leaves it) are attached live, each through a hotplug attachment pod on
the VM's node, and the guest sees them by their serials and writes to them; ``--persist`` puts the volume in
the VM's template; removevolume detaches them live, the guest no longer sees them and the attachment pods go.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import install
from localcluster.handle import Cluster
from localcluster.hotplug import attachment_pods, virtctl_with_gate, volume_status, wait_volume_ready
from localcluster.pvc_vms import blank_disk_image, claim, container_disk_vm
from localcluster.vmis import wait_vmi_phase

from kubevirt_testing.guest_console import Expecter, login_to_cirros, run, virt_api_console
from kubevirt_testing.guest_disks import guest_disk, read_marker, wait_guest_disk, write_marker
from kubevirt_testing.waiting import first_result

VM = "hotplug"
BLOCK_CLAIM, FS_CLAIM = "hp-block", "hp-fs"
SERIALS = {BLOCK_CLAIM: "HPBLOCK", FS_CLAIM: "HPFS"}
RUNNING_TIMEOUT = 240.0
READY_TIMEOUT = 180.0


@pytest.fixture(scope="module")
def hotplug_namespace(cluster: Cluster, kubevirt: float) -> Iterator[str]:
    gate = install.feature_gates(cluster, "HotplugVolumes")
    with gate, cluster.vm_namespace(f"ft-hotplug-{os.getpid() % 10000}") as name:
        yield name


@pytest.fixture(scope="module")
def running_vm(cluster: Cluster, hotplug_namespace: str) -> dict[str, Any]:
    """The VM Running, and the two claims to hotplug provisioned on its node."""
    namespace = hotplug_namespace
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(container_disk_vm(VM)))
    vmi = wait_vmi_phase(cluster, VM, namespace, timeout=RUNNING_TIMEOUT)
    node = vmi["status"]["nodeName"]
    claims = [claim(BLOCK_CLAIM, "32Mi", block=True, node=node), claim(FS_CLAIM, "64Mi", node=node)]
    listed = {"kind": "List", "apiVersion": "v1", "items": claims}
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(listed))
    blank_disk_image(cluster, namespace, FS_CLAIM, "32M")
    return vmi


def _console(cluster: Cluster, namespace: str) -> Expecter:
    expecter = virt_api_console(str(cluster.kubeconfig), namespace, VM)
    login_to_cirros(expecter, VM)
    return expecter


def _write_and_read(expecter: Expecter, device: str, marker: str) -> str:
    write_marker(expecter, device, marker)
    return read_marker(expecter, device)


def _template_volumes(cluster: Cluster, namespace: str) -> dict[str, Any]:
    vm = cluster.find("vm", VM, namespace) or {}
    return {v["name"]: v for v in vm["spec"]["template"]["spec"].get("volumes", [])}


def test_volumes_are_hotplugged_into_the_running_guest_and_unplugged(
    cluster: Cluster, hotplug_namespace: str, running_vm: dict[str, Any]
) -> None:
    namespace = hotplug_namespace
    node = running_vm["status"]["nodeName"]
    expecter = _console(cluster, namespace)
    try:
        assert guest_disk(expecter, SERIALS[BLOCK_CLAIM]) == ""

        # A Block claim, on the VMI only (no --persist), on virtctl's default bus, scsi.
        virtctl_with_gate(
            cluster, "addvolume", VM, "-n", namespace, f"--volume-name={BLOCK_CLAIM}", "--serial=HPBLOCK"
        )
        status = wait_volume_ready(cluster, namespace, VM, BLOCK_CLAIM)
        attachment = status["hotplugVolume"]["attachPodName"]
        assert attachment.startswith("hp-volume-")
        pods = {p["metadata"]["name"]: p for p in attachment_pods(cluster, namespace)}
        assert pods[attachment]["spec"]["nodeName"] == node
        assert BLOCK_CLAIM not in _template_volumes(cluster, namespace)
        block = wait_guest_disk(expecter, "HPBLOCK", present=True)
        assert block.startswith("sd")
        assert _write_and_read(expecter, block, "hotplugged-block") == "hotplugged-block"

        # A Filesystem claim's disk.img, persisted in the VM's template (KubeVirt takes only scsi there).
        virtctl_with_gate(
            cluster,
            "addvolume",
            VM,
            "-n",
            namespace,
            f"--volume-name={FS_CLAIM}",
            "--serial=HPFS",
            "--persist",
        )
        wait_volume_ready(cluster, namespace, VM, FS_CLAIM)
        persisted = _template_volumes(cluster, namespace)[FS_CLAIM]
        assert persisted["persistentVolumeClaim"] == {"claimName": FS_CLAIM, "hotpluggable": True}
        fs = wait_guest_disk(expecter, "HPFS", present=True)
        assert fs.startswith("sd")
        assert _write_and_read(expecter, fs, "hotplugged-fs") == "hotplugged-fs"

        # Unplugged: the guest loses each disk, the VMI its volume, the template the persisted one.
        virtctl_with_gate(cluster, "removevolume", VM, "-n", namespace, f"--volume-name={BLOCK_CLAIM}")
        wait_guest_disk(expecter, "HPBLOCK", present=False)
        first_result(
            "the block volume's status gone",
            lambda: volume_status(cluster, namespace, VM, BLOCK_CLAIM) is None or None,
            READY_TIMEOUT,
        )
        virtctl_with_gate(
            cluster, "removevolume", VM, "-n", namespace, f"--volume-name={FS_CLAIM}", "--persist"
        )
        wait_guest_disk(expecter, "HPFS", present=False)
        first_result(
            "the attachment pods gone",
            lambda: attachment_pods(cluster, namespace) == [] or None,
            READY_TIMEOUT,
        )
        assert FS_CLAIM not in _template_volumes(cluster, namespace)
        # The guest runs on, and the data went to the claims.
        assert run(expecter, "echo still here") == "still here"
    finally:
        expecter.stream.close()
