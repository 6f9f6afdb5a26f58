"""Informers: keep a Store current with list + watch and tell handlers about every change.

One thread per informer: list (consistent read), then watch from the list's resourceVersion with
bookmarks so a quiet watch still advances its resourceVersion; when the server ends the watch, watch again
from the last version seen; when the version is too old (410 Gone), list again. Other failures back off
(0.8 s doubling to 30 s) and list again. Handlers run on the informer's thread and must be quick: they
enqueue keys. A relist that no longer finds an object reports it deleted with its last known state.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from urllib3.exceptions import HTTPError

from kubevirt.client.errors import ApiError, GoneError
from kubevirt.client.resources import Resource
from kubevirt.client.watch import WatchEvent
from kubevirt.controller.decode import Decoder
from kubevirt.controller.keys import key_of
from kubevirt.controller.store import IndexFunc, Store
from kubevirt.log import get_logger

__all__ = ["EventHandler", "Informer", "ListWatcher"]

T = TypeVar("T")
_log = get_logger()
_MIN_BACKOFF, _MAX_BACKOFF = 0.8, 30.0
_MIN_WATCH_SECONDS = 300  # each watch asks the server to end it after 5 to 10 minutes


class WatchHandle(Protocol):
    def __iter__(self) -> Any: ...

    def close(self) -> None: ...


class ListWatcher(Protocol):
    """What an informer needs from the client (:class:`kubevirt.client.KubeClient` has it)."""

    def list_raw(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
    ) -> bytes: ...

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
    ) -> WatchHandle: ...


class EventHandler(Generic[T]):
    def __init__(
        self,
        on_add: Callable[[T], None] | None,
        on_update: Callable[[T, T], None] | None,
        on_delete: Callable[[T], None] | None,
    ) -> None:
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete


class Informer(Generic[T]):
    def __init__(
        self,
        client: ListWatcher,
        resource: Resource,
        decoder: Decoder[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        resync_seconds: float = 0.0,
    ) -> None:
        self.resource = resource
        self.store: Store[T] = Store(indexers)
        self._client = client
        self._decoder = decoder
        self._namespace = namespace
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._resync_seconds = resync_seconds
        self._handlers: list[EventHandler[T]] = []
        self._dispatch_lock = threading.RLock()  # handlers see changes one at a time, in order
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._watch: WatchHandle | None = None
        self._watch_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.last_resource_version = ""
        # The first list is served from the API server's watch cache ("0"), as client-go's first list is;
        # relists ask for at least the last version seen; after a 410 on a list, a consistent read ("").
        self._list_version: str | None = "0"
        self._listing = False
        self.lists = 0  # how many times the informer listed (1 + relists)

    # The contract.

    def add_event_handler(
        self,
        on_add: Callable[[T], None] | None = None,
        on_update: Callable[[T, T], None] | None = None,
        on_delete: Callable[[T], None] | None = None,
    ) -> None:
        """Adds a handler; one added after the first list is first told about every cached object."""
        handler = EventHandler(on_add, on_update, on_delete)
        with self._dispatch_lock:
            self._handlers.append(handler)
            if self._synced.is_set() and on_add is not None:
                for obj in self.store.list():
                    self._call(on_add, obj)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        self.store.add_indexers(indexers)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    # Running.

    def start(self) -> None:
        if self._threads:
            return
        name = f"informer-{self.resource.plural}"
        self._threads.append(threading.Thread(target=self.run, name=name, daemon=True))
        if self._resync_seconds > 0:
            resync = threading.Thread(target=self._resync_loop, name=f"{name}-resync", daemon=True)
            self._threads.append(resync)
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        with self._watch_lock:
            if self._watch is not None:
                self._watch.close()
        for thread in self._threads:
            thread.join(timeout)

    def run(self) -> None:
        """List and watch until stopped (the informer's thread)."""
        backoff = _MIN_BACKOFF
        while not self._stop.is_set():
            try:
                self._list()
                backoff = _MIN_BACKOFF
                while not self._stop.is_set():
                    self._watch_once()
            except GoneError:
                _log.info("resource version expired, listing again", kind=self.resource.kind)
                if self._listing:
                    self._list_version = None
            except (ApiError, OSError, ValueError) as err:
                if self._stop.is_set():
                    break
                _log.error(
                    "list/watch failed, retrying", kind=self.resource.kind, reason=str(err), delay=backoff
                )
                self._stop.wait(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)

    def _list(self) -> None:
        self._listing = True
        raw = self._client.list_raw(
            self.resource,
            self._namespace,
            label_selector=self._label_selector,
            field_selector=self._field_selector,
            resource_version=self._list_version,
        )
        self._listing = False
        objects, version = self._decoder.list(raw)
        self._list_version = version or None
        self.lists += 1
        with self._dispatch_lock:
            previous = self.store.replace(objects)
            self.last_resource_version = version
            for obj in objects:
                old = previous.pop(key_of(obj), None)
                if old is None:
                    self._notify_add(obj)
                else:
                    self._notify_update(old, obj)
            for gone in previous.values():  # deleted while we were not watching: a tombstone
                self._notify_delete(gone)
            self._synced.set()

    def _watch_once(self) -> None:
        stream = self._client.watch(
            self.resource,
            self._namespace,
            resource_version=self.last_resource_version,
            label_selector=self._label_selector,
            field_selector=self._field_selector,
            timeout_seconds=int(_MIN_WATCH_SECONDS * (1 + random.random())),
            allow_bookmarks=True,
        )
        with self._watch_lock:
            if self._stop.is_set():
                stream.close()
                return
            self._watch = stream
        try:
            for event in stream:
                if self._stop.is_set():
                    return
                self._handle(event)
        except HTTPError as err:  # the connection broke: watch again from the last version seen
            _log.info("watch interrupted", kind=self.resource.kind, reason=str(err))
        finally:
            with self._watch_lock:
                self._watch = None
            stream.close()

    def _handle(self, event: WatchEvent) -> None:
        kind = event.get("type")
        data = event.get("object") or {}
        if kind == "ERROR":
            status = int(data.get("code") or 0)
            error = ApiError(status, str(data.get("reason") or ""), str(data.get("message") or ""))
            if status == 410:
                raise GoneError(error.status, error.reason, error.message)
            raise error
        version = (data.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            if version:
                self.last_resource_version = version
            return
        obj = self._decoder.one(data)
        with self._dispatch_lock:
            if version:
                self.last_resource_version = version
            if obj is None:
                return
            if kind == "DELETED":
                self.store.remove(key_of(obj))
                self._notify_delete(obj)
            elif kind in ("ADDED", "MODIFIED"):
                old = self.store.upsert(obj)
                if old is None:
                    self._notify_add(obj)
                else:
                    self._notify_update(old, obj)

    def _resync_loop(self) -> None:
        while not self._stop.wait(self._resync_seconds):
            if not self._synced.is_set():
                continue
            with self._dispatch_lock:
                for obj in self.store.list():
                    self._notify_update(obj, obj)

    # Dispatch (the dispatch lock held).

    def _notify_add(self, obj: T) -> None:
        for handler in self._handlers:
            if handler.on_add is not None:
                self._call(handler.on_add, obj)

    def _notify_update(self, old: T, new: T) -> None:
        for handler in self._handlers:
            if handler.on_update is not None:
                self._call(handler.on_update, old, new)

    def _notify_delete(self, obj: T) -> None:
        for handler in self._handlers:
            if handler.on_delete is not None:
                self._call(handler.on_delete, obj)

    def _call(self, function: Callable[..., None], *args: T) -> None:
        try:
            function(*args)
        except Exception:  # one faulty handler must not stop the informer or the other handlers
            _log.exception("event handler failed", kind=self.resource.kind)
