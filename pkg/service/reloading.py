"""A value built from files that other processes renew (a certificate and its key, a CA bundle), rebuilt
when a cheap stamp of its inputs (modification times, the bundle's text) changes.

The server and client TLS contexts both follow virt-operator's rotations this way: the stamp is looked at
no more often than an interval, and a rebuild that fails (a renewal caught half written) keeps the value in
use until the next look, so a rotation never breaks what is serving.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

S = TypeVar("S")
T = TypeVar("T")

# What a rebuild may fail with while a renewal is being written.
RENEWAL_ERRORS = (OSError, ssl.SSLError)


def modification_times(*paths: Path) -> tuple[int, ...]:
    """The files' modification times in nanoseconds; raises OSError when one cannot be read."""
    return tuple(path.stat().st_mtime_ns for path in paths)


class Reloading(Generic[S, T]):
    """``build(stamp)`` kept current: rebuilt when ``stamp()`` gives something new.

    The first build happens on the first :meth:`current` or :meth:`refresh`, and its errors are the
    caller's. Later, an unreadable stamp (OSError) or a failing rebuild is logged and the last value kept;
    the next look tries again."""

    def __init__(
        self,
        stamp: Callable[[], S],
        build: Callable[[S], T],
        *,
        log: Any,
        renewed: str,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stamp_of = stamp
        self._build = build
        self._log = log
        self._renewed = renewed
        self.interval = interval
        self._clock = clock
        self._built: tuple[S, T] | None = None
        self._looked_at: float | None = None

    @property
    def stamp(self) -> S | None:
        """The stamp of the value in use (None before the first build)."""
        return None if self._built is None else self._built[0]

    @property
    def in_use(self) -> T:
        """The value in use, without looking at the stamp (built already)."""
        if self._built is None:
            raise RuntimeError("not built yet: refresh() first")
        return self._built[1]

    def current(self) -> T:
        """The value, looked at again when ``interval`` has passed since the last look."""
        now = self._clock()
        if self._looked_at is None or now - self._looked_at >= self.interval or self._built is None:
            self._looked_at = now
            self.refresh()  # builds, or raises, the first time
        return self.in_use

    def refresh(self) -> bool:
        """Looks at the stamp now; returns whether a renewed value replaced the one in use."""
        try:
            stamp = self._stamp_of()
        except OSError as err:
            if self._built is None:
                raise
            self._log.warning("renewed files unreadable, keeping the ones in use", reason=str(err))
            return False
        if self._built is not None and stamp == self._built[0]:
            return False
        try:
            fresh = self._build(stamp)
        except RENEWAL_ERRORS as err:
            if self._built is None:
                raise
            # Likely mid-rotation (certificate written, key not yet): try again on the next look.
            self._log.warning("renewal not loadable yet, keeping the one in use", reason=str(err))
            return False
        renewal = self._built is not None
        self._built = (stamp, fresh)
        if renewal:
            self._log.info(self._renewed)
        return renewal
