"""Waiting for a condition that other threads or processes make true."""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(condition: Callable[[], bool], timeout: float = 20.0, interval: float = 0.05) -> None:
    """Returns once ``condition()`` holds; fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(interval)
