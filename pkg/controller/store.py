"""The informers' indexed cache: objects by key, plus secondary indexes.

Cached objects are shared by every reader and must be treated as read-only; a controller that changes
one copies it first (``model_copy(deep=True)`` for models, ``copy.deepcopy`` for dicts).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from kubevirt.controller.keys import key_of
from kubevirt.controller.objects import labels_of, namespace_of, node_name_of, owner_uids_of

__all__ = [
    "LABEL_INDEX_PREFIX",
    "NAMESPACE_INDEX",
    "NODE_INDEX",
    "OWNER_INDEX",
    "STANDARD_INDEXERS",
    "IndexFunc",
    "Store",
]

T = TypeVar("T")
IndexFunc = Callable[[Any], Iterable[str]]


NAMESPACE_INDEX = "namespace"
NODE_INDEX = "node"
OWNER_INDEX = "owner"
# "label:<key>" indexes objects by the value of one label; built on first use.
LABEL_INDEX_PREFIX = "label:"


def _by_namespace(obj: Any) -> Iterable[str]:
    namespace = namespace_of(obj)
    return (namespace,) if namespace else ()


def _by_node(obj: Any) -> Iterable[str]:
    node = node_name_of(obj)
    return (node,) if node else ()


def _by_label(label: str) -> IndexFunc:
    def index(obj: Any) -> Iterable[str]:
        value = labels_of(obj).get(label)
        return (value,) if value is not None else ()

    return index


STANDARD_INDEXERS: Mapping[str, IndexFunc] = {
    NAMESPACE_INDEX: _by_namespace,
    NODE_INDEX: _by_node,
    OWNER_INDEX: owner_uids_of,
}


class Store(Generic[T]):
    """A thread-safe map from key to object with secondary indexes kept current on every change."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, T] = {}
        self._indexers: dict[str, IndexFunc] = {**STANDARD_INDEXERS, **(indexers or {})}
        self._indexes: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Adds indexes (an informer shared by several controllers may gain some later)."""
        with self._lock:
            for name, indexer in indexers.items():
                if name in self._indexers:
                    continue
                self._indexers[name] = indexer
                self._indexes[name] = {}
                for key, obj in self._items.items():
                    self._index_one(name, key, obj)

    # Reads.

    def get_by_key(self, key: str) -> T | None:
        with self._lock:
            return self._items.get(key)

    def list(self) -> list[T]:
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        with self._lock:
            return list(self._items)

    def by_index(self, index_name: str, value: str) -> builtins.list[T]:
        with self._lock:
            index = self._indexes.get(index_name)
            if index is None:
                index = self._add_index(index_name)
            return [self._items[key] for key in index.get(value, ())]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    # Writes (the informer's).

    def upsert(self, obj: T) -> T | None:
        """Stores ``obj`` under its key and returns the object it replaced, if any."""
        key = key_of(obj)
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._unindex(key, old)
            self._items[key] = obj
            self._index(key, obj)
            return old

    def remove(self, key: str) -> T | None:
        """Drops the object under ``key`` and returns it, if there was one."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._unindex(key, old)
            return old

    def replace(self, objects: Iterable[T]) -> dict[str, T]:
        """Swaps the whole content (after a list) and returns the previous content by key."""
        with self._lock:
            previous = self._items
            self._items = {key_of(obj): obj for obj in objects}
            self._indexes = {name: {} for name in self._indexers}
            for key, obj in self._items.items():
                self._index(key, obj)
            return previous

    # Indexes.

    def _add_index(self, index_name: str) -> dict[str, set[str]]:
        if not index_name.startswith(LABEL_INDEX_PREFIX) or len(index_name) == len(LABEL_INDEX_PREFIX):
            raise KeyError(f"unknown index {index_name!r}")
        self._indexers[index_name] = _by_label(index_name.removeprefix(LABEL_INDEX_PREFIX))
        self._indexes[index_name] = {}
        for key, obj in self._items.items():
            self._index_one(index_name, key, obj)
        return self._indexes[index_name]

    def _index(self, key: str, obj: T) -> None:
        for name in self._indexers:
            self._index_one(name, key, obj)

    def _index_one(self, name: str, key: str, obj: T) -> None:
        index = self._indexes[name]
        for value in self._indexers[name](obj):
            index.setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: T) -> None:
        for name, indexer in self._indexers.items():
            index = self._indexes[name]
            for value in indexer(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
