"""Running code inside another process's network namespace.

``setns(2)`` changes the namespace of the calling thread only, so the work runs on a short-lived
thread of its own: sockets it opens (netlink, nftables) and processes it starts belong to the pod's
namespace, while the rest of the process stays where it was.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

CLONE_NEWNET = 0x40000000
T = TypeVar("T")

_libc = ctypes.CDLL(None, use_errno=True)


class NamespaceError(OSError):
    """The namespace could not be entered."""


def netns_path(pid: int) -> Path:
    return Path(f"/proc/{pid}/ns/net")


def _enter(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise NamespaceError(err, f"entering network namespace {path}: {os.strerror(err)}")
    finally:
        os.close(fd)


def run_in_netns(path: Path, work: Callable[[], T]) -> T:
    """``work()`` on a thread inside the network namespace at ``path``; its result or its exception."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            _enter(path)
            outcome.append(work())
        except BaseException as err:  # handed to the caller's thread below
            failure.append(err)

    thread = threading.Thread(target=target, name="netns", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]
