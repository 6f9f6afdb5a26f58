"""Volume hotplug on real QEMU: SyncVirtualMachine with a VMI that gained or lost hotplugged volumes
attaches or detaches their disks on the running domain, live and in its definition, and the guest sees them
come and go.

The test plays virt-handler: it puts a filesystem volume's image (``<volume>.img``) and a block volume's
device node (a loop device) into the pod's hotplug directory (the share directory's ``hotplug-disks``) and
writes the volume statuses virt-controller and virt-handler would write. The guest (HOTPLUG_GUEST_INIT in
the conftest) prints each disk that appears, with the capital letters its first bytes hold, and each one
that disappears.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libvirt
import pytest

from kubevirt.virt_launcher.virtwrap import api

pytestmark = pytest.mark.timeout(240)

BOOT_BUDGET = 60.0
HOTPLUG_WATCHING = "HOTPLUG-WATCHING"  # the guest's line once it watches its disks
GUEST_BUDGET = 30.0
FS_MARKER = b"HOTPLUG-FS-DISK"
BLOCK_MARKER = b"HOTPLUG-BLOCK-DISK"
HOTPLUG_DIR = "/var/run/kubevirt/hotplug-disks"


@pytest.fixture
def loop_device(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB block device holding BLOCK_MARKER, as a block claim would give one."""
    if shutil.which("losetup") is None or not os.path.exists("/dev/loop-control"):
        pytest.skip("no loop devices here")
    backing = tmp_path / "block-claim.img"
    backing.write_bytes(BLOCK_MARKER + bytes((4 << 20) - len(BLOCK_MARKER)))
    result = subprocess.run(
        ["losetup", "--find", "--show", str(backing)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        pytest.skip(f"cannot set up a loop device: {result.stderr.strip()}")
    device = Path(result.stdout.strip())
    yield device
    subprocess.run(["losetup", "--detach", str(device)], check=False)


def hotplug_status(name: str, phase: str, target: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "target": target,
        "phase": phase,
        "hotplugVolume": {"attachPodName": f"hp-volume-{name}", "attachPodUID": "0000-attach-pod"},
        "persistentVolumeClaimInfo": {"capacity": {"storage": "8Mi"}, "volumeMode": "Filesystem"},
    }


def with_volumes(vmi: dict[str, Any], bus: str, hotplugged: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``vmi`` with a claim volume and a disk on ``bus`` for each of ``hotplugged`` (name -> its status)."""
    out = copy.deepcopy(vmi)
    for name, status in hotplugged.items():
        out["spec"]["volumes"].append({"name": name, "persistentVolumeClaim": {"claimName": f"claim-{name}"}})
        out["spec"]["domain"]["devices"]["disks"].append({"name": name, "disk": {"bus": bus}})
        out["status"]["volumeStatus"].append(status)
    return out


def live_disks(pod: Any) -> dict[str, dict[str, Any]]:
    """The running domain's disks by VMI disk name, as GetDomain reports them."""
    domain = pod.client.get_domain()
    assert domain is not None
    return {disk["Alias"]["Name"]: disk for disk in domain["Spec"]["Devices"]["Disks"] or []}


def defined_disks(pod: Any, name: str) -> set[str]:
    """The disks of the domain's persistent definition (what a restart of the domain would have)."""
    conn = libvirt.open(f"qemu+unix:///system?socket={pod.libvirt_socket}")
    try:
        xml = conn.lookupByName(name).XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
    finally:
        conn.close()
    disks = api.Domain.from_xml(xml).devices.disks
    return {d.alias.name.removeprefix(api.USER_ALIAS_PREFIX) for d in disks if d.alias and d.alias.name}


def started(
    launcher_pods: Any,
    make_vmi: Any,
    guest: Path,
    name: str,
    *,
    volumes: list[dict[str, Any]] | None = None,
    disks: list[dict[str, Any]] | None = None,
    statuses: list[dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], Any, Path]:
    """A VMI called ``name`` with these volumes, disks and volume statuses (none when not given) synced into
    a fresh launcher pod running ``guest``, then marked Running: (the VMI, the pod, its hotplug directory)."""
    vmi = make_vmi(name)
    vmi["spec"]["volumes"] = volumes or []
    vmi["spec"]["domain"]["devices"]["disks"] = disks or []
    vmi["status"]["volumeStatus"] = statuses or []
    pod = launcher_pods(vmi, guest=guest)
    hotplug_dir = pod.share_dir / "hotplug-disks"  # the launcher's /var/run/kubevirt/hotplug-disks
    hotplug_dir.mkdir()
    pod.client.sync_vmi(vmi)
    vmi["status"]["phase"] = "Running"
    return vmi, pod, hotplug_dir


def wait_for_no_live_disks(pod: Any) -> None:
    """Waits until the guest has let go of every disk the domain had (the unplug completes in the guest's
    time, after the detach call has returned)."""
    deadline = time.monotonic() + GUEST_BUDGET
    while live_disks(pod) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert live_disks(pod) == {}


def test_hotplugged_disks_are_attached_and_detached_on_the_running_guest(
    launcher_pods: Any, make_vmi: Any, hotplug_test_guest: Path, loop_device: Path
) -> None:
    # SCSI: the bus KubeVirt's addvolume gives a disk unless told otherwise.
    bus, first, second = "scsi", "sda", "sdb"
    vmi, pod, hotplug_dir = started(
        launcher_pods,
        make_vmi,
        hotplug_test_guest,
        "hotplug",
        volumes=[{"name": "scratch", "emptyDisk": {"capacity": "16Mi"}}],
        disks=[{"name": "scratch", "disk": {"bus": "virtio"}}],
        statuses=[{"name": "scratch", "target": "vda"}],
    )
    pod.wait_for_serial("DISK-ADDED vda", BOOT_BUDGET)
    domain_name = f"{vmi['metadata']['namespace']}_{vmi['metadata']['name']}"

    # The attachment pod is on the node, the image not in the launcher pod yet: nothing to attach.
    image = hotplug_dir / "fsdisk.img"
    attaching = with_volumes(vmi, bus, {"fsdisk": hotplug_status("fsdisk", "AttachedToNode")})
    pod.client.sync_vmi(attaching)
    assert set(live_disks(pod)) == {"scratch"}

    # virt-handler mounted it: the disk is attached, and stays attached when the domain is restarted.
    image.write_bytes(FS_MARKER + bytes((8 << 20) - len(FS_MARKER)))
    mounted = with_volumes(vmi, bus, {"fsdisk": hotplug_status("fsdisk", "MountedToPod")})
    pod.client.sync_vmi(mounted)
    fs_disk = live_disks(pod)["fsdisk"]
    assert fs_disk["Source"]["File"] == f"{HOTPLUG_DIR}/fsdisk.img"
    assert (fs_disk["Target"]["Bus"], fs_disk["Target"]["Device"]) == (bus, first)
    assert fs_disk["Driver"]["Type"] == "raw"
    assert fs_disk["Driver"]["Discard"] == "unmap"
    assert fs_disk["Driver"]["Cache"] in ("none", "writethrough")
    assert defined_disks(pod, domain_name) == {"scratch", "fsdisk"}
    serial = pod.wait_for_serial(f"DISK-ADDED {first}", GUEST_BUDGET)
    assert f"DISK-ADDED {first} size={8 << 20} head={FS_MARKER.decode()}" in serial

    # A sync with the same VMI changes nothing and is no error.
    pod.client.sync_vmi(mounted)
    assert set(live_disks(pod)) == {"scratch", "fsdisk"}

    # A block volume: marked mounted before its node is there, it waits; then it is attached as a device.
    ready_fs = hotplug_status("fsdisk", "Ready", first)
    both = with_volumes(
        vmi, bus, {"fsdisk": ready_fs, "blockdisk": hotplug_status("blockdisk", "MountedToPod")}
    )
    pod.client.sync_vmi(both)
    assert set(live_disks(pod)) == {"scratch", "fsdisk"}
    numbers = os.stat(loop_device).st_rdev
    os.mknod(hotplug_dir / "blockdisk", 0o660 | 0o060000, numbers)  # as virt-handler makes it
    pod.client.sync_vmi(both)
    block_disk = live_disks(pod)["blockdisk"]
    assert block_disk["Source"]["Dev"] == f"{HOTPLUG_DIR}/blockdisk"
    assert (block_disk["Target"]["Device"], block_disk["Driver"]["Type"]) == (second, "raw")
    serial = pod.wait_for_serial(f"DISK-ADDED {second}", GUEST_BUDGET)
    assert f"DISK-ADDED {second} size={4 << 20} head={BLOCK_MARKER.decode()}" in serial

    # The filesystem volume is removed from the VMI: its disk goes, the block one keeps its device.
    only_block = with_volumes(vmi, bus, {"blockdisk": hotplug_status("blockdisk", "Ready", second)})
    pod.client.sync_vmi(only_block)
    pod.wait_for_serial(f"DISK-REMOVED {first}", GUEST_BUDGET)
    disks = live_disks(pod)
    assert set(disks) == {"scratch", "blockdisk"}
    assert disks["blockdisk"]["Target"]["Device"] == second
    assert defined_disks(pod, domain_name) == {"scratch", "blockdisk"}

    pod.client.sync_vmi(vmi)
    pod.wait_for_serial(f"DISK-REMOVED {second}", GUEST_BUDGET)
    assert set(live_disks(pod)) == {"scratch"}
    assert defined_disks(pod, domain_name) == {"scratch"}
    assert pod.status()[0] == "Running"


def test_a_virtio_disk_is_unplugged_once_the_guest_lets_it_go(
    launcher_pods: Any, make_vmi: Any, hotplug_test_guest: Path
) -> None:
    # A virtio disk is a PCIe device: the guest must release it, after the detach call may have returned.
    vmi, pod, hotplug_dir = started(launcher_pods, make_vmi, hotplug_test_guest, "hotplug-virtio")
    pod.wait_for_serial(HOTPLUG_WATCHING, BOOT_BUDGET)
    (hotplug_dir / "data.img").write_bytes(FS_MARKER + bytes((2 << 20) - len(FS_MARKER)))
    with_data = with_volumes(vmi, "virtio", {"data": hotplug_status("data", "MountedToPod")})
    pod.client.sync_vmi(with_data)
    assert live_disks(pod)["data"]["Target"]["Device"] == "vda"
    serial = pod.wait_for_serial("DISK-ADDED vda", GUEST_BUDGET)
    assert f"DISK-ADDED vda size={2 << 20} head={FS_MARKER.decode()}" in serial

    pod.client.sync_vmi(vmi)
    for _ in range(3):  # resyncs while the guest may still be letting go are no error
        pod.client.sync_vmi(vmi)
    pod.wait_for_serial("DISK-REMOVED vda", GUEST_BUDGET)
    wait_for_no_live_disks(pod)


def test_resyncs_wait_for_a_paused_guest_to_let_go_of_a_virtio_disk(
    launcher_pods: Any, make_vmi: Any, hotplug_test_guest: Path
) -> None:
    # A paused guest cannot release the device: the detach returns with the unplug pending, later syncs
    # neither fail nor detach again, and the disk goes once the guest runs.
    vmi, pod, hotplug_dir = started(launcher_pods, make_vmi, hotplug_test_guest, "hotplug-paused")
    pod.wait_for_serial(HOTPLUG_WATCHING, BOOT_BUDGET)
    (hotplug_dir / "data.img").write_bytes(bytes(1 << 20))
    pod.client.sync_vmi(with_volumes(vmi, "virtio", {"data": hotplug_status("data", "MountedToPod")}))
    pod.wait_for_serial("DISK-ADDED vda", GUEST_BUDGET)

    pod.client.vmi_command("PauseVirtualMachine", vmi)
    pod.client.sync_vmi(vmi)  # libvirt waits a few seconds for the guest, then leaves the unplug pending
    assert set(live_disks(pod)) == {"data"}
    pod.client.sync_vmi(vmi)
    pod.client.vmi_command("UnpauseVirtualMachine", vmi)
    pod.wait_for_serial("DISK-REMOVED vda", GUEST_BUDGET)
    wait_for_no_live_disks(pod)
    pod.client.sync_vmi(vmi)


def test_a_hotplugged_volume_is_inserted_into_an_empty_cdrom_and_ejected_again(
    launcher_pods: Any, make_vmi: Any, hotplug_test_guest: Path
) -> None:
    # DeclarativeHotplugVolumes' CD-ROMs: the device stays, its medium comes and goes.
    vmi, pod, hotplug_dir = started(
        launcher_pods,
        make_vmi,
        hotplug_test_guest,
        "hotplug-cdrom",
        disks=[{"name": "cd", "cdrom": {"bus": "scsi"}}],
    )
    assert live_disks(pod)["cd"]["Source"]["File"] == ""
    (hotplug_dir / "cd.img").write_bytes(bytes(1 << 20))
    inserted = copy.deepcopy(vmi)
    inserted["spec"]["volumes"] = [{"name": "cd", "persistentVolumeClaim": {"claimName": "iso"}}]
    inserted["status"]["volumeStatus"] = [hotplug_status("cd", "MountedToPod")]
    pod.client.sync_vmi(inserted)
    cdrom = live_disks(pod)["cd"]
    assert (cdrom["Device"], cdrom["Type"]) == ("cdrom", "file")
    assert cdrom["Source"]["File"] == f"{HOTPLUG_DIR}/cd.img"
    assert cdrom["Target"]["Device"] == "sda"
    pod.client.sync_vmi(inserted)  # nothing more to do

    pod.client.sync_vmi(vmi)
    cdrom = live_disks(pod)["cd"]
    assert (cdrom["Source"]["File"], cdrom["Source"]["Dev"], cdrom["Target"]["Device"]) == ("", "", "sda")
