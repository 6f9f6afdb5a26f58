"""What the walk has learned so far, handed from link to link, and the small readings links share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubevirt.client import EVENTS, JSON
from kubevirt.virtctl.diagnose.reader import Reader, UnseenError
from kubevirt_api.base import Condition
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance

__all__ = [
    "Findings",
    "condition_lines",
    "format_age",
    "json_condition_lines",
    "parse_time",
    "warning_events",
]


@dataclass
class Findings:
    """The target and every object found on the way; None where absent or not seen."""

    kind: str  # "vm" or "vmi"
    namespace: str
    name: str
    now: datetime
    reader: Reader
    vm: VirtualMachine | None = None
    vmi: VirtualMachineInstance | None = None
    pod: JSON | None = None
    # Why an object is missing when it could not be read (the sentence of the UnseenError).
    unseen: dict[str, str] = field(default_factory=dict)

    @property
    def vmi_uid(self) -> str | None:
        return self.vmi.metadata.uid if self.vmi is not None and self.vmi.metadata is not None else None

    @property
    def node_name(self) -> str | None:
        """The launcher pod's node, else the VMI's."""
        if self.pod is not None:
            node = (self.pod.get("spec") or {}).get("nodeName")
            if node:
                return str(node)
        status = self.vmi.status if self.vmi is not None else None
        return status.node_name if status is not None else None


def parse_time(value: str) -> datetime:
    """An RFC 3339 timestamp as the API writes it; raises ValueError otherwise."""
    moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return moment


def format_age(seconds: float) -> str:
    """``42s``, ``7m12s``, ``3h5m``: as kubectl shows ages."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60}s"
    return f"{whole // 3600}h{(whole % 3600) // 60}m"


def _condition_line(type_: Any, status: Any, reason: Any, message: Any) -> str:
    line = f"{type_}={status}"
    if reason:
        line += f" {reason}"
    if message:
        line += f": {message}"
    return line


def condition_lines(conditions: Iterable[Condition] | None) -> list[str]:
    return [_condition_line(c.type, c.status, c.reason, c.message) for c in conditions or ()]


def json_condition_lines(conditions: Iterable[Mapping[str, Any]] | None) -> list[str]:
    return [
        _condition_line(c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
        for c in conditions or ()
    ]


def warning_events(reader: Reader, namespace: str, kind: str, name: str, uid: str | None) -> list[str]:
    """The Warning events about one object, newest last, as ``Reason: message`` lines.

    The namespace's events are read once per walk and filtered here (the filter needs no field selector
    support from the server, and one read serves every object of the walk).
    """
    items = reader.list(EVENTS, namespace)
    about = [
        event
        for event in items
        if event.get("type") == "Warning"
        and (event.get("involvedObject") or {}).get("kind") == kind
        and (event.get("involvedObject") or {}).get("name") == name
        and (uid is None or (event.get("involvedObject") or {}).get("uid") in (None, uid))
    ]
    about.sort(key=lambda event: str(event.get("lastTimestamp") or event.get("eventTime") or ""))
    return [f"{event.get('reason')}: {event.get('message')}" for event in about]


def events_or_unseen(reader: Reader, namespace: str, kind: str, name: str, uid: str | None) -> list[str]:
    """:func:`warning_events`, or the one line saying why they could not be read."""
    try:
        return warning_events(reader, namespace, kind, name, uid)
    except UnseenError as unseen:
        return [str(unseen)]
