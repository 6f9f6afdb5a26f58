"""Connecting to a VMI's serial console and VNC sockets inside its launcher pod.

QEMU listens on them in the pod's ``private`` emptyDir (``/var/run/kubevirt-private/<vmi uid>/`` in the
pod), which virt-handler reaches through the kubelet's pods directory. The pod controls what that
directory holds, so no component is followed if it is a symlink: the directories are opened with symlinks
refused, the socket itself with ``O_PATH | O_NOFOLLOW``, and the connection goes through
``/proc/self/fd/<n>``, which names exactly the inode checked (and keeps the path under 108 bytes).
"""

from __future__ import annotations

import errno
import os
import socket
import stat
from pathlib import Path

from kubevirt import safepath
from kubevirt.virt_handler.launcher_sockets import EMPTY_DIR, SocketLookupError, open_dir_nofollow

PRIVATE_VOLUME = "private"
SERIAL_SOCKET = "virt-serial0"
VNC_SOCKET = "virt-vnc"


class UnsafeSocketError(SocketLookupError):
    """The socket path is not a plain socket inside the pod (a symlink, a file, or missing)."""


def private_dir(pod_uid: str, vmi_uid: str) -> list[str]:
    """The path components of the VMI's private directory below the kubelet's pods directory."""
    return [pod_uid, "volumes", EMPTY_DIR, PRIVATE_VOLUME, vmi_uid]


def connect_private_socket(pods_dir: Path, pod_uid: str, vmi_uid: str, name: str) -> socket.socket:
    """A connected (blocking) unix socket to ``name`` in the VMI's private directory of the pod."""
    if not safepath.plain_name(name):
        raise UnsafeSocketError(f"{name!r}: not a plain socket name")
    try:
        with open_dir_nofollow(pods_dir, private_dir(pod_uid, vmi_uid)) as directory:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=directory)
    except UnsafeSocketError:
        raise
    except SocketLookupError as err:  # a component that is not a plain name
        raise UnsafeSocketError(str(err)) from None
    except FileNotFoundError:
        raise UnsafeSocketError(f"{name} not found in the pod of VMI {vmi_uid}") from None
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeSocketError(f"{name}: a path component is not a directory of the pod") from None
        raise
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            raise UnsafeSocketError(f"{name} in the pod of VMI {vmi_uid} is not a socket")
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(f"/proc/self/fd/{fd}")
        except OSError:
            connection.close()
            raise
        return connection
    finally:
        os.close(fd)
