"""A logged-in test guest's disks, found by the serial KubeVirt gave them: which block device has a serial,
waiting for one to come or go (hotplug), and a marker written to a disk's first sector and read back
past the guest's page cache."""

from __future__ import annotations

import re
import time

from kubevirt_testing.guest_console import Expecter, run

# Virtio disks show their serial in /sys/block/vdX/serial, SCSI disks (virtctl addvolume's default bus) in
# their unit serial number page (VPD 0x80: a 4-byte header, then the serial).
FIND_DISK = (
    "for d in /sys/block/vd* /sys/block/sd*; do "
    "[ -e $d ] || continue; s=$(cat $d/serial 2>/dev/null || tail -c +5 $d/device/vpd_pg80 2>/dev/null); "
    '[ "$s" = {serial} ] && echo ${{d##*/}}; done'
)


def guest_disk(expecter: Expecter, serial: str) -> str:
    """The guest's block device name with ``serial`` ("" when there is none)."""
    found = run(expecter, FIND_DISK.format(serial=serial))
    assert found == "" or re.fullmatch(r"(vd|sd)[a-z]+", found), f"disks with serial {serial}: {found!r}"
    return found


def wait_guest_disk(expecter: Expecter, serial: str, *, present: bool, timeout: float = 60.0) -> str:
    """The device with ``serial`` once it is there (``present``), or "" once it is gone."""
    deadline = time.monotonic() + timeout
    while True:
        found = guest_disk(expecter, serial)
        if bool(found) == present:
            return found
        if time.monotonic() > deadline:
            state = "appear" if present else "go"
            raise AssertionError(f"the guest's disk with serial {serial} did not {state} in {timeout:.0f} s")
        time.sleep(2)


def disk_bytes(expecter: Expecter, device: str) -> int:
    return int(run(expecter, f"cat /sys/block/{device}/size")) * 512


def write_marker(expecter: Expecter, device: str, marker: str) -> None:
    """``marker`` on the first sector of ``/dev/<device>``, synced to the disk."""
    run(expecter, f"echo {marker} | sudo dd of=/dev/{device} conv=fsync 2>/dev/null")
    run(expecter, "sync")


def read_marker(expecter: Expecter, device: str) -> str:
    """The first line of ``/dev/<device>``, read from the disk (the guest's caches dropped first)."""
    run(expecter, "sync; echo 3 | sudo tee /proc/sys/vm/drop_caches >/dev/null")
    return run(expecter, f"sudo dd if=/dev/{device} bs=512 count=1 2>/dev/null | head -n 1")
