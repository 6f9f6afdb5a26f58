"""A field of the VM that collides with its instance type, worded like KubeVirt's conflict errors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Conflict", "conflicts_message", "joined_paths"]

_CONFLICT_FMT = "VM field(s) {} conflicts with selected instance type"


@dataclass(frozen=True, slots=True)
class Conflict:
    """``path`` is the field as Kubernetes prints it; ``detail`` replaces the default message."""

    path: str
    detail: str = ""

    @classmethod
    def at(cls, base: str, *names: str) -> Conflict:
        return cls(".".join(part for part in (base, *names) if part))

    @property
    def message(self) -> str:
        return self.detail or _CONFLICT_FMT.format(self.path)


def conflicts_message(conflicts: Sequence[Conflict]) -> str:
    """All paths in one sentence, as KubeVirt's ``Conflicts.Error()`` writes them."""
    return _CONFLICT_FMT.format(joined_paths(conflicts))


def joined_paths(conflicts: Sequence[Conflict]) -> str:
    return ", ".join(conflict.path for conflict in conflicts)
