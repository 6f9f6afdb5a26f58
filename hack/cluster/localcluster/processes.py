"""Starting the cluster's daemons detached, recording them, and stopping exactly those again.

A record holds the PID and the kernel's start time of the process, so a reused PID is never signalled.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Record:
    name: str
    pid: int
    start_time: int


def _start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 (starttime), counted after the parenthesised command name which may contain spaces.
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def start(
    name: str,
    argv: list[str],
    *,
    pid_dir: Path,
    log_dir: Path,
    forks: bool = False,
    env: dict[str, str] | None = None,
) -> Record:
    """Starts ``argv`` detached. ``forks``: ``argv`` is a launcher that forks the daemon into new
    namespaces and waits for it (unshare, nsenter); the daemon is recorded, the launcher ends with it."""
    pid_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    pid = _forked_child(process.pid, log_path) if forks else process.pid
    start_time = _start_time(pid)
    if start_time is None:
        raise RuntimeError(f"{name} exited at once; see {log_path}")
    record = Record(name=name, pid=pid, start_time=start_time)
    (pid_dir / f"{name}.json").write_text(json.dumps(record.__dict__))
    (pid_dir / f"{name}.pid").write_text(f"{process.pid}\n")
    return record


def children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _forked_child(pid: int, log_path: Path, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while not (found := children(pid)):
        if _start_time(pid) is None or time.monotonic() > deadline:
            raise RuntimeError(f"pid {pid} started no process; see {log_path}")
        time.sleep(0.01)
    return found[0]


def recorded(pid_dir: Path) -> list[Record]:
    if not pid_dir.is_dir():
        return []
    records = [Record(**json.loads(path.read_text())) for path in pid_dir.glob("*.json")]
    return sorted(records, key=lambda record: record.start_time)


def alive(record: Record) -> bool:
    return _start_time(record.pid) == record.start_time


def stop(record: Record, *, grace: float = 10.0) -> bool:
    """SIGTERM, then SIGKILL after ``grace`` seconds; returns whether the process was still running."""
    if not alive(record):
        return False
    os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while alive(record):
        if time.monotonic() > deadline:
            os.kill(record.pid, signal.SIGKILL)
            deadline = time.monotonic() + grace
        time.sleep(0.05)
    return True


def forget(pid_dir: Path, name: str) -> None:
    """Removes what ``start`` recorded for ``name`` (a process stopped while the rest keep running)."""
    (pid_dir / f"{name}.json").unlink(missing_ok=True)
    (pid_dir / f"{name}.pid").unlink(missing_ok=True)


def processes_mentioning(path: Path) -> list[int]:
    """PIDs whose command line names ``path`` (e.g. container shims given our containerd socket)."""
    needle = str(path).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and _start_time(int(entry.name)) is not None:
            found.append(int(entry.name))
    return found
