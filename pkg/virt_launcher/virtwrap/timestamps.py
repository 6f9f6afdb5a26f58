"""Timestamps as KubeVirt writes them into the domain metadata and the domain JSON."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """Go's ``time.Time`` as XML text: RFC 3339 in UTC, fractional seconds without trailing zeros."""
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".")
    return text + "Z"


def json_time(moment: datetime) -> str:
    # metav1.Time marshals to JSON with second precision.
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
