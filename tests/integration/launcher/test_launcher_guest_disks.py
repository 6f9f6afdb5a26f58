"""A real guest sees the disks prepared in its pod: a containerDisk through its overlay, a cloud-init ISO,
an empty disk, a configMap ISO (the launcher's), a hostDisk and a filesystem PVC's disk.img (virt-handler's).

The guest (DISK_GUEST_INIT in the conftest) prints the first bytes of its first disk (the image behind
the overlay), each other disk's size and label and the files on it, runs the user-data script it finds,
and writes a marker to its first disk, which must land in the overlay and never in the read-only image.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from kubevirt.podroot import PodRoot
from kubevirt.virt_handler.host_disks import create_images, images_to_make

pytestmark = pytest.mark.timeout(180)

BOOT_BUDGET = 45.0
IMAGE_CONTENT = b"CONTAINER-DISK-CONTENT"
USER_DATA_MARKER = "USER-DATA-RAN-IN-THE-GUEST"


def test_the_guest_reads_the_disks_prepared_in_its_pod(
    launcher_pods: Any, make_vmi: Any, disk_test_guest: Path, tmp_path: Path
) -> None:
    # What virt-handler would have bind-mounted from the containerDisk image: a raw disk.
    image = tmp_path / "pod" / "share" / "container-disks" / "disk_0.img"
    image.parent.mkdir(parents=True)
    subprocess.run(["qemu-img", "create", "-f", "raw", str(image), "4M"], check=True, capture_output=True)
    with image.open("r+b") as disk:
        disk.write(IMAGE_CONTENT)
    vmi = make_vmi("disks")
    volumes = [
        {"name": "root", "containerDisk": {"image": "registry.invalid/disk:1"}},
        {"name": "cloudinit", "cloudInitNoCloud": {"userData": f"#!/bin/sh\necho {USER_DATA_MARKER}\n"}},
        {"name": "scratch", "emptyDisk": {"capacity": "64Mi"}},
        {"name": "app-config", "configMap": {"name": "app", "volumeLabel": "APPCFG"}},
        {
            "name": "host",
            "hostDisk": {"path": "/srv/vm/data.img", "type": "DiskOrCreate", "capacity": "16Mi"},
        },
        {"name": "claim", "persistentVolumeClaim": {"claimName": "data"}},
    ]
    vmi["spec"]["volumes"] = volumes
    vmi["spec"]["domain"]["devices"]["disks"] = [
        {"name": v["name"], "disk": {"bus": "virtio"}} for v in volumes
    ]
    # virt-controller writes a status for every volume (a disk without one stays out of the domain).
    vmi["status"]["volumeStatus"] = [{"name": v["name"], "target": ""} for v in volumes[:-1]] + [
        {
            "name": "claim",
            "target": "vdf",
            "persistentVolumeClaimInfo": {"capacity": {"storage": "24Mi"}, "volumeMode": "Filesystem"},
        }
    ]
    pod = launcher_pods(vmi, guest=disk_test_guest)
    # The host directory of the hostDisk and the claim's filesystem, as virt-controller mounts them.
    for volume in ("host", "claim"):
        pod.in_pod(f"/var/run/kubevirt-private/vmi-disks/{volume}").mkdir(parents=True)
    # What virt-handler does before the sync, through the pod's root: the DiskOrCreate images.
    made = create_images(
        PodRoot.of_process(pod.process.pid),
        images_to_make(vmi),
        toleration=10,
        reserve=131072,
        tolerated=lambda _message: None,
    )
    assert made == ["/srv/vm/data.img", "/var/run/kubevirt-private/vmi-disks/claim/disk.img"]
    # What the kubelet mounts for the configMap volume: a key linked through ..data.
    config_map = pod.in_pod("/var/run/kubevirt-private/config-map/app-config")
    (config_map / "..2026_12_01").mkdir(parents=True)
    (config_map / "..2026_12_01" / "greeting").write_text("hello from a configMap")
    (config_map / "..data").symlink_to("..2026_12_01")
    (config_map / "greeting").symlink_to("..data/greeting")

    pod.client.sync_vmi(vmi)
    serial = pod.wait_for_serial("DISKS-CHECKED", BOOT_BUDGET)

    assert f"vda: {IMAGE_CONTENT.decode()}" in serial  # the image, read through the overlay
    assert "vdb: size=" in serial
    assert " label=cidata\n" in serial
    assert "vdb: file user-data=#!/bin/shecho USER-DATA-RAN-IN-THE-GUEST\n" in serial
    assert USER_DATA_MARKER + "\n" in serial
    assert f"vdc: size={64 << 20} label=\n" in serial  # the empty disk
    assert "label=APPCFG\n" in serial
    assert "vdd: file greeting=hello from a configMap\n" in serial
    assert f"vde: size={16 << 20} label=\n" in serial  # the hostDisk, created sparse
    assert f"vdf: size={24 << 20} label=\n" in serial  # the claim's disk.img
    overlay = pod.in_pod("/var/run/kubevirt-ephemeral-disks/disk-data/root/disk.qcow2")
    assert b"GUEST-WROTE-THIS" in overlay.read_bytes()
    assert image.read_bytes()[:512].startswith(IMAGE_CONTENT)
    assert image.read_bytes()[512:1024] == bytes(512)  # the image itself is never written

    pod.client.sync_vmi(vmi)  # a resync keeps the overlay the guest is writing to
    assert b"GUEST-WROTE-THIS" in overlay.read_bytes()
