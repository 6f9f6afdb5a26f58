"""An event sink that records what it is given, for tests of components that emit Kubernetes events."""

from __future__ import annotations

from typing import Any


class RecordedEvents:
    """``seen`` holds ``(type, reason, message)`` of every event, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.seen.append((event_type, reason, message))
