"""Go's zero-value reading of JSON objects for admission: absent or mistyped values read as zero values.

A rule runs on what the schema check let through, but must also survive anything (property tests feed
it arbitrary objects), as KubeVirt's webhooks reading typed structs do; every read goes through these
helpers instead of indexing. What counts as a string, number, bool or list is the field reader's
(:mod:`kubevirt_api.view`'s ``as_*``); where the view raises for a wrong type, these read the zero value.
They take and give plain dicts (rules pass them around and mutators change them in place), and each is a
dict lookup and a type test: admission reads thousands of fields per request.
"""

from __future__ import annotations

from kubevirt_api.view import JSON, as_boolean, as_integer, as_list, as_string


def _get(data: object, key: str) -> object:
    return data.get(key) if isinstance(data, dict) else None


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
    return [entry if isinstance(entry, dict) else {} for entry in as_list(_get(data, key)) or ()]


def has(data: object, key: str) -> bool:
    """Whether ``key`` is set (present and not null), like a non-nil Go pointer."""
    return isinstance(data, dict) and data.get(key) is not None


def text(data: object, key: str) -> str:
    return as_string(_get(data, key)) or ""


def opt_text(data: object, key: str) -> str | None:
    return as_string(_get(data, key))


def flag(data: object, key: str) -> bool:
    return as_boolean(_get(data, key)) is True


def opt_flag(data: object, key: str) -> bool | None:
    return as_boolean(_get(data, key))


def integer(data: object, key: str) -> int:
    return as_integer(_get(data, key)) or 0


def opt_integer(data: object, key: str) -> int | None:
    return integer(data, key) if has(data, key) else None


def string_map(data: object, key: str) -> dict[str, str]:
    return {str(k): v if isinstance(v, str) else str(v) for k, v in obj(data, key).items()}
