"""Dialling the sockets a launcher pod controls, and making sure the pod is what answers.

virt-handler is privileged and everything below the kubelet's pods directory belongs to some pod, which may
plant a symlink there or swap a socket for one between a check and its use. Every dial into a pod's volume
goes through :func:`dial`: the directories are opened with symlinks refused, the socket itself with
``O_PATH | O_NOFOLLOW``, and the connection is made through ``/proc/self/fd/<n>``, the very inode checked.

Where the peer's PID is then used to enter its namespaces or its root (containerDisk mounts, phase 1 of the
pod network, sockets made inside the pod), :func:`pod_process` also requires the peer to be a process of
that pod: its cgroup names the pod's UID, and it shares none of the PID, mount and network namespaces of the
host (PID 1) or of virt-handler itself. A host process reached some other way fails both.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import struct
from collections.abc import Sequence
from pathlib import Path

from kubevirt import safepath
from kubevirt.handler_launcher_com.cmd.client import LauncherClient
from kubevirt.handler_launcher_com.sockets import READY_SOCKET
from kubevirt.podroot import PodRoot
from kubevirt.virt_handler.launcher_sockets import SocketLookupError, open_dir_nofollow, socket_dir

DIAL_TIMEOUT_SECONDS = 2.0
PROC = Path("/proc")
CHECKED_NAMESPACES = ("pid", "mnt", "net")
_PEERCRED = struct.Struct("3i")
_SO_PEERPIDFD = 77  # include/uapi/asm-generic/socket.h, Linux 6.5+


class PodSocketError(SocketLookupError):
    """A socket in a pod was refused: not a plain socket in the pod's volume, or answered by a process
    that is not the pod's. The message says which and why."""


def open_socket(pods_dir: Path, parts: Sequence[str], name: str) -> int:
    """An ``O_PATH`` descriptor of the socket ``name`` in ``pods_dir/parts...``, no link followed."""
    where = "/".join([*parts, name])
    try:
        with open_dir_nofollow(pods_dir, list(parts)) as directory:
            return safepath.open_socket(directory, name)
    except safepath.UnsafePathError as err:
        raise PodSocketError(f"{where}: refused, {err.strerror}") from None
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PodSocketError(f"{where}: refused, a path component is not a directory") from None
        raise


def dial(
    pods_dir: Path, parts: Sequence[str], name: str, *, timeout: float | None = DIAL_TIMEOUT_SECONDS
) -> socket.socket:
    """A connection to the socket ``name`` in ``pods_dir/parts...``, made to the inode checked."""
    fd = open_socket(pods_dir, parts, name)
    try:
        return safepath.connect_fd(fd, timeout=timeout)
    finally:
        os.close(fd)


def peer_pid(connection: socket.socket) -> int:
    """The PID (in this PID namespace) of the process at the other end: the kernel's word."""
    pid = int(
        _PEERCRED.unpack(connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))[0]
    )
    if pid <= 0:
        raise PodSocketError("no process behind the socket")
    return pid


def _names_pod(cgroups: str, pod_uid: str) -> bool:
    """Whether a ``/proc/<pid>/cgroup`` text places the process in the pod's cgroup (cgroupfs names it
    ``pod<uid>``, the systemd driver ``…-pod<uid with underscores>.slice``)."""
    plain, systemd = f"pod{pod_uid}", f"-pod{pod_uid.replace('-', '_')}.slice"
    for line in cgroups.splitlines():
        for component in line.partition(":")[2].partition(":")[2].split("/"):
            if component == plain or component.endswith(systemd):
                return True
    return False


def _namespace(pid: int | str, kind: str, proc: Path) -> tuple[int, int]:
    info = os.stat(proc / str(pid) / "ns" / kind)
    return info.st_dev, info.st_ino


def _parent(pid: int | str, proc: Path) -> int:
    # The command name in parentheses may hold spaces; the parent PID is the second field after it.
    return int((proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])


def _reference_processes(proc: Path) -> list[tuple[int | str, str]]:
    """Whose namespaces a pod's process never shares: virt-handler's own, and the host's, which are
    PID 1's and those of virt-handler's ancestors (the container runtime's shim and above; some hosts keep
    PID 1 out of reach even of root)."""
    found: list[tuple[int | str, str]] = [("self", "virt-handler's"), (1, "the host's")]
    pid = os.getppid()
    while pid > 1:
        found.append((pid, "the host's"))
        try:
            pid = _parent(pid, proc)
        except (OSError, ValueError, IndexError):
            break
    return found


def verify_peer(pid: int, pod_uid: str, *, proc: Path = PROC) -> None:
    """Raises :class:`PodSocketError` unless ``pid`` is a process of the pod ``pod_uid`` in namespaces
    of its own."""
    if not safepath.plain_name(pod_uid):
        raise PodSocketError(f"{pod_uid[:80]!r} is not a pod UID")
    try:
        cgroups = (proc / str(pid) / "cgroup").read_text()
        peer = {kind: _namespace(pid, kind, proc) for kind in CHECKED_NAMESPACES}
    except FileNotFoundError:
        raise PodSocketError(f"the process behind the socket (pid {pid}) is gone") from None
    if not _names_pod(cgroups, pod_uid):
        raise PodSocketError(f"the process behind the socket (pid {pid}) is not in pod {pod_uid}")
    for reference, whose in _reference_processes(proc):
        for kind in CHECKED_NAMESPACES:
            try:
                shared = peer[kind] == _namespace(reference, kind, proc)
            except (PermissionError, FileNotFoundError):
                continue  # out of reach, or gone meanwhile: nothing to compare with
            if shared:
                raise PodSocketError(
                    f"the process behind the socket (pid {pid}) is in {whose} {kind} namespace"
                )


def _peer_pidfd(connection: socket.socket) -> int | None:
    """A pidfd of the peer where the kernel gives one; it tells whether that very process still lives."""
    try:
        return int.from_bytes(connection.getsockopt(socket.SOL_SOCKET, _SO_PEERPIDFD, 4), "little")
    except OSError:
        return None


def pod_process(pods_dir: Path, parts: Sequence[str], name: str, pod_uid: str, *, proc: Path = PROC) -> int:
    """The PID of the pod's process serving ``name`` in ``pods_dir/parts...``, checked to be the pod's.

    The connection stays open while the peer is checked, and the check is confirmed against a pidfd of the
    peer where there is one: a PID reused meanwhile by another process does not pass.
    """
    with dial(pods_dir, parts, name) as connection:
        pid = peer_pid(connection)
        pidfd = _peer_pidfd(connection)
        try:
            verify_peer(pid, pod_uid, proc=proc)
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, 0)
        except ProcessLookupError:
            raise PodSocketError(f"the process behind the socket (pid {pid}) is gone") from None
        finally:
            if pidfd is not None:
                os.close(pidfd)
    return pid


def _launcher_pod(launcher_socket: Path) -> tuple[Path, str]:
    """The pods directory and pod UID of a socket path :func:`find_launcher_socket` returned."""
    parents = launcher_socket.parents
    if len(parents) < 5:
        raise PodSocketError(f"{launcher_socket}: not a launcher socket below a pods directory")
    pods_dir, pod_uid = parents[4], parents[3].name
    if launcher_socket != pods_dir.joinpath(*socket_dir(pod_uid), READY_SOCKET):
        raise PodSocketError(f"{launcher_socket}: not a launcher socket below a pods directory")
    return pods_dir, pod_uid


def launcher_pid(launcher_socket: Path) -> int:
    """The launcher's PID from its command socket, checked to be a process of the launcher's pod."""
    pods_dir, pod_uid = _launcher_pod(launcher_socket)
    return pod_process(pods_dir, socket_dir(pod_uid), READY_SOCKET, pod_uid)


def _launcher_socket_stat(launcher_socket: Path) -> os.stat_result:
    """The launcher's command socket itself, opened as every pod socket is (a link in its place is
    refused, not read)."""
    pods_dir, pod_uid = _launcher_pod(launcher_socket)
    fd = open_socket(pods_dir, socket_dir(pod_uid), READY_SOCKET)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def launcher_socket_owner(launcher_socket: Path) -> tuple[int, int]:
    """The uid and gid owning the launcher's command socket."""
    info = _launcher_socket_stat(launcher_socket)
    return info.st_uid, info.st_gid


def launcher_socket_identity(launcher_socket: Path) -> tuple[int, int]:
    """The device and inode of the launcher's command socket: a launcher that started again made a new
    one, which a client dialled through the old one's descriptor would never reach."""
    info = _launcher_socket_stat(launcher_socket)
    return info.st_dev, info.st_ino


def launcher_root(launcher_socket: Path) -> PodRoot:
    """The launcher pod's root filesystem, through the launcher process its command socket names."""
    return PodRoot.of_process(launcher_pid(launcher_socket))


def connect_launcher(launcher_socket: Path) -> LauncherClient:
    """A command client for the launcher whose socket :func:`find_launcher_socket` found.

    gRPC dials by path whenever it (re)connects, so it is given ``/proc/self/fd/<n>`` of the socket opened
    without following links, held open for the client's life: a link put in the socket's place later is
    never dialled.
    """
    pods_dir, pod_uid = _launcher_pod(launcher_socket)
    return LauncherClient(launcher_socket, path_fd=open_socket(pods_dir, socket_dir(pod_uid), READY_SOCKET))
