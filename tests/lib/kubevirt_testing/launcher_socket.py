"""A launcher's command socket in a pod's ``sockets`` emptyDir, laid out the way the kubelet mounts it."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

from kubevirt.handler_launcher_com.sockets import READY_SOCKET, SOCKETS_DIR

EMPTY_DIRS = Path("volumes/kubernetes.io~empty-dir")


def sockets_dir(pods_dir: Path, pod_uid: str) -> Path:
    return pods_dir / pod_uid / EMPTY_DIRS / SOCKETS_DIR


@contextlib.contextmanager
def launcher_socket(pods_dir: Path, pod_uid: str, *, listening: bool = True) -> Iterator[Path]:
    """The pod's ready socket: listening, or left by a killed launcher (the file stays, nobody listens)."""
    directory = sockets_dir(pods_dir, pod_uid)
    directory.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    with contextlib.chdir(directory):  # relative: the temporary path is too long for a socket address
        server.bind(READY_SOCKET)
    if listening:
        server.listen()
    else:
        server.close()
    try:
        yield directory / READY_SOCKET
    finally:
        server.close()
