"""A scripted list/watch source for informer tests, and a poll for conditions met on other threads."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from kubevirt_testing.listwatch import FakeListWatcher
from kubevirt_testing.waiting import eventually

# The queue and informer threads answer within milliseconds: poll often, give up soon.
wait_until = functools.partial(eventually, timeout=5.0, interval=0.005)


class FakeClock:
    """A monotonic clock that moves only when a test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def source() -> FakeListWatcher:
    return FakeListWatcher()


@pytest.fixture
def eventually() -> Callable[..., None]:
    return wait_until
