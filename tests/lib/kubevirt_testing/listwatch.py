"""A scripted list/watch source for informer tests: each list answers the next scripted list, each watch
is a new :class:`FakeWatch` the test feeds events into."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from typing import Any

from kubevirt.client.resources import Resource

JSON = dict[str, Any]


class FakeWatch:
    """Yields the events put into it until closed."""

    def __init__(self) -> None:
        self.events: queue.Queue[JSON | None] = queue.Queue()
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[JSON]:
        while True:
            event = self.events.get()
            if event is None or self.closed.is_set():
                return
            yield event

    def send(self, event_type: str, obj: JSON) -> None:
        self.events.put({"type": event_type, "object": obj})

    def end(self) -> None:
        self.events.put(None)

    def close(self) -> None:
        self.closed.set()
        self.events.put(None)


class FakeListWatcher:
    """Serves the next scripted list on each list and a new FakeWatch on each watch."""

    def __init__(self) -> None:
        self.lists: queue.Queue[tuple[list[JSON], str] | Exception] = queue.Queue()
        self.watches: queue.Queue[FakeWatch] = queue.Queue()
        self.watched_versions: list[str] = []
        self.list_calls: list[tuple[str | None, str | None, str | None]] = []
        self.list_versions: list[str | None] = []

    def list_raw(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
    ) -> bytes:
        self.list_calls.append((namespace, label_selector, field_selector))
        self.list_versions.append(resource_version)
        scripted = self.lists.get(timeout=5)
        if isinstance(scripted, Exception):
            raise scripted
        items, version = scripted
        return json.dumps({"metadata": {"resourceVersion": version}, "items": items}).encode()

    def watch(self, resource: Resource, namespace: str | None = None, **options: Any) -> FakeWatch:
        self.watched_versions.append(options["resource_version"])
        watch = FakeWatch()
        self.watches.put(watch)
        return watch

    def next_watch(self) -> FakeWatch:
        return self.watches.get(timeout=5)
