"""One watch response, read as newline-delimited JSON events."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import urllib3
from urllib3.exceptions import HTTPError

__all__ = ["WatchEvent", "WatchStream"]

WatchEvent = dict[str, Any]  # {"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR", "object": {...}}


class WatchStream:
    """Iterates the events of a watch until the server ends it or :meth:`close` is called (any thread)."""

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self._response = response
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._released = False

    def __iter__(self) -> Iterator[WatchEvent]:
        buffer = b""
        try:
            for chunk in self._response.stream(1 << 16):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
            if buffer.strip():
                yield json.loads(buffer)
        except (HTTPError, OSError, ValueError):
            if not self._closed.is_set():
                raise
        finally:
            self._release()

    def close(self) -> None:
        """Ends the watch; a thread blocked reading it returns."""
        self._closed.set()
        with self._lock:
            if self._released:
                return
            # urllib3 >= 2.3: interrupts a read blocked in another thread.
            with contextlib.suppress(HTTPError, OSError, RuntimeError):
                self._response.shutdown()
        self._release()

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
            with contextlib.suppress(HTTPError, OSError):
                self._response.release_conn()
