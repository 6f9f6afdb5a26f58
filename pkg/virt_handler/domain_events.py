"""The last change of each VMI's domain that virt-handler saw, for diagnosis.

virt-handler reads the domain from the launcher on every reconcile; each time its state or reason is
not what it was the time before, that is recorded as an event (``Added`` when a domain appeared,
``Modified``, ``Deleted`` when it went away), with when it was seen. Only the newest is kept per VMI, and
only for VMIs still on the node: the VM controller drops the others.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from kubevirt.virt_handler.phase import domain_state
from kubevirt_api.view import JSON

ADDED, MODIFIED, DELETED = "Added", "Modified", "Deleted"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class DomainEvent:
    type: str
    status: str
    reason: str
    timestamp: str

    def to_json(self) -> JSON:
        return {"type": self.type, "status": self.status, "reason": self.reason, "timestamp": self.timestamp}


class DomainEventLog:
    def __init__(self, now: Callable[[], str] = _now) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._state: dict[str, tuple[str, str] | None] = {}
        self._last: dict[str, DomainEvent] = {}

    def observe(self, uid: str, domain: JSON | None) -> None:
        """Records ``domain`` (None: there is none) if it differs from what was seen last for ``uid``."""
        state = domain_state(domain) if domain is not None else None
        with self._lock:
            before = self._state.get(uid)
            if uid in self._state and before == state:
                return
            self._state[uid] = state
            if state is None:
                if before is not None:
                    self._last[uid] = DomainEvent(DELETED, *before, self._now())
                return
            kind = ADDED if before is None else MODIFIED
            self._last[uid] = DomainEvent(kind, *state, self._now())

    def last(self, uid: str) -> DomainEvent | None:
        with self._lock:
            return self._last.get(uid)

    def forget(self, uid: str) -> None:
        with self._lock:
            self._state.pop(uid, None)
            self._last.pop(uid, None)

    def forget_all_but(self, uids: Iterable[str]) -> None:
        """Drops what was seen of every VMI but ``uids`` (those that left without a final phase)."""
        keep = set(uids)
        with self._lock:
            for uid in [uid for uid in self._state if uid not in keep]:
                del self._state[uid]
            for uid in [uid for uid in self._last if uid not in keep]:
                del self._last[uid]
