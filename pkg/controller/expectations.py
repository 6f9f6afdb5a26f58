"""Expectations: how many creations and deletions a controller still waits to see in its caches.

A controller that created N objects for a key must not act on that key again until its informers have
shown all N (or five minutes passed), or it would act on a stale cache and create them twice. This keeps
client-go's (and KubeVirt's) semantics: unknown keys and expired records count as satisfied.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["EXPECTATIONS_TIMEOUT", "ControllerExpectations", "UIDTrackingControllerExpectations"]

EXPECTATIONS_TIMEOUT = 5 * 60.0


@dataclass
class _Record:
    add: int
    delete: int
    timestamp: float
    uids: set[str] = field(default_factory=set)

    def fulfilled(self) -> bool:
        return self.add <= 0 and self.delete <= 0


class ControllerExpectations:
    """Pending creations and deletions per controller key; thread-safe."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}

    def set_expectations(self, key: str, add: int, delete: int) -> None:
        with self._lock:
            self._records[key] = _Record(add, delete, self._clock())

    def expect_creations(self, key: str, n: int) -> None:
        self.set_expectations(key, n, 0)

    def expect_deletions(self, key: str, n: int) -> None:
        self.set_expectations(key, 0, n)

    def raise_expectations(self, key: str, add: int, delete: int) -> None:
        with self._lock:
            record = self._records.get(key)
            if record is not None:
                record.add += add
                record.delete += delete

    def lower_expectations(self, key: str, add: int, delete: int) -> None:
        with self._lock:
            record = self._records.get(key)
            if record is not None:
                record.add -= add
                record.delete -= delete

    def creation_observed(self, key: str) -> None:
        self.lower_expectations(key, 1, 0)

    def deletion_observed(self, key: str) -> None:
        self.lower_expectations(key, 0, 1)

    def satisfied_expectations(self, key: str) -> bool:
        with self._lock:
            record = self._records.get(key)
            if record is None:
                return True
            return record.fulfilled() or self._clock() - record.timestamp > EXPECTATIONS_TIMEOUT

    def pending(self, key: str) -> tuple[int, int]:
        """The (creations, deletions) still expected for ``key``; (0, 0) when unknown."""
        with self._lock:
            record = self._records.get(key)
            return (record.add, record.delete) if record is not None else (0, 0)

    def delete_expectations(self, key: str) -> None:
        with self._lock:
            self._records.pop(key, None)


class UIDTrackingControllerExpectations(ControllerExpectations):
    """Expectations that also remember which objects (by uid) are expected to go away.

    A deletion is counted once per uid, so a delete event seen twice (a watch event and a relist's
    tombstone) does not lower the count twice.
    """

    def expect_deletions_by_uid(self, key: str, uids: Iterable[str]) -> None:
        expected = set(uids)
        with self._lock:
            self._records[key] = _Record(0, len(expected), self._clock(), expected)

    def deletion_observed_uid(self, key: str, uid: str) -> None:
        with self._lock:
            record = self._records.get(key)
            if record is not None and uid in record.uids:
                record.uids.discard(uid)
                record.delete -= 1

    def expected_deletion_uids(self, key: str) -> set[str]:
        with self._lock:
            record = self._records.get(key)
            return set(record.uids) if record is not None else set()
