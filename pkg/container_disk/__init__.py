"""container-disk: what runs in each containerDisk (and kernel-boot) container of a launcher pod.

The container only has to stay alive, holding its image's files, and announce itself with a unix socket
``<copy-path>.sock`` in the launcher's ``container-disks`` volume: virt-handler finds the container's
process through that socket and the disk through the process's root directory.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path

SOCKET_SUFFIX = ".sock"
# Where a containerDisk image keeps its disk, and a kernel-boot image its artifacts.
DISK_DIR = "/disk"


def socket_path(copy_path: Path) -> Path:
    return copy_path.with_name(copy_path.name + SOCKET_SUFFIX)


def hold(copy_path: Path, stop: threading.Event) -> None:
    """Listen on ``<copy_path>.sock`` until ``stop`` is set, then remove the socket."""
    path = socket_path(copy_path)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
        listener.listen(1)
        # The process owning this socket is how virt-handler finds the container: keep it open.
        os.set_inheritable(listener.fileno(), False)
        stop.wait()
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
