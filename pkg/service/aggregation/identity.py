"""The user the front proxy names in request headers (header names from its ConfigMap)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote


@dataclass
class RequestHeaderNames:
    """The headers carrying the user, taken from the API server's ConfigMap (KubeVirt's defaults first)."""

    user: list[str] = field(default_factory=lambda: ["X-Remote-User"])
    group: list[str] = field(default_factory=lambda: ["X-Remote-Group"])
    extra_prefixes: list[str] = field(default_factory=lambda: ["X-Remote-Extra-"])


def header_values(headers: Sequence[tuple[str, str]], names: Sequence[str]) -> list[str] | None:
    """The values of the first of ``names`` that is present (header names compare case-insensitively)."""
    for name in names:
        values = [value for key, value in headers if key.lower() == name.lower()]
        if values:
            return values
    return None


def header_extras(headers: Sequence[tuple[str, str]], prefixes: Sequence[str]) -> dict[str, list[str]]:
    """The user's extra attributes: each header under a prefix, keyed by the rest of its name decoded."""
    extras: dict[str, list[str]] = {}
    for prefix in prefixes:
        for key, value in headers:
            if key.lower().startswith(prefix.lower()):
                extras.setdefault(unquote(key[len(prefix) :].lower()), []).append(value)
    return extras
