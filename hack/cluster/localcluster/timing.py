"""Timing the steps of a long command and printing each as it finishes."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Timer:
    def __init__(self, *, quiet: bool = False) -> None:
        self.steps: list[tuple[str, float]] = []
        self.started = time.monotonic()
        self.quiet = quiet

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        yield
        elapsed = time.monotonic() - began
        self.steps.append((name, elapsed))
        if not self.quiet:
            print(f"  {name:<44} {elapsed:6.1f} s", flush=True)

    @property
    def total(self) -> float:
        return time.monotonic() - self.started


def poll_seconds(what: str, check: Callable[[], bool], timeout: float, interval: float = 0.1) -> float:
    """Seconds until ``check`` holds; AssertionError naming ``what`` after ``timeout``."""
    began = time.monotonic()
    while not check():
        if time.monotonic() - began > timeout:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)
    return time.monotonic() - began


def median(values: list[float]) -> float:
    """The median, rounded to hundredths (how the benchmarks print seconds)."""
    return round(statistics.median(values), 2)


def say(line: str) -> None:
    """A progress line of a long command, shown at once."""
    print(line, flush=True)
