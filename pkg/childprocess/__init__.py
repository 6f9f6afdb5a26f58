"""Child processes whose exit status their owner collects, even beside a process that reaps orphans.

virt-launcher is a child subreaper that reaps every exited child it is not told about (see
``kubevirt.virt_launcher.reaper``); a child registered here is left to its owner, who would otherwise
read a made-up exit status of 0 (Python reports a child already reaped as a success).
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar


class Child(Protocol):
    """A started child: a ``subprocess.Popen`` or anything else that knows its process ID."""

    @property
    def pid(self) -> int: ...


P = TypeVar("P", bound=Child)
_lock = threading.Lock()
_owned: set[int] = set()


def start_owned(start: Callable[[], P]) -> P:
    """Start a child (``start`` makes the ``subprocess.Popen``) whose exit status its owner collects.

    The child is registered before a reaper can look at it: one that exits at once would otherwise be
    reaped first.
    """
    with _lock:
        process = start()
        _owned.add(process.pid)
    return process


def forget(pid: int) -> None:
    with _lock:
        _owned.discard(pid)


def owned(pid: int) -> bool:
    with _lock:
        return pid in _owned


def run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` (text output captured, no check) of an owned child."""
    process = start_owned(
        lambda: subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    )
    try:
        stdout, stderr = process.communicate()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        forget(process.pid)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
