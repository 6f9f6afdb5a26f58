"""What one link of the walk found: a status, one sentence, and the evidence behind it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kubevirt.client import JSON

__all__ = ["Link", "Status"]


class Status(StrEnum):
    OK = "ok"
    BROKEN = "broken"  # the walk stops here: this is the answer
    UNKNOWN = "unknown"  # could not be seen (RBAC, an API failure) or not reached from the API
    SKIPPED = "skipped"  # does not apply to this object (no migration, say)


@dataclass(frozen=True)
class Link:
    name: str
    status: Status
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> JSON:
        return {
            "link": self.name,
            "status": self.status.value,
            "message": self.message,
            "evidence": self.evidence,
        }
