"""Work-queue keys: ``namespace/name``, or ``name`` alone for cluster-scoped objects."""

from __future__ import annotations

from typing import Any

from kubevirt.controller.objects import name_of, namespace_of

__all__ = ["key_for", "key_of", "split_key"]


def key_for(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def key_of(obj: Any) -> str:
    """The key of a JSON dict or a kubevirt_api model (or of a tombstone's last known object)."""
    return key_for(namespace_of(obj), name_of(obj))


def split_key(key: str) -> tuple[str | None, str]:
    """``"ns/name"`` → ``("ns", "name")``; ``"name"`` → ``(None, "name")``."""
    parts = key.split("/")
    if len(parts) == 1 and parts[0]:
        return None, parts[0]
    if len(parts) == 2 and parts[0] and parts[1]:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")
