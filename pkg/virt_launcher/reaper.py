"""Child-subreaper duty: adopt and reap the processes libvirt daemonises (QEMU) so no zombie lingers.

Without it an exited QEMU stays a zombie until PID 1 reaps it, and libvirt waits for it to disappear
(seconds on hosts whose init reaps slowly). Processes started with :mod:`subprocess` and registered here
keep their exit status for their owner.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

_PR_SET_CHILD_SUBREAPER = 36
P = TypeVar("P", bound="subprocess.Popen[Any]")
_lock = threading.Lock()
_owned: set[int] = set()
_started = False


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux only); False if refused."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def start_owned(start: Callable[[], P]) -> P:
    """Start a child (``start`` makes the ``subprocess.Popen``) whose exit status its owner collects.

    The child is registered before the reaper can look at it: a child that exits at once would
    otherwise be reaped first, and its owner would read a made-up status of 0.
    """
    with _lock:
        process = start()
        _owned.add(process.pid)
    return process


def forget(pid: int) -> None:
    with _lock:
        _owned.discard(pid)


def start_reaping(interval: float = 0.1) -> None:
    """Reap adopted orphans on a background thread."""
    global _started
    with _lock:
        if _started:
            return
        _started = True
    threading.Thread(target=_reap_forever, args=(interval,), name="reaper", daemon=True).start()


def _reap_forever(interval: float) -> None:
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            time.sleep(interval)
            continue
        if info is None:
            continue
        with _lock:
            owned = info.si_pid in _owned
        if owned:
            time.sleep(interval)  # its owner collects the status
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitpid(info.si_pid, 0)
