"""Rate limiters deciding how long a failed key waits before it is processed again (client-go's)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]


class RateLimiter(Protocol):
    def when(self, key: str) -> float:
        """Seconds ``key`` must wait now; counts as one more failure of it."""
        ...

    def forget(self, key: str) -> None:
        """The key succeeded: its failure history is dropped."""
        ...

    def num_requeues(self, key: str) -> int: ...


class ItemExponentialFailureRateLimiter:
    """``base * 2**failures`` per key, capped at ``max_delay``."""

    def __init__(self, base_delay: float, max_delay: float) -> None:
        self._base = base_delay
        self._max = max_delay
        self._lock = threading.Lock()
        self._failures: dict[str, int] = {}

    def when(self, key: str) -> float:
        with self._lock:
            exponent = self._failures.get(key, 0)
            self._failures[key] = exponent + 1
        if exponent >= 64:  # far beyond any useful cap; avoids huge floats
            return self._max
        return min(self._base * 2.0**exponent, self._max)

    def forget(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        with self._lock:
            return self._failures.get(key, 0)


class BucketRateLimiter:
    """An overall token bucket (``qps`` tokens a second, at most ``burst`` saved) shared by all keys."""

    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._rate = qps
        self._burst = float(burst)
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock()

    def when(self, key: str) -> float:
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self._rate

    def forget(self, key: str) -> None:
        return None

    def num_requeues(self, key: str) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest wait any of the limiters asks for."""

    def __init__(self, limiters: Sequence[RateLimiter]) -> None:
        self._limiters = list(limiters)

    def when(self, key: str) -> float:
        return max(limiter.when(key) for limiter in self._limiters)

    def forget(self, key: str) -> None:
        for limiter in self._limiters:
            limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        return max(limiter.num_requeues(key) for limiter in self._limiters)


def default_controller_rate_limiter(*, clock: Callable[[], float] = time.monotonic) -> MaxOfRateLimiter:
    """client-go's default: 5 ms doubling to 1000 s per key, under 10 qps with a burst of 100."""
    return MaxOfRateLimiter(
        [ItemExponentialFailureRateLimiter(0.005, 1000.0), BucketRateLimiter(10.0, 100, clock=clock)]
    )
