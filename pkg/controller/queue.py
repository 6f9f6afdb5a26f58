"""A rate-limited, delaying work queue of keys with client-go's guarantees.

* A key waits in the queue at most once, however often it is added.
* A key is never handed to two workers at once: added again while being processed, it is queued only
  when the worker calls :meth:`RateLimitingQueue.done`.
* :meth:`~RateLimitingQueue.add_rate_limited` delays a key by the rate limiter (per-key exponential
  backoff under an overall token bucket); :meth:`~RateLimitingQueue.forget` resets its backoff.
* After :meth:`~RateLimitingQueue.shut_down` new adds are ignored, delayed keys are dropped, workers drain
  what is queued and then :meth:`~RateLimitingQueue.get` returns None.

Delayed keys need no thread of their own: waiting workers sleep until the earliest one is due.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable

from kubevirt.controller.metrics import QueueMetrics
from kubevirt.controller.ratelimit import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimitingQueue"]


class RateLimitingQueue:
    def __init__(
        self,
        name: str,
        *,
        rate_limiter: RateLimiter | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self._clock = clock
        self._rate_limiter = rate_limiter or default_controller_rate_limiter(clock=clock)
        self._cond = threading.Condition()
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: dict[str, float] = {}  # key -> when a worker took it
        self._queued_at: dict[str, float] = {}
        self._waiting: list[tuple[float, int, str]] = []  # heap of (ready time, tie breaker, key)
        self._ready_at: dict[str, float] = {}  # each delayed key's earliest ready time
        self._sequence = itertools.count()
        self._shutting_down = False
        self._metrics = QueueMetrics(name, self._processing_ages)

    # Adding.

    def add(self, key: str) -> None:
        with self._cond:
            self._add_locked(key)

    def add_after(self, key: str, seconds: float) -> None:
        """Adds ``key`` once ``seconds`` have passed (an earlier pending time for it wins)."""
        with self._cond:
            if self._shutting_down:
                return
            self._metrics.retries.inc()
            if seconds <= 0:
                self._add_locked(key)
                return
            ready = self._clock() + seconds
            earlier = self._ready_at.get(key)
            if earlier is not None and earlier <= ready:
                return
            self._ready_at[key] = ready
            heapq.heappush(self._waiting, (ready, next(self._sequence), key))
            self._cond.notify_all()  # a sleeping worker may need to wake earlier

    def add_rate_limited(self, key: str) -> None:
        self.add_after(key, self._rate_limiter.when(key))

    def forget(self, key: str) -> None:
        self._rate_limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        return self._rate_limiter.num_requeues(key)

    # Working.

    def get(self) -> str | None:
        """Blocks until a key is ready and returns it, or returns None once shut down and drained."""
        with self._cond:
            while True:
                if not self._shutting_down:
                    self._promote_due()
                if self._queue:
                    break
                if self._shutting_down:
                    return None
                timeout = self._waiting[0][0] - self._clock() if self._waiting else None
                self._cond.wait(timeout)
            key = self._queue.popleft()
            now = self._clock()
            self._metrics.depth.dec()
            queued_at = self._queued_at.pop(key, None)
            if queued_at is not None:
                self._metrics.latency.observe(max(0.0, now - queued_at))
            self._processing[key] = now
            self._dirty.discard(key)
            return key

    def done(self, key: str) -> None:
        """The worker finished ``key``; if it was added meanwhile, it is queued again now."""
        with self._cond:
            started = self._processing.pop(key, None)
            if started is not None:
                self._metrics.work_duration.observe(max(0.0, self._clock() - started))
            if key in self._dirty:
                self._enqueue(key)
                self._cond.notify()

    def shut_down(self) -> None:
        with self._cond:
            self._shutting_down = True
            self._waiting.clear()
            self._ready_at.clear()
            self._cond.notify_all()

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def __len__(self) -> int:
        with self._cond:
            if not self._shutting_down:
                self._promote_due()
            return len(self._queue)

    # Internals (the condition's lock held).

    def _add_locked(self, key: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._metrics.adds.inc()
        self._dirty.add(key)
        if key in self._processing:
            return
        self._enqueue(key)
        self._cond.notify()

    def _enqueue(self, key: str) -> None:
        self._queue.append(key)
        self._queued_at[key] = self._clock()
        self._metrics.depth.inc()

    def _promote_due(self) -> None:
        now = self._clock()
        while self._waiting and self._waiting[0][0] <= now:
            ready, _, key = heapq.heappop(self._waiting)
            if self._ready_at.get(key) != ready:
                continue  # superseded by an earlier time for the same key
            del self._ready_at[key]
            self._add_locked(key)

    def _processing_ages(self) -> list[float]:
        with self._cond:
            now = self._clock()
            return [now - started for started in self._processing.values()]
