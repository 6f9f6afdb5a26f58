"""KubeVirt's metadata inside the libvirt domain (``<metadata><kubevirt xmlns="http://kubevirt.io">``).

It carries what must survive with the domain rather than in the launcher's memory: the VMI UID, the
grace period and when the graceful shutdown began, and the outcome of a migration. virt-handler reads
it back from the domain JSON. Timestamps are written as Go writes ``time.Time`` text (RFC 3339, UTC).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from lxml import etree

KUBEVIRT_NS = "http://kubevirt.io"
KUBEVIRT_PREFIX = "kubevirt"


def format_time(moment: datetime) -> str:
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".")
    return text + "Z"


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def now() -> datetime:
    return datetime.now(UTC)


@dataclasses.dataclass
class GracePeriod:
    deletion_grace_period_seconds: int = 0
    deletion_timestamp: datetime | None = None
    marked_for_graceful_shutdown: bool | None = None


@dataclasses.dataclass
class Migration:
    uid: str = ""
    start_timestamp: datetime | None = None
    end_timestamp: datetime | None = None
    completed: bool = False
    failed: bool = False
    failure_reason: str = ""
    abort_status: str = ""
    mode: str = ""


@dataclasses.dataclass
class KubeVirtMetadata:
    uid: str = ""
    grace_period: GracePeriod | None = None
    migration: Migration | None = None

    def to_xml(self) -> str:
        root = etree.Element(f"{{{KUBEVIRT_NS}}}kubevirt", nsmap={None: KUBEVIRT_NS})  # type: ignore[dict-item]
        _sub(root, "uid", self.uid)
        if self.grace_period is not None:
            grace = _sub(root, "graceperiod")
            _sub(grace, "deletionGracePeriodSeconds", str(self.grace_period.deletion_grace_period_seconds))
            if self.grace_period.deletion_timestamp is not None:
                _sub(grace, "deletionTimestamp", format_time(self.grace_period.deletion_timestamp))
            if self.grace_period.marked_for_graceful_shutdown is not None:
                _sub(
                    grace, "markedForGracefulShutdown", _bool(self.grace_period.marked_for_graceful_shutdown)
                )
        if self.migration is not None:
            m = self.migration
            node = _sub(root, "migration")
            for tag, value in (
                ("uid", m.uid),
                ("startTimestamp", format_time(m.start_timestamp) if m.start_timestamp else ""),
                ("endTimestamp", format_time(m.end_timestamp) if m.end_timestamp else ""),
                ("completed", _bool(m.completed) if m.completed else ""),
                ("failed", _bool(m.failed) if m.failed else ""),
                ("failureReason", m.failure_reason),
                ("abortStatus", m.abort_status),
                ("mode", m.mode),
            ):
                if value:  # Go's omitempty
                    _sub(node, tag, value)
        return etree.tostring(root, encoding="unicode")

    @classmethod
    def from_xml(cls, text: str) -> KubeVirtMetadata:
        root = etree.fromstring(text.encode())
        result = cls(uid=_text(root, "uid"))
        grace = root.find(f"{{{KUBEVIRT_NS}}}graceperiod")
        if grace is not None:
            seconds = _text(grace, "deletionGracePeriodSeconds") or "0"
            stamp = _text(grace, "deletionTimestamp")
            marked = _text(grace, "markedForGracefulShutdown")
            result.grace_period = GracePeriod(
                deletion_grace_period_seconds=int(seconds),
                deletion_timestamp=parse_time(stamp) if stamp else None,
                marked_for_graceful_shutdown=(marked == "true") if marked else None,
            )
        migration = root.find(f"{{{KUBEVIRT_NS}}}migration")
        if migration is not None:
            start = _text(migration, "startTimestamp")
            end = _text(migration, "endTimestamp")
            result.migration = Migration(
                uid=_text(migration, "uid"),
                start_timestamp=parse_time(start) if start else None,
                end_timestamp=parse_time(end) if end else None,
                completed=_text(migration, "completed") == "true",
                failed=_text(migration, "failed") == "true",
                failure_reason=_text(migration, "failureReason"),
                abort_status=_text(migration, "abortStatus"),
                mode=_text(migration, "mode"),
            )
        return result


def json_time(moment: datetime) -> str:
    # metav1.Time marshals to JSON with second precision.
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _sub(parent: etree._Element, tag: str, value: str | None = None) -> etree._Element:
    node = etree.SubElement(parent, f"{{{KUBEVIRT_NS}}}{tag}")
    if value is not None:
        node.text = value
    return node


def _text(parent: etree._Element, tag: str) -> str:
    node = parent.find(f"{{{KUBEVIRT_NS}}}{tag}")
    return (node.text or "").strip() if node is not None else ""
