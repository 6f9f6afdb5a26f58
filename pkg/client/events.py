"""Kubernetes Events about objects, written in the background as client-go's recorder does.

Recording never blocks or fails the caller: events go through a bounded queue to one writer thread, and
an event that cannot be written is logged and dropped. A repeat of the same event (same object, type,
reason and message) bumps the existing Event's ``count`` and ``lastTimestamp`` instead of adding one.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubevirt.client.errors import ApiError, NotFoundError
from kubevirt.client.protocols import JSON, EventSink, KubeApi
from kubevirt.client.resources import EVENTS
from kubevirt.log import get_logger

__all__ = ["EVENT_TYPES", "EventRecorder", "object_reference"]

EVENT_TYPES = ("Normal", "Warning")
_QUEUE_SIZE = 1000
_REMEMBERED = 4096  # events whose repeats are counted; the oldest is forgotten first
_log = get_logger()


def object_reference(obj: Any) -> JSON:
    """The ``involvedObject`` of an Event about ``obj`` (a JSON dict or a kubevirt_api model)."""
    if isinstance(obj, Mapping):
        meta = obj.get("metadata") or {}
        fields = {
            "kind": obj.get("kind"),
            "apiVersion": obj.get("apiVersion"),
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        }
    else:
        meta = getattr(obj, "metadata", None)
        fields = {
            "kind": getattr(obj, "kind", None) or type(obj).__name__,
            "apiVersion": getattr(obj, "api_version", None),
            "namespace": getattr(meta, "namespace", None),
            "name": getattr(meta, "name", None),
            "uid": getattr(meta, "uid", None),
            "resourceVersion": getattr(meta, "resource_version", None),
        }
    return {key: value for key, value in fields.items() if value}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Records Events with ``source.component`` = ``component`` (and ``source.host``, if given)."""

    def __init__(self, client: KubeApi, component: str, *, host: str | None = None) -> None:
        self._client = client
        self._component = component
        self._host = host if host is not None else socket.gethostname()
        self._pending: queue.Queue[tuple[JSON, str, str, str] | None] = queue.Queue(_QUEUE_SIZE)
        self._seen: dict[tuple[str, ...], tuple[str, str, int]] = {}  # -> (namespace, event name, count)
        self._lock = threading.Lock()
        self._writer: threading.Thread | None = None

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        if event_type not in EVENT_TYPES:
            _log.error("unsupported event type, event dropped", type=event_type, reason=reason)
            return
        reference = object_reference(obj)
        self._ensure_writer()
        try:
            self._pending.put_nowait((reference, event_type, reason, message))
        except queue.Full:
            _log.error("event queue full, event dropped", reason=reason, name=reference.get("name"))

    def flush(self, timeout: float = 10.0) -> bool:
        """Waits until every recorded event was written (or dropped); False on timeout."""
        deadline = time.monotonic() + timeout
        while self._pending.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def stop(self) -> None:
        with self._lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            self._pending.put(None)
            writer.join(timeout=10)

    def _ensure_writer(self) -> None:
        with self._lock:
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="event-recorder", daemon=True)
                self._writer.start()

    def _write_loop(self) -> None:
        while True:
            item = self._pending.get()
            try:
                if item is None:
                    return
                self._write(*item)
            except ApiError as err:
                _log.error("could not write event", reason=str(err))
            finally:
                self._pending.task_done()

    def _write(self, reference: JSON, event_type: str, reason: str, message: str) -> None:
        namespace = reference.get("namespace") or "default"
        identity = (
            *(str(reference.get(field, "")) for field in ("kind", "namespace", "name", "uid")),
            event_type,
            reason,
            message,
        )
        now = _now()
        seen = self._seen.get(identity)
        if seen is not None:
            seen_namespace, name, count = seen
            try:
                self._client.patch(
                    EVENTS,
                    seen_namespace,
                    name,
                    {"count": count + 1, "lastTimestamp": now},
                    patch_type="merge",
                )
                self._seen[identity] = (seen_namespace, name, count + 1)
                return
            except NotFoundError:
                pass  # expired or deleted: write a new one
        name = f"{reference.get('name', 'unknown')}.{time.time_ns():x}"
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": reference,
            "reason": reason,
            "message": message,
            "type": event_type,
            "source": {"component": self._component, **({"host": self._host} if self._host else {})},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": self._component,
            "reportingInstance": self._host,
        }
        self._client.create(EVENTS, namespace, body)
        self._seen[identity] = (namespace, name, 1)
        if len(self._seen) > _REMEMBERED:
            del self._seen[next(iter(self._seen))]


def _is_an_event_sink(recorder: EventRecorder) -> EventSink:
    return recorder  # mypy checks here that EventRecorder keeps to the EventSink Protocol
