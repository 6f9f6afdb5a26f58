"""RFC 6902 JSON patches computed from a before/after pair, and applied (for tests, tools, and the
patches users write: a restore's ``spec.patches``, the KubeVirt CR's ``customizeComponents``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
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


def apply(document: Any, patch: Patch, *, replace_sets_missing_keys: bool = False) -> Any:
    """Apply RFC 6902 operations (``add``, ``remove``, ``replace``, ``move``, ``copy``, ``test``) in
    order; returns a new document.

    ``replace_sets_missing_keys`` is the leniency of the evanphx/json-patch KubeVirt applies a
    restore's patches with: a ``replace`` of a key an object lacks sets it (RFC 6902 refuses it).
    """
    result = copy.deepcopy(document)
    for op in patch:
        if not isinstance(op, Mapping):
            raise PatchError("a JSON patch operation is an object")
        result = _apply_one(result, op, replace_sets_missing_keys)
    return result


def _apply_one(document: Any, op: Mapping[str, Any], replace_sets_missing_keys: bool = False) -> Any:
    """``document`` with one operation applied (in place, unless the root is replaced)."""
    kind, pointer = op.get("op"), _pointer(op, "path")
    if kind in ("move", "copy"):
        source = _pointer(op, "from")
        value = copy.deepcopy(_walk(document, _tokens(source)))
        if kind == "move":
            document = _apply_one(document, {"op": "remove", "path": source})
        return _apply_one(document, {"op": "add", "path": pointer, "value": value})
    if kind not in ("add", "remove", "replace", "test"):
        raise PatchError(f"unexpected operation {kind!r}")
    if kind != "remove" and "value" not in op:
        raise PatchError(f"operation {kind} at {pointer} has no value")
    if pointer == "":
        if kind in ("add", "replace"):
            return copy.deepcopy(op["value"])
        raise PatchError(f"unsupported operation on the root: {kind}")
    tokens = _tokens(pointer)
    if kind == "test":
        if _walk(document, tokens) != op["value"]:
            raise PatchError(f"test failed at {pointer}")
        return document
    parent, last = _walk(document, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        if (kind == "remove" or (kind == "replace" and not replace_sets_missing_keys)) and last not in parent:
            raise PatchError(f"{pointer} does not exist")
        if kind == "remove":
            del parent[last]
        else:
            parent[last] = copy.deepcopy(op["value"])
    elif isinstance(parent, list):
        position = _list_index(parent, last, insert=kind == "add")
        if kind == "add":
            parent.insert(position, copy.deepcopy(op["value"]))
        elif kind == "remove":
            del parent[position]
        else:
            parent[position] = copy.deepcopy(op["value"])
    else:
        raise PatchError(f"cannot patch inside {type(parent).__name__} at {pointer}")
    return document


def _pointer(op: Mapping[str, Any], field: str) -> str:
    """The operation's ``path`` or ``from``: a JSON pointer, empty (the root) or starting with ``/``."""
    pointer = op.get(field)
    if not isinstance(pointer, str) or (pointer and not pointer.startswith("/")):
        raise PatchError(f"operation {op.get('op')!r} has no valid {field}: {pointer!r}")
    return pointer


def _tokens(pointer: str) -> list[str]:
    return [_unescape(token) for token in pointer.split("/")[1:]]


def _list_index(items: list[Any], token: str, *, insert: bool) -> int:
    """A list position: ``-`` (the end) or an index inside the list (or just past it, to insert)."""
    if insert and token == "-":
        return len(items)
    if not (token.isascii() and token.isdigit()) or int(token) > len(items) - (0 if insert else 1):
        raise PatchError(f"bad list index {token!r}")
    return int(token)
