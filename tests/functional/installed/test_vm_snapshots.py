"""VM snapshots and restores on the local cluster's CSI snapshots, with a booted guest.

The CirrOS-compatible guest boots from its containerDisk with a block claim as a data disk. It writes
marker A to the data disk; an online snapshot is taken; it writes marker B; the VM is stopped and
restored from the snapshot onto a new claim; booted again, the guest reads marker A. A restore to a
new VM name makes a stopped copy with its own claim. The snapshot reports what KubeVirt reports (phase,
indications, included and excluded volumes), the VM is locked only while the snapshot runs, and
deleting the snapshot takes its content and VolumeSnapshot with it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import install
from localcluster.handle import Cluster
from localcluster.pvc_vms import DataDisk, claim, container_disk_vm
from localcluster.up import virtctl
from localcluster.vmis import wait_vmi_phase

from kubevirt_testing.guest_console import Expecter, login_to_cirros, run, virt_api_console
from kubevirt_testing.guest_disks import guest_disk, read_marker, write_marker

VM = "snapvm"
DATA = DataDisk("data", "snap-data", "SNAPDATA")
RUNNING_TIMEOUT = 240.0
SNAPSHOT_API = "snapshot.kubevirt.io/v1beta1"


@pytest.fixture(scope="module")
def snapshot_namespace(cluster: Cluster, kubevirt: float) -> Iterator[str]:
    gate = install.feature_gates(cluster, "Snapshot")
    with gate, cluster.vm_namespace(f"ft-snapshot-{os.getpid() % 10000}") as name:
        yield name


def _apply(cluster: Cluster, namespace: str, obj: dict[str, Any]) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(obj))


def _set_run_strategy(cluster: Cluster, namespace: str, strategy: str, name: str = VM) -> None:
    patch = json.dumps({"spec": {"runStrategy": strategy}})
    cluster.kubectl("patch", "vm", name, "-n", namespace, "--type=merge", "-p", patch)


def _console(cluster: Cluster, namespace: str, name: str = VM) -> Expecter:
    expecter = virt_api_console(str(cluster.kubeconfig), namespace, name)
    login_to_cirros(expecter, name)
    return expecter


def _data_device(expecter: Expecter, serial: str = DATA.serial) -> str:
    device = guest_disk(expecter, serial)
    assert device.startswith("vd"), f"no virtio disk with serial {serial}: {device!r}"
    return device


def _wait_field(
    cluster: Cluster,
    kind: str,
    name: str,
    namespace: str,
    path: tuple[str, ...],
    timeout: float,
    wanted: object = True,
) -> dict[str, Any]:
    """The object once the value at ``path`` is ``wanted``; its last state in the failure otherwise."""
    seen: dict[str, Any] = {}

    def done() -> bool:
        nonlocal seen
        seen = cluster.find(kind, name, namespace) or {}
        value: Any = seen
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return bool(value == wanted)

    try:
        cluster.wait_until(f"{kind} {name} {'.'.join(path)}", done, timeout)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{json.dumps(seen.get('status'), indent=1)}") from error
    return seen


def _conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in obj["status"].get("conditions", [])}


def _snapshot_taken(cluster: Cluster, namespace: str) -> tuple[dict[str, Any], str]:
    """An online snapshot of the VM, checked once ready: (its one volume backup, the content's name)."""
    snapshot = {
        "apiVersion": SNAPSHOT_API,
        "kind": "VirtualMachineSnapshot",
        "metadata": {"name": "snap-a"},
        "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": VM}},
    }
    _apply(cluster, namespace, snapshot)
    taken = _wait_field(cluster, "vmsnapshot", "snap-a", namespace, ("status", "readyToUse"), 180)
    status = taken["status"]
    assert status["phase"] == "Succeeded"
    assert status["indications"] == ["NoGuestAgent", "Online"]  # the test guest runs no agent
    assert status["snapshotVolumes"] == {
        "includedVolumes": ["data"],
        "excludedVolumes": ["rootdisk", "cloudinitdisk"],
    }
    assert _conditions(taken)["Ready"] == ("True", "Ready")
    assert _conditions(taken)["Progressing"] == ("False", "Operation complete")
    content_name = status["virtualMachineSnapshotContentName"]
    assert content_name == f"vmsnapshot-content-{taken['metadata']['uid']}"
    content = cluster.find("vmsnapshotcontent", content_name, namespace) or {}
    [backup] = content["spec"]["volumeBackups"]
    assert backup["persistentVolumeClaim"]["metadata"]["name"] == DATA.claim
    volume_snapshot = cluster.find("volumesnapshot", backup["volumeSnapshotName"], namespace) or {}
    assert volume_snapshot["status"]["readyToUse"] is True
    assert volume_snapshot["metadata"]["labels"]["snapshot.kubevirt.io/source-vm-name"] == VM

    # Unlocked once done: no snapshotInProgress, no source finalizer.
    vm = cluster.find("vm", VM, namespace) or {}
    assert "snapshotInProgress" not in vm["status"]
    assert "snapshot.kubevirt.io/snapshot-source-protection" not in vm["metadata"].get("finalizers", [])

    return backup, content_name


def test_a_restore_from_an_online_snapshot_brings_back_what_the_guest_wrote_before_it(
    cluster: Cluster, snapshot_namespace: str
) -> None:
    namespace = snapshot_namespace
    _apply(cluster, namespace, claim(DATA.claim, "32Mi", block=True))
    _apply(cluster, namespace, container_disk_vm(VM, (DATA,)))
    vmi = wait_vmi_phase(cluster, VM, namespace, timeout=RUNNING_TIMEOUT)

    # Which volumes a snapshot can take: only the claim has a VolumeSnapshotClass.
    def statuses() -> dict[str, bool]:
        vm = cluster.find("vm", VM, namespace) or {}
        return {s["name"]: s["enabled"] for s in vm.get("status", {}).get("volumeSnapshotStatuses", [])}

    cluster.wait_until("the VM's volumeSnapshotStatuses", lambda: statuses().get("data") is True, 60)
    assert statuses() == {"rootdisk": False, "cloudinitdisk": False, "data": True}

    # One console session for the whole first boot: CirrOS logs in once per boot.
    expecter = _console(cluster, namespace)
    try:
        device = _data_device(expecter)
        write_marker(expecter, device, "marker-A")
        backup, content_name = _snapshot_taken(cluster, namespace)
        write_marker(expecter, device, "marker-B")
    finally:
        expecter.stream.close()
    _set_run_strategy(cluster, namespace, "Halted")
    cluster.wait_until("the VMI is gone", lambda: cluster.find("vmi", VM, namespace) is None, 120)

    restore: dict[str, Any] = {
        "apiVersion": SNAPSHOT_API,
        "kind": "VirtualMachineRestore",
        "metadata": {"name": "restore-a"},
        "spec": {
            "target": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": VM},
            "virtualMachineSnapshotName": "snap-a",
        },
    }
    _apply(cluster, namespace, restore)
    done = _wait_field(cluster, "vmrestore", "restore-a", namespace, ("status", "complete"), 180)
    [restored] = done["status"]["restores"]
    new_claim = f"restore-{done['metadata']['uid']}-data"
    assert restored["persistentVolumeClaim"] == new_claim
    assert _conditions(done)["Ready"] == ("True", "Operation complete")
    vm = cluster.find("vm", VM, namespace) or {}
    volumes = {v["name"]: v for v in vm["spec"]["template"]["spec"]["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == new_claim
    assert "restoreInProgress" not in vm["status"]
    pvc = cluster.find("pvc", new_claim, namespace) or {}
    assert pvc["spec"]["dataSource"] == {
        "apiGroup": "snapshot.storage.k8s.io",
        "kind": "VolumeSnapshot",
        "name": backup["volumeSnapshotName"],
    }

    _set_run_strategy(cluster, namespace, "Always")
    wait_vmi_phase(cluster, VM, namespace, timeout=RUNNING_TIMEOUT, other_than_uid=vmi["metadata"]["uid"])
    expecter = _console(cluster, namespace)
    try:
        assert read_marker(expecter, _data_device(expecter)) == "marker-A"
    finally:
        expecter.stream.close()

    # A restore to another name makes a stopped copy on a claim of its own.
    copy_restore = {
        **restore,
        "metadata": {"name": "restore-copy"},
        "spec": {
            **restore["spec"],
            "target": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "snapvm-copy"},
        },
    }
    _apply(cluster, namespace, copy_restore)
    copied = _wait_field(cluster, "vmrestore", "restore-copy", namespace, ("status", "complete"), 180)
    copy_vm = cluster.find("vm", "snapvm-copy", namespace) or {}
    assert copy_vm["spec"]["runStrategy"] == "Halted"
    copy_volumes = {v["name"]: v for v in copy_vm["spec"]["template"]["spec"]["volumes"]}
    assert (
        copy_volumes["data"]["persistentVolumeClaim"]["claimName"]
        == f"restore-{copied['metadata']['uid']}-data"
    )

    # Deleting the snapshot takes its content and VolumeSnapshot with it. The copy and its claim go first
    # (the source claim was nobody's, so neither is the copy's, as in KubeVirt): the snapshot-controller
    # keeps a VolumeSnapshot while a pending claim is being made from it.
    copy_claim = f"restore-{copied['metadata']['uid']}-data"
    cluster.kubectl("delete", "vm", "snapvm-copy", "-n", namespace, "--wait=true", "--timeout=120s")
    cluster.kubectl("delete", "pvc", copy_claim, "-n", namespace, "--wait=true", "--timeout=120s")
    cluster.kubectl("delete", "vmsnapshot", "snap-a", "-n", namespace, "--wait=true", "--timeout=120s")
    cluster.wait_until(
        "the content and its VolumeSnapshot are gone",
        lambda: (
            cluster.find("vmsnapshotcontent", content_name, namespace) is None
            and cluster.find("volumesnapshot", backup["volumeSnapshotName"], namespace) is None
        ),
        120,
    )


CLONE_SOURCE, CLONE_TARGET = "clonesrc", "clonedst"
CLONE_DATA = DataDisk("data", "clone-src-data", "CLONEDATA")
SOURCE_MAC, CLONE_SERIAL = "02:00:00:c1:0e:01", "clone-serial-1"


def _with_pod_network(vm: dict[str, Any]) -> dict[str, Any]:
    """The test VM with a masquerade NIC of a fixed MAC address on the pod network."""
    spec = vm["spec"]["template"]["spec"]
    devices = spec["domain"]["devices"]
    devices.pop("autoattachPodInterface", None)
    devices["interfaces"] = [{"name": "default", "masquerade": {}, "macAddress": SOURCE_MAC}]
    spec["networks"] = [{"name": "default", "pod": {}}]
    return vm


def _guest_identity(expecter: Expecter) -> tuple[str, str, str]:
    """(the data disk's marker, eth0's MAC address, the SMBIOS system serial) as the guest reads them."""
    marker = read_marker(expecter, _data_device(expecter, CLONE_DATA.serial))
    mac = run(expecter, "cat /sys/class/net/eth0/address")
    serial = run(expecter, "sudo cat /sys/class/dmi/id/product_serial")
    return marker, mac, serial


def test_a_clone_boots_with_the_sources_data_and_its_own_mac_address_and_serial(
    cluster: Cluster, snapshot_namespace: str
) -> None:
    namespace = snapshot_namespace
    _apply(cluster, namespace, claim(CLONE_DATA.claim, "32Mi", block=True))
    _apply(cluster, namespace, _with_pod_network(container_disk_vm(CLONE_SOURCE, (CLONE_DATA,))))
    wait_vmi_phase(cluster, CLONE_SOURCE, namespace, timeout=RUNNING_TIMEOUT)
    expecter = _console(cluster, namespace, CLONE_SOURCE)
    try:
        write_marker(expecter, _data_device(expecter, CLONE_DATA.serial), "clone-marker")
        source_marker, source_mac, source_serial = _guest_identity(expecter)
    finally:
        expecter.stream.close()
    assert (source_marker, source_mac) == ("clone-marker", SOURCE_MAC)
    _set_run_strategy(cluster, namespace, "Halted", CLONE_SOURCE)
    cluster.wait_until(
        "the source VMI is gone", lambda: cluster.find("vmi", CLONE_SOURCE, namespace) is None, 120
    )

    # The manifest as virtctl writes it. Without newMacAddresses the clone drops the source's MAC address
    # (the guest gets a new one); given ones with colons would be refused by the restore's patch check,
    # as KubeVirt's is (its virtctl writes MACs with dashes).
    written = virtctl(
        cluster,
        *(
            "create",
            "clone",
            "--name",
            "clone-1",
            "--source-name",
            CLONE_SOURCE,
            "--target-name",
            CLONE_TARGET,
        ),
        *("--new-smbios-serial", CLONE_SERIAL),
    )
    assert written.returncode == 0, written.stderr
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=written.stdout)
    done = _wait_field(cluster, "vmclone", "clone-1", namespace, ("status", "phase"), 300, "Succeeded")
    assert done["status"]["targetName"] == CLONE_TARGET
    # The clone's own snapshot and restore are gone once the target's claims are bound (after its start).
    _set_run_strategy(cluster, namespace, "Always", CLONE_TARGET)
    wait_vmi_phase(cluster, CLONE_TARGET, namespace, timeout=RUNNING_TIMEOUT)
    expecter = _console(cluster, namespace, CLONE_TARGET)
    try:
        marker, mac, serial = _guest_identity(expecter)
    finally:
        expecter.stream.close()
    assert (marker, serial) == ("clone-marker", CLONE_SERIAL)
    assert mac != SOURCE_MAC
    assert source_serial != CLONE_SERIAL
    target = cluster.find("vm", CLONE_TARGET, namespace) or {}
    [interface] = target["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"]
    assert interface.get("macAddress", "") == ""  # emptied: the guest's MAC is a new one
    cluster.wait_until(
        "the clone's snapshot and restore are cleaned up",
        lambda: (
            not (cluster.find("vmclone", "clone-1", namespace) or {}).get("status", {}).get("restoreName")
        ),
        120,
    )


def test_snapshots_and_restores_of_other_kinds_are_refused(cluster: Cluster, snapshot_namespace: str) -> None:
    snapshot = {
        "apiVersion": SNAPSHOT_API,
        "kind": "VirtualMachineSnapshot",
        "metadata": {"name": "bad-source"},
        "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachineInstance", "name": VM}},
    }
    refused = cluster.kubectl(
        "create", "-n", snapshot_namespace, "-f", "-", stdin=json.dumps(snapshot), check=False
    )
    assert refused.returncode != 0
    assert "spec.source.kind" in refused.stderr
    assert "invalid kind" in refused.stderr
