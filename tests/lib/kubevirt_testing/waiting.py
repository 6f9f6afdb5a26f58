"""Waiting for a condition that other threads or processes make true."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(condition: Callable[[], bool], timeout: float = 20.0, interval: float = 0.05) -> None:
    """Returns once ``condition()`` holds; fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(interval)


def first_result(what: str, check: Callable[[], T], timeout: float, interval: float = 0.5) -> T:
    """``check()``'s first truthy result; fails the test, naming ``what``, after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(interval)
