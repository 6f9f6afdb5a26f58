"""Timing the steps of a long command and printing each as it finishes."""

from __future__ import annotations

import time
from collections.abc import Iterator
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
