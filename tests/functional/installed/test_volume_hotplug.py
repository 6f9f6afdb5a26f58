"""Volume hotplug (the HotplugVolumes feature gate) on a running VM with a booted guest, through virtctl and
virt-api's addvolume/removevolume subresources: a Block claim and a Filesystem claim (holding a blank
``disk.img``, as a blank DataVolume leaves it) are attached live, each through a hotplug attachment pod on
the VM's node, and the guest sees them by their serials and writes to them; ``--persist`` puts the volume in
the VM's template; removevolume detaches them live, the guest no longer sees them and the attachment pods go.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import install
from localcluster.handle import Cluster
from localcluster.pvc_vms import blank_disk_image, claim, container_disk_vm
from localcluster.up import virtctl
from localcluster.vmis import wait_vmi_phase

from kubevirt.client import KubeClient
from kubevirt.virtctl.console import connect_console
from kubevirt_testing.guest_console import Expecter, WebSocketStream, login_to_cirros, run
from kubevirt_testing.waiting import first_result

VM = "hotplug"
BLOCK_CLAIM, FS_CLAIM = "hp-block", "hp-fs"
SERIALS = {BLOCK_CLAIM: "HPBLOCK", FS_CLAIM: "HPFS"}
RUNNING_TIMEOUT = 240.0
READY_TIMEOUT = 180.0
GATE_PROPAGATION = 60.0
ATTACHMENT_LABEL = "kubevirt.io=hotplug-disk"
# The guest's disk with a serial: virtio disks show it in /sys/block/vdX/serial, SCSI disks (virtctl's default
# bus) in their unit serial number page (VPD 0x80: a 4-byte header, then the serial).
FIND_DISK = (
    "for d in /sys/block/vd* /sys/block/sd*; do "
    "[ -e $d ] || continue; s=$(cat $d/serial 2>/dev/null || tail -c +5 $d/device/vpd_pg80 2>/dev/null); "
    '[ "$s" = {serial} ] && echo ${{d##*/}}; done'
)


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


def _virtctl(cluster: Cluster, *args: str) -> str:
    """virtctl's output; retries while virt-api has not yet seen the gate the module turned on."""
    deadline = time.monotonic() + GATE_PROPAGATION
    while True:
        result = virtctl(cluster, *args)
        if result.returncode == 0:
            return result.stdout
        if "feature gate" not in result.stderr or time.monotonic() > deadline:
            raise AssertionError(
                f"virtctl {' '.join(args)}: {result.returncode} {result.stdout}{result.stderr}"
            )
        time.sleep(2)


def _volume_status(cluster: Cluster, namespace: str, volume: str) -> dict[str, Any] | None:
    vmi = cluster.find("vmi", VM, namespace) or {}
    return next((s for s in vmi.get("status", {}).get("volumeStatus", []) if s["name"] == volume), None)


def _wait_ready(cluster: Cluster, namespace: str, volume: str) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        status = _volume_status(cluster, namespace, volume)
        return status if status is not None and status.get("phase") == "Ready" else None

    try:
        return first_result(f"volume {volume} Ready", ready, READY_TIMEOUT)
    except AssertionError as error:
        status = _volume_status(cluster, namespace, volume)
        pods = cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False).stdout
        handler = cluster.kubectl(
            "logs", "-n", "kubevirt", "-l", "kubevirt.io=virt-handler", "--tail=30", check=False
        ).stdout
        raise AssertionError(f"{error}: {status}\n{pods}\n{handler[-4000:]}") from error


def _attachment_pods(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    listed = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", ATTACHMENT_LABEL)
    return [p for p in listed["items"] if not p["metadata"].get("deletionTimestamp")]  # type: ignore[union-attr]


def _console(cluster: Cluster, namespace: str) -> Expecter:
    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    expecter = Expecter(WebSocketStream(connect_console(client, namespace, VM, 60)))
    login_to_cirros(expecter, VM)
    return expecter


def _guest_disk(expecter: Expecter, serial: str) -> str:
    """The guest's block device name with ``serial`` ("" when there is none)."""
    found = run(expecter, FIND_DISK.format(serial=serial))
    assert found == "" or re.fullmatch(r"(vd|sd)[a-z]+", found), f"disks with serial {serial}: {found!r}"
    return found


def _wait_guest_disk(expecter: Expecter, serial: str, present: bool, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        found = _guest_disk(expecter, serial)
        if bool(found) == present:
            return found
        if time.monotonic() > deadline:
            state = "appear" if present else "go"
            raise AssertionError(f"the guest's disk with serial {serial} did not {state} in {timeout:.0f} s")
        time.sleep(2)


def _write_and_read(expecter: Expecter, device: str, marker: str) -> str:
    run(expecter, f"echo {marker} | sudo dd of=/dev/{device} conv=fsync 2>/dev/null")
    run(expecter, "sync; echo 3 | sudo tee /proc/sys/vm/drop_caches >/dev/null")
    return run(expecter, f"sudo dd if=/dev/{device} bs=512 count=1 2>/dev/null | head -n 1")


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
        assert _guest_disk(expecter, SERIALS[BLOCK_CLAIM]) == ""

        # A Block claim, on the VMI only (no --persist), on virtctl's default bus, scsi.
        _virtctl(
            cluster, "addvolume", VM, "-n", namespace, f"--volume-name={BLOCK_CLAIM}", "--serial=HPBLOCK"
        )
        status = _wait_ready(cluster, namespace, BLOCK_CLAIM)
        attachment = status["hotplugVolume"]["attachPodName"]
        assert attachment.startswith("hp-volume-")
        pods = {p["metadata"]["name"]: p for p in _attachment_pods(cluster, namespace)}
        assert pods[attachment]["spec"]["nodeName"] == node
        assert BLOCK_CLAIM not in _template_volumes(cluster, namespace)
        block = _wait_guest_disk(expecter, "HPBLOCK", present=True)
        assert block.startswith("sd")
        assert _write_and_read(expecter, block, "hotplugged-block") == "hotplugged-block"

        # A Filesystem claim's disk.img, persisted in the VM's template (KubeVirt takes only scsi there).
        _virtctl(
            cluster,
            "addvolume",
            VM,
            "-n",
            namespace,
            f"--volume-name={FS_CLAIM}",
            "--serial=HPFS",
            "--persist",
        )
        _wait_ready(cluster, namespace, FS_CLAIM)
        persisted = _template_volumes(cluster, namespace)[FS_CLAIM]
        assert persisted["persistentVolumeClaim"] == {"claimName": FS_CLAIM, "hotpluggable": True}
        fs = _wait_guest_disk(expecter, "HPFS", present=True)
        assert fs.startswith("sd")
        assert _write_and_read(expecter, fs, "hotplugged-fs") == "hotplugged-fs"

        # Unplugged: the guest loses each disk, the VMI its volume, the template the persisted one.
        _virtctl(cluster, "removevolume", VM, "-n", namespace, f"--volume-name={BLOCK_CLAIM}")
        _wait_guest_disk(expecter, "HPBLOCK", present=False)
        first_result(
            "the block volume's status gone",
            lambda: _volume_status(cluster, namespace, BLOCK_CLAIM) is None or None,
            READY_TIMEOUT,
        )
        _virtctl(cluster, "removevolume", VM, "-n", namespace, f"--volume-name={FS_CLAIM}", "--persist")
        _wait_guest_disk(expecter, "HPFS", present=False)
        first_result(
            "the attachment pods gone",
            lambda: _attachment_pods(cluster, namespace) == [] or None,
            READY_TIMEOUT,
        )
        assert FS_CLAIM not in _template_volumes(cluster, namespace)
        # The guest runs on, and the data went to the claims.
        assert run(expecter, "echo still here") == "still here"
    finally:
        expecter.stream.close()
