"""RFC 6902 JSON patches computed from a before/after pair, and applied back (for tests and tools)."""

from __future__ import annotations

import copy
from typing import Any

Patch = list[dict[str, Any]]


def escape(token: str) -> str:
    """One JSON-pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def diff(before: Any, after: Any, path: str = "") -> Patch:
    """The smallest-effort patch turning ``before`` into ``after``.

    Objects are compared key by key; lists that differ are replaced whole (a list diff by index would
    be fragile against concurrent edits, and KubeVirt never patches list items by index either).
    """
    if isinstance(before, dict) and isinstance(after, dict):
        ops: Patch = []
        for key in before:
            if key not in after:
                ops.append({"op": "remove", "path": f"{path}/{escape(key)}"})
        for key, value in after.items():
            sub = f"{path}/{escape(key)}"
            if key not in before:
                ops.append({"op": "add", "path": sub, "value": copy.deepcopy(value)})
            else:
                ops.extend(diff(before[key], value, sub))
        return ops
    if before == after and type(before) is type(after):
        return []
    return [{"op": "replace", "path": path, "value": copy.deepcopy(after)}]


def top_level(before: dict[str, Any], after: dict[str, Any], keys: tuple[str, ...]) -> Patch:
    """Whole-field ``replace``/``add`` operations for the listed top-level keys that changed.

    This is the shape KubeVirt's mutating webhooks answer with (``replace /spec``, ``/metadata``,
    ``/status``), which keeps the patch independent of how deep the defaults reach.
    """
    ops: Patch = []
    for key in keys:
        if key not in after:
            continue
        if key not in before:
            ops.append({"op": "add", "path": f"/{escape(key)}", "value": copy.deepcopy(after[key])})
        elif before[key] != after[key]:
            ops.append({"op": "replace", "path": f"/{escape(key)}", "value": copy.deepcopy(after[key])})
    return ops


class PatchError(ValueError):
    """A patch that does not apply to the document."""


def _walk(document: Any, tokens: list[str]) -> Any:
    node = document
    for token in tokens:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"path component {token!r} not found")
            node = node[token]
        elif isinstance(node, list):
            try:
                node = node[int(token)]
            except (ValueError, IndexError):
                raise PatchError(f"bad list index {token!r}") from None
        else:
            raise PatchError(f"cannot descend into {type(node).__name__} at {token!r}")
    return node


def apply(document: Any, patch: Patch) -> Any:
    """Apply ``add``/``remove``/``replace``/``test`` operations; returns a new document."""
    result = copy.deepcopy(document)
    for op in patch:
        pointer = op["path"]
        if pointer == "":
            if op["op"] in ("add", "replace"):
                result = copy.deepcopy(op["value"])
                continue
            raise PatchError(f"unsupported operation on the root: {op['op']}")
        tokens = [_unescape(t) for t in pointer.split("/")[1:]]
        parent = _walk(result, tokens[:-1])
        last = tokens[-1]
        kind = op["op"]
        if kind == "test":
            if _walk(result, tokens) != op["value"]:
                raise PatchError(f"test failed at {pointer}")
            continue
        if isinstance(parent, dict):
            if kind in ("remove", "replace") and last not in parent:
                raise PatchError(f"{pointer} does not exist")
            if kind == "remove":
                del parent[last]
            else:
                parent[last] = copy.deepcopy(op["value"])
        elif isinstance(parent, list):
            position = len(parent) if last == "-" else int(last)
            if kind == "add":
                parent.insert(position, copy.deepcopy(op["value"]))
            elif kind == "remove":
                del parent[position]
            else:
                parent[position] = copy.deepcopy(op["value"])
        else:
            raise PatchError(f"cannot patch inside {type(parent).__name__} at {pointer}")
    return result
