"""Processes that look to virt-handler like a pod's, without a cluster.

virt-handler accepts a socket's peer as a pod's process only when its cgroup names the pod (``pod<uid>``,
as the kubelet's cgroupfs driver names it) and it has PID, mount and network namespaces of its own. These
helpers give a test process exactly that: a cgroup ``kubevirt-tests/pod<uid>`` joined before it runs, and
``unshare`` for the namespaces (a private ``/proc`` for the new PID namespace, so that programs that read
``/proc/<pid>`` of their children, libvirt among them, see their own).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

CGROUP_PARENT = "kubevirt-tests"


def _hierarchy() -> Path:
    """A cgroup hierarchy to place test pods in: the v1 ``pids`` one, or the unified one."""
    for candidate in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
        if (candidate / "cgroup.procs").exists():
            return candidate
    raise RuntimeError("no cgroup hierarchy to place test pods in")


def cgroup_of(pod_uid: str) -> Path:
    return _hierarchy() / CGROUP_PARENT / f"pod{pod_uid}"


def join_cgroup(pod_uid: str) -> Callable[[], None]:
    """A ``preexec_fn`` that moves the new process into the pod's cgroup (made if missing)."""
    path = cgroup_of(pod_uid)
    path.mkdir(parents=True, exist_ok=True)
    procs = str(path / "cgroup.procs")

    def join() -> None:
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))

    return join


def remove_cgroup(pod_uid: str, timeout: float = 10.0) -> None:
    """Removes the pod's cgroup once its processes are gone (the kernel refuses it before)."""
    path = cgroup_of(pod_uid)
    deadline = time.monotonic() + timeout
    while path.exists():
        try:
            path.rmdir()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def in_pod_namespaces(argv: Sequence[str], *, network: bool = True) -> list[str]:
    """``argv`` run in new PID (with its own ``/proc``) and mount namespaces, and a network namespace
    unless ``network`` is false (a caller already in a pod's network namespace keeps it). The process
    ``Popen`` returns is ``unshare``; it kills its child when it dies."""
    flags = ["--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc"]
    if network:
        flags.append("--net")
    return ["unshare", *flags, "--", *argv]


def children(pid: int) -> list[int]:
    """The PIDs of ``pid``'s children (the process ``unshare`` forked into the namespaces)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    with contextlib.suppress(OSError):
        return [int(child) for child in path.read_text().split()]
    return []


def wait_for_child(pid: int, timeout: float = 10.0) -> int:
    """The first child of ``pid`` (the namespaced process), waiting for ``unshare`` to fork it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = children(pid)
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError(f"process {pid} forked no child in {timeout} s")


def kill(process: subprocess.Popen[Any]) -> None:
    """Ends a process started through :func:`in_pod_namespaces` and its namespaces' processes: the child
    first, so that ``unshare`` reaps it (an orphan would wait for PID 1, which reaps slowly here)."""
    for child in children(process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)  # the PID namespace's init: all of the namespace goes with it
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    process.wait(10)


@contextlib.contextmanager
def pod_cgroup(pod_uid: str) -> Iterator[Callable[[], None]]:
    """The pod's cgroup for the block's processes (its ``preexec_fn``), removed after the block."""
    join = join_cgroup(pod_uid)
    try:
        yield join
    finally:
        remove_cgroup(pod_uid)
