"""Finding a VMI's launcher command socket on this node, through the kubelet's pod directories.

No symlink is followed below the pods directory: a launcher pod controls what its volumes hold, and must
not make virt-handler follow a symlink out of the pods tree.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from kubevirt import safepath
from kubevirt.handler_launcher_com.sockets import READY_SOCKET, SOCKETS_DIR, UNRESPONSIVE_MARKER

EMPTY_DIR = "kubernetes.io~empty-dir"


class SocketLookupError(Exception):
    """No single launcher socket could be found."""


@contextlib.contextmanager
def open_dir_nofollow(root: Path, parts: list[str]) -> Iterator[int]:
    """A descriptor of ``root/parts...``; a symlink anywhere on the way fails the open with ``ELOOP``."""
    for part in parts:
        if not safepath.plain_name(part):
            raise SocketLookupError(f"{part!r}: not a plain path component")
    with safepath.opened(
        root, "/".join(parts), os.O_RDONLY | os.O_DIRECTORY, resolve=safepath.NO_SYMLINKS
    ) as fd:
        yield fd


def socket_dir(pod_uid: str) -> list[str]:
    """The path components of a pod's ``sockets`` emptyDir below the kubelet's pods directory."""
    return [pod_uid, "volumes", EMPTY_DIR, SOCKETS_DIR]


def _stat_below(pods_dir: Path, parts: list[str], name: str | None = None) -> os.stat_result | None:
    """``name`` in the directory ``parts`` (the directory itself without one), not following links.

    ``None`` when something on the way is missing, not a directory, or a symlink.
    """
    try:
        with open_dir_nofollow(pods_dir, parts) as fd:
            return os.stat(name, dir_fd=fd, follow_symlinks=False) if name else os.fstat(fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:  # a symlink where a directory or the entry was expected
            return None
        raise


def pod_has_socket(pods_dir: Path, pod_uid: str) -> bool:
    """Whether the pod's ``sockets`` volume holds a ready launcher socket (not a link to one)."""
    info = _stat_below(pods_dir, socket_dir(pod_uid), READY_SOCKET)
    return info is not None and stat.S_ISSOCK(info.st_mode)


def _in_sockets_dir(pods_dir: Path, pod_uid: str, name: str) -> bool:
    try:
        return _stat_below(pods_dir, socket_dir(pod_uid), name) is not None
    except SocketLookupError:
        return False


def pod_dir_exists(pods_dir: Path, pod_uid: str) -> bool:
    """Whether the kubelet still has a directory for the pod (a plain directory, not a link)."""
    try:
        return _stat_below(pods_dir, [pod_uid]) is not None
    except SocketLookupError:
        return False


def is_marked_unresponsive(pods_dir: Path, pod_uid: str) -> bool:
    """Whether the watchdog marked this pod's launcher unresponsive (or its socket is gone)."""
    return _in_sockets_dir(pods_dir, pod_uid, UNRESPONSIVE_MARKER) or not _in_sockets_dir(
        pods_dir, pod_uid, READY_SOCKET
    )


def mark_unresponsive(pods_dir: Path, pod_uid: str) -> None:
    """Leave the marker next to the socket; a link in its place is not followed (the open fails)."""
    with open_dir_nofollow(pods_dir, socket_dir(pod_uid)) as fd:
        marker = os.open(
            UNRESPONSIVE_MARKER, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=fd
        )
        os.close(marker)


def pod_uid_of(pods_dir: Path, socket: Path) -> str:
    """The pod UID a socket path found by :func:`find_launcher_socket` belongs to."""
    return socket.relative_to(pods_dir).parts[0]


def launcher_pods(pods_dir: Path) -> list[str]:
    """The UIDs of the pods on this node with a ready launcher socket."""
    try:
        entries = sorted(entry.name for entry in os.scandir(pods_dir) if entry.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return []
    return [uid for uid in entries if pod_has_socket(pods_dir, uid)]


def find_launcher_pod(pods_dir: Path, active_pods: Mapping[str, str], node: str) -> str:
    """The UID of the one pod on ``node`` whose launcher is ready (KubeVirt's rule: exactly one)."""
    found = [
        uid
        for uid, pod_node in sorted(active_pods.items())
        if pod_node == node and pod_has_socket(pods_dir, uid)
    ]
    if not found:
        raise SocketLookupError("No command socket found for vmi")
    if len(found) > 1:
        sockets = [str(pods_dir.joinpath(*socket_dir(uid), READY_SOCKET)) for uid in found]
        raise SocketLookupError(f"Found multiple sockets for vmi: {sockets}")
    return found[0]


def find_launcher_socket(pods_dir: Path, active_pods: Mapping[str, str], node: str) -> Path:
    """The one ready launcher socket among the VMI's pods on ``node``."""
    uid = find_launcher_pod(pods_dir, active_pods, node)
    return pods_dir.joinpath(*socket_dir(uid), READY_SOCKET)
