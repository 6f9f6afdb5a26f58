"""A real guest sees the disks the launcher prepared: a containerDisk through its overlay, a cloud-init ISO.

The guest (DISK_GUEST_INIT in the conftest) prints the first bytes of its first disk (the image behind
the overlay), the label of its second disk, runs the user-data script it finds there, and writes a marker
to its first disk, which must land in the overlay and never in the read-only image.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(180)

BOOT_BUDGET = 45.0
IMAGE_CONTENT = b"CONTAINER-DISK-CONTENT"
USER_DATA_MARKER = "USER-DATA-RAN-IN-THE-GUEST"


def test_the_guest_reads_its_container_disk_and_cloud_init_data(
    launcher_pods: Any, make_vmi: Any, disk_test_guest: Path, tmp_path: Path
) -> None:
    # What virt-handler would have bind-mounted from the containerDisk image: a raw disk.
    image = tmp_path / "pod" / "share" / "container-disks" / "disk_0.img"
    image.parent.mkdir(parents=True)
    subprocess.run(["qemu-img", "create", "-f", "raw", str(image), "4M"], check=True, capture_output=True)
    with image.open("r+b") as disk:
        disk.write(IMAGE_CONTENT)
    vmi = make_vmi("disks")
    vmi["spec"]["domain"]["devices"]["disks"] = [
        {"name": "root", "disk": {"bus": "virtio"}},
        {"name": "cloudinit", "disk": {"bus": "virtio"}},
    ]
    vmi["spec"]["volumes"] = [
        {"name": "root", "containerDisk": {"image": "registry.invalid/disk:1"}},
        {"name": "cloudinit", "cloudInitNoCloud": {"userData": f"#!/bin/sh\necho {USER_DATA_MARKER}\n"}},
    ]
    pod = launcher_pods(vmi, guest=disk_test_guest)

    pod.client.sync_vmi(vmi)
    serial = pod.wait_for_serial("DISKS-CHECKED", BOOT_BUDGET)

    assert f"disk0: {IMAGE_CONTENT.decode()}" in serial  # the image, read through the overlay
    assert "disk1 label: cidata\n" in serial
    assert USER_DATA_MARKER in serial
    overlay = pod.in_pod("/var/run/kubevirt-ephemeral-disks/disk-data/root/disk.qcow2")
    assert b"GUEST-WROTE-THIS" in overlay.read_bytes()
    assert image.read_bytes()[:512].startswith(IMAGE_CONTENT)
    assert image.read_bytes()[512:1024] == bytes(512)  # the image itself is never written

    pod.client.sync_vmi(vmi)  # a resync keeps the overlay the guest is writing to
    assert b"GUEST-WROTE-THIS" in overlay.read_bytes()
