"""Bounds on every object read from outside (webhook reviews, REST bodies, manifests, virt-launcher's
requests), checked before any rule or model sees it.

The API server refuses request bodies above 3 MiB, so no stored object is larger; this is the size
limit for a manifest and for each object inside an AdmissionReview. Nesting is bounded far below what
the recursive steps (deep copies, model parsing, the schema walk) can take: the deepest path any
KubeVirt type declares is about a dozen levels, and unknown fields kept as they are add little more.

The module imports neither pydantic nor the API types, and sits outside every component: virt-api,
virtctl and virt-launcher (which must stay small) all read their input through it.
"""

from __future__ import annotations

import json
from typing import Any, Final

# The API server's limit on a request body, hence on any object it stores.
MAX_OBJECT_BYTES: Final = 3 * 1024 * 1024
# Objects and lists inside one another; a scalar adds no level.
MAX_NESTING_DEPTH: Final = 100
# Every JSON value takes at least one byte, so an object within MAX_OBJECT_BYTES holds fewer values;
# more can only come from YAML aliases repeating a subtree.
MAX_VALUES: Final = MAX_OBJECT_BYTES


class InputLimitError(ValueError):
    """The input exceeds one of the limits above; the message says which, and where."""


def check_size(size: int, what: str = "object") -> None:
    if size > MAX_OBJECT_BYTES:
        raise InputLimitError(f"{what} is larger than the limit of {MAX_OBJECT_BYTES} bytes")


def check_nesting(value: Any) -> None:
    """Raises :class:`InputLimitError` when ``value`` nests deeper than ``MAX_NESTING_DEPTH`` or holds
    more than ``MAX_VALUES`` values; walks without recursion, so any input is safe to check."""
    # Containers only go on the stack; scalars are just counted.
    stack: list[tuple[dict[Any, Any] | list[Any], int]] = []
    seen = 1
    if isinstance(value, dict | list):
        stack.append((value, 1))
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        seen += len(children)
        if seen > MAX_VALUES:
            raise InputLimitError(f"more than {MAX_VALUES} values (repeated YAML aliases?)")
        if depth >= MAX_NESTING_DEPTH:
            if any(isinstance(child, dict | list) for child in children):
                raise InputLimitError(f"nested deeper than {MAX_NESTING_DEPTH} levels at {_deep_path(value)}")
            continue
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def _deep_path(value: Any) -> str:
    """The path to the first object or list below the nesting limit (called once one is known to exist)."""
    # Each entry: a container, its depth, and the way to it as (key, way to the parent) links.
    stack: list[tuple[Any, int, tuple[str | int, Any] | None]] = [(value, 1, None)]
    while stack:
        node, depth, way = stack.pop()
        entries = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in entries:
            if isinstance(child, dict | list):
                if depth >= MAX_NESTING_DEPTH:
                    return _path((key, way))
                stack.append((child, depth + 1, (key, way)))
    return ""


def _path(way: tuple[str | int, Any] | None) -> str:
    """``spec.disks[0].name`` from the links; keys are escaped, so the message stays on one line."""
    text = ""
    while way is not None:
        key, way = way
        if isinstance(key, int):
            text = f"[{key}]{text}"
        else:
            escaped = str(key).encode("unicode_escape").decode("ascii")
            text = f".{escaped}{text}" if way is not None else f"{escaped}{text}"
    return text


def load_json(data: str | bytes, what: str = "object") -> Any:
    """``json.loads`` within the limits; every failure is a ``ValueError`` with a one-line reason."""
    check_size(len(data), what)
    try:
        value = json.loads(data)
    except RecursionError:
        raise InputLimitError(f"{what} is nested deeper than {MAX_NESTING_DEPTH} levels") from None
    check_nesting(value)
    return value
