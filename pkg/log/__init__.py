"""Structured JSON logging in KubeVirt's shape.

KubeVirt's components log one JSON object per line with ``component``, ``level``, ``msg``, ``pos``
(``file.go:123``) and ``timestamp``; log lines about an object also carry ``kind``, ``namespace``,
``name`` and ``uid``. We keep the same keys so existing log tooling keeps working.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, MutableMapping
from datetime import UTC, datetime
from typing import Any, TextIO

import structlog

_LEVEL_NAMES = {"warning": "warning", "critical": "fatal", "exception": "error"}


def _add_timestamp(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    # KubeVirt: RFC3339 with microseconds, always UTC.
    event["timestamp"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return event


def _add_level(_: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    event["level"] = _LEVEL_NAMES.get(method, method)
    return event


def _add_position(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    filename = event.pop("filename", None)
    lineno = event.pop("lineno", None)
    if filename is not None and lineno is not None:
        event["pos"] = f"{filename}:{lineno}"
    return event


def _rename_event(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    if "event" in event:
        event["msg"] = event.pop("event")
    return event


def configure(component: str, *, verbosity: int | None = None, stream: TextIO | None = None) -> None:
    """Configure process-wide logging for one component (call once, from cmd/)."""
    if verbosity is None:
        verbosity = int(os.environ.get("VERBOSITY", "2"))
    # KubeVirt's verbosity 0-2 is info; higher levels open debug logging.
    min_level = logging.DEBUG if verbosity > 2 else logging.INFO
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            _add_level,
            structlog.processors.CallsiteParameterAdder(
                {
                    structlog.processors.CallsiteParameter.FILENAME,
                    structlog.processors.CallsiteParameter.LINENO,
                }
            ),
            _add_position,
            _add_timestamp,
            _rename_event,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(sort_keys=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(min_level),
        logger_factory=structlog.PrintLoggerFactory(file=stream or sys.stderr),
        cache_logger_on_first_use=False,
    )
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(component=component)


def get_logger(**bound: Any) -> Any:
    """A logger; bind object identity with :func:`for_object`."""
    return structlog.get_logger(**bound)


def for_object(obj: Mapping[str, Any], kind: str | None = None) -> Any:
    """A logger bound to a Kubernetes object's identity (kind, namespace, name, uid)."""
    metadata = obj.get("metadata") or {}
    return structlog.get_logger(
        kind=kind or obj.get("kind", ""),
        namespace=metadata.get("namespace", ""),
        name=metadata.get("name", ""),
        uid=metadata.get("uid", ""),
    )
