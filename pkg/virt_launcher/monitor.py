"""virt-launcher-monitor: the compute container's first process.

It runs virt-launcher with its own arguments (less ``--keep-after-failure``), turns every stop signal into
one SIGTERM for the launcher, reaps whatever the container orphans, and once the launcher is gone makes
sure no QEMU outlives it and empties the container-disk directory (``--container-disk-dir``): each disk
container exits when its socket there is gone, so the pod completes (as after a migration away). Its exit
code is the launcher's (1 when a QEMU would not stop). A non-root monitor holding NET_BIND_SERVICE
starts the launcher with it ambient, as KubeVirt's does (:mod:`.ambient_caps`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kubevirt.virt_launcher import COMPONENT
from kubevirt.virt_launcher.ambient_caps import ambient_raiser

KEEP_AFTER_FAILURE = "--keep-after-failure"
CONTAINER_DISK_DIR = "--container-disk-dir"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)
QEMU_STOP_TIMEOUT = 10.0
_PR_SET_CHILD_SUBREAPER = 36


def launcher_arguments(argv: Sequence[str]) -> tuple[list[str], bool]:
    """The launcher's arguments and whether to stay alive after it failed."""
    keep = KEEP_AFTER_FAILURE in argv
    return [arg for arg in argv if arg != KEEP_AFTER_FAILURE], keep


def container_disk_dir(argv: Sequence[str]) -> Path | None:
    """The directory the launcher's disk containers announce themselves in, if given."""
    for i, arg in enumerate(argv):
        if arg == CONTAINER_DISK_DIR and i + 1 < len(argv):
            return Path(argv[i + 1])
        if arg.startswith(CONTAINER_DISK_DIR + "="):
            return Path(arg.split("=", 1)[1])
    return None


def empty_directory(directory: Path) -> list[str]:
    """Removes what ``directory`` holds (not the directory); the entries that could not go, with why
    (an image virt-handler still has bind-mounted there stays until it unmounts it)."""
    left: list[str] = []
    with contextlib.suppress(FileNotFoundError):
        for entry in directory.iterdir():
            try:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            except OSError as err:
                left.append(f"{entry.name}: {err.strerror}")
    return left


def _parent(pid: int, proc: Path) -> int:
    # /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
    stat = (proc / str(pid) / "stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def qemu_processes(ancestor: int | None = None, proc: Path = Path("/proc")) -> list[int]:
    """PIDs of QEMU system emulators descending from ``ancestor`` (default: this process)."""
    ancestor = os.getpid() if ancestor is None else ancestor
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            name = (entry / "comm").read_text().strip()
            if not (name.startswith("qemu-system") or name == "qemu-kvm"):
                continue
            pid = int(entry.name)
            while pid > 1 and pid != ancestor:
                pid = _parent(pid, proc)
            if pid == ancestor:
                found.append(int(entry.name))
    return found


def _become_subreaper() -> None:
    # Orphans of the launcher (libvirtd's children) are then ours to reap, not PID 1's of the host.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _reap_others(launcher_pid: int) -> int | None:
    """Reap every exited child; return the launcher's exit code if it was among them."""
    code = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code
        if pid == 0:
            return code
        if pid == launcher_pid:
            code = os.waitstatus_to_exitcode(status)
            code = 128 - code if code < 0 else code


def stop_qemu(timeout: float = QEMU_STOP_TIMEOUT, find: Callable[[], list[int]] = qemu_processes) -> bool:
    """SIGTERM every leftover QEMU and wait for them; False if one is still there after ``timeout``."""
    pids = find()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        time.sleep(0.2)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(-1, os.WNOHANG)
        pids = find()
    return not pids


def _logger() -> Any:
    from kubevirt.log import get_logger

    return get_logger(component=COMPONENT)


def run(argv: Sequence[str], launcher: str = "virt-launcher", logger: Callable[[], Any] = _logger) -> int:
    """Run the launcher until it exits. ``logger`` makes the log on first use: the monitor logs only once
    the launcher is gone or a signal came, and loading logging (~0.1 CPU-seconds) at its start would
    delay the launcher under the pod's CPU limit."""
    args, keep_after_failure = launcher_arguments(argv)
    _become_subreaper()
    child = subprocess.Popen([launcher, *args], preexec_fn=ambient_raiser())
    log_once = functools.cache(logger)

    def forward(signum: int, _frame: object) -> None:
        log_once().info("forwarding a stop signal to virt-launcher", signal=signal.Signals(signum).name)
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGTERM)

    for sig in STOP_SIGNALS:
        signal.signal(sig, forward)
    code: int | None = None
    while code is None:
        time.sleep(0.2)
        code = _reap_others(child.pid)
    log = log_once()
    log.info("virt-launcher exited", exit_code=code)
    if not stop_qemu():
        log.error("a QEMU process did not stop after virt-launcher exited")
        code = 1
    disks = container_disk_dir(args)
    if disks is not None:
        left = empty_directory(disks)
        if left:
            log.warning("could not empty the container-disk directory", directory=str(disks), left=left)
    if code != 0 and keep_after_failure:
        log.info("keeping the container alive after the failure", exit_code=code)
        while True:
            signal.pause()
    return code
