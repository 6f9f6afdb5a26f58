"""Child-subreaper duty: adopt and reap the processes libvirt daemonises (QEMU) so no zombie lingers.

Without it an exited QEMU stays a zombie until PID 1 reaps it, and libvirt waits for it to disappear
(seconds on hosts whose init reaps slowly). Processes started with :mod:`subprocess` and registered here
keep their exit status for their owner.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import time

from kubevirt.childprocess import forget, owned, start_owned

__all__ = ["become_subreaper", "forget", "owned", "start_owned", "start_reaping"]

_PR_SET_CHILD_SUBREAPER = 36
_lock = threading.Lock()
_started = False


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux only); False if refused."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


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
        if owned(info.si_pid):
            time.sleep(interval)  # its owner collects the status
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitpid(info.si_pid, 0)
