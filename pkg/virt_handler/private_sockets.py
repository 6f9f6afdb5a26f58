"""Connecting to a VMI's serial console and VNC sockets inside its launcher pod.

QEMU listens on them in the pod's ``private`` emptyDir (``/var/run/kubevirt-private/<vmi uid>/`` in the
pod), which virt-handler reaches through the kubelet's pods directory. The pod controls what that
directory holds, so the socket is dialled as every socket in a pod is (:mod:`.pod_sockets`): no symlink
followed, the connection made to the very inode checked (which also keeps the path under 108 bytes).
"""

from __future__ import annotations

import socket
from pathlib import Path

from kubevirt import pod_paths
from kubevirt.virt_handler.launcher_sockets import EMPTY_DIR, SocketLookupError
from kubevirt.virt_handler.pod_sockets import dial


class UnsafeSocketError(SocketLookupError):
    """The socket path is not a plain socket inside the pod (a symlink, a file, or missing)."""


def private_dir(pod_uid: str, vmi_uid: str) -> list[str]:
    """The path components of the VMI's private directory below the kubelet's pods directory."""
    return [pod_uid, "volumes", EMPTY_DIR, pod_paths.PRIVATE_VOLUME, vmi_uid]


def connect_private_socket(pods_dir: Path, pod_uid: str, vmi_uid: str, name: str) -> socket.socket:
    """A connected (blocking) unix socket to ``name`` in the VMI's private directory of the pod."""
    try:
        connection = dial(pods_dir, private_dir(pod_uid, vmi_uid), name, timeout=None)
    except SocketLookupError as err:  # refused (a link, not a socket), or a component not a plain name
        raise UnsafeSocketError(str(err)) from None
    except FileNotFoundError:
        raise UnsafeSocketError(f"{name} not found in the pod of VMI {vmi_uid}") from None
    return connection
