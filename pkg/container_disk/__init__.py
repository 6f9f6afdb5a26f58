"""Facts shared about containerDisk containers (their program is ``cmd/container-disk``, a static C
executable, because it runs in images that may hold nothing but a disk).

Each disk container listens on ``<copy-path>.sock`` in the launcher pod's ``container-disks`` volume:
virt-handler connects to that socket, learns the container's process from the peer credentials, and finds
the disk through that process's root directory.
"""

from __future__ import annotations

from pathlib import Path

SOCKET_SUFFIX = ".sock"
# Where a containerDisk image keeps its disk, and a kernel-boot image its artifacts.
DISK_DIR = "/disk"


def socket_path(copy_path: Path) -> Path:
    return copy_path.with_name(copy_path.name + SOCKET_SUFFIX)
