"""Kubernetes timestamps (``metav1.Time``, RFC 3339) read leniently: absent or unreadable is None."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["parse_timestamp"]


def parse_timestamp(value: Any) -> datetime | None:
    """The moment ``value`` names, in UTC when it carries no zone; None for anything else."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
