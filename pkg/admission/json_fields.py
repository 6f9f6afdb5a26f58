"""Tolerant readers for JSON objects: absent or mistyped values read as Go's zero values.

A rule runs on what the schema check let through, but must also survive anything (property tests feed
it arbitrary objects), so every read goes through these helpers instead of indexing.
"""

from __future__ import annotations

from kubevirt_api.view import JSON


def obj(data: object, key: str) -> JSON:
    """``data[key]`` when it is an object, else ``{}``."""
    if isinstance(data, dict):
        value = data.get(key)
        if isinstance(value, dict):
            return value
    return {}


def opt_obj(data: object, key: str) -> JSON | None:
    """``data[key]`` when it is an object, else ``None`` (Go's nil pointer)."""
    if isinstance(data, dict):
        value = data.get(key)
        if isinstance(value, dict):
            return value
    return None


def items(data: object, key: str) -> list[JSON]:
    """``data[key]`` as a list of objects; non-object entries read as empty objects."""
    if isinstance(data, dict):
        value = data.get(key)
        if isinstance(value, list):
            return [entry if isinstance(entry, dict) else {} for entry in value]
    return []


def has(data: object, key: str) -> bool:
    """Whether ``key`` is set (present and not null), like a non-nil Go pointer."""
    return isinstance(data, dict) and data.get(key) is not None


def text(data: object, key: str) -> str:
    if isinstance(data, dict):
        value = data.get(key)
        if isinstance(value, str):
            return value
    return ""


def opt_text(data: object, key: str) -> str | None:
    if isinstance(data, dict):
        value = data.get(key)
        if isinstance(value, str):
            return value
    return None


def flag(data: object, key: str) -> bool:
    return isinstance(data, dict) and data.get(key) is True


def opt_flag(data: object, key: str) -> bool | None:
    if isinstance(data, dict):
        value = data.get(key)
        if isinstance(value, bool):
            return value
    return None


def integer(data: object, key: str) -> int:
    if isinstance(data, dict):
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    return 0


def opt_integer(data: object, key: str) -> int | None:
    if isinstance(data, dict) and data.get(key) is not None:
        return integer(data, key)
    return None


def string_map(data: object, key: str) -> dict[str, str]:
    if isinstance(data, dict):
        value = data.get(key)
        if isinstance(value, dict):
            return {str(k): v if isinstance(v, str) else str(v) for k, v in value.items()}
    return {}
