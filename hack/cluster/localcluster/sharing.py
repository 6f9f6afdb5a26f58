"""One cluster shared by concurrent test sessions: a lock serializes cluster-up and cluster-down, and a
cluster that test sessions started is stopped by the last of them to finish, never under another one."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .layout import Layout


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Holds an exclusive lock on ``path`` (created if missing) for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cluster_lock(layout: Layout) -> Path:
    return layout.state / "lock"


def _users(layout: Layout) -> Path:
    return layout.run / "test-sessions"


def _started_by_tests(layout: Layout) -> Path:
    return layout.run / "started-by-tests"


def mark_started_by_tests(layout: Layout) -> None:
    _started_by_tests(layout).touch()


def join(layout: Layout) -> None:
    _users(layout).mkdir(parents=True, exist_ok=True)
    (_users(layout) / str(os.getpid())).touch()


def leave(layout: Layout) -> bool:
    """Unregisters this session; returns whether it should stop the cluster (tests started it and no
    other session is still using it)."""
    users = _users(layout)
    (users / str(os.getpid())).unlink(missing_ok=True)
    if users.is_dir():
        for entry in users.iterdir():
            if not Path(f"/proc/{entry.name}").exists():
                entry.unlink()  # a session that died without leaving
    alone = not users.is_dir() or not any(users.iterdir())
    return alone and _started_by_tests(layout).exists()
