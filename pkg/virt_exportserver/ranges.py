"""The ``Range`` header as Go's ``http.ServeContent`` reads it (``parseRange``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_INT64_MAX = 2**63 - 1
# strconv.ParseInt: an optional sign, then decimal digits.
_GO_INT = re.compile(r"[+-]?[0-9]+")
# textproto.TrimString trims ASCII spaces and tabs (and CR, LF).
_TRIM = " \t\r\n"


class RangeError(ValueError):
    """A Range header Go refuses: 416 ``invalid range``."""


class NoOverlapError(RangeError):
    """Every range starts past the end: 416 ``invalid range: failed to overlap``."""


@dataclass(frozen=True)
class ByteRange:
    start: int
    length: int

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.start + self.length - 1}/{size}"


def parse_range(header: str, size: int) -> list[ByteRange]:
    """The ranges of ``bytes=...`` within ``size`` bytes ([] for no header)."""
    if not header:
        return []
    if not header.startswith("bytes="):
        raise RangeError("invalid range")
    ranges: list[ByteRange] = []
    no_overlap = False
    for spec in header[len("bytes=") :].split(","):
        spec = spec.strip(_TRIM)
        if not spec:
            continue
        start_text, dash, end_text = spec.partition("-")
        if not dash:
            raise RangeError("invalid range")
        start_text, end_text = start_text.strip(_TRIM), end_text.strip(_TRIM)
        if not start_text:
            ranges.append(_suffix(end_text, size))
            continue
        start = _go_int(start_text)
        if start is None or start < 0:
            raise RangeError("invalid range")
        if start >= size:
            no_overlap = True
            continue
        ranges.append(ByteRange(start, _length(start, end_text, size)))
    if no_overlap and not ranges:
        raise NoOverlapError("invalid range: failed to overlap")
    return ranges


def _suffix(end_text: str, size: int) -> ByteRange:
    # "-N": the last N bytes.
    if not end_text or end_text.startswith("-"):
        raise RangeError("invalid range")
    count = _go_int(end_text)
    if count is None or count < 0:
        raise RangeError("invalid range")
    count = min(count, size)
    return ByteRange(size - count, count)


def _length(start: int, end_text: str, size: int) -> int:
    if not end_text:
        return size - start
    end = _go_int(end_text)
    if end is None or start > end:
        raise RangeError("invalid range")
    return min(end, size - 1) - start + 1


def _go_int(text: str) -> int | None:
    if _GO_INT.fullmatch(text) is None:
        return None
    value = int(text)
    return value if -_INT64_MAX - 1 <= value <= _INT64_MAX else None
