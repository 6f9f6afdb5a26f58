"""The upload's progress line, as KubeVirt's virtctl draws it with cheggaaa/pb v3's ``Full`` template, in
bytes, on stdout: ``<sent> / <size> [----->____] 42.00% 1.50 MiB p/s ETA 3s``.

It is vmexport's bar (same refresh, speed average and terminal handling) with pb's other elements: the
counters, a bar stretched to fill the line, the percentage and the remaining time, which turns into the
elapsed time once finished. The width is that of the controlling terminal, else pb's 100 columns.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable

from kubevirt.service.durations import MILLISECOND, SECOND, format_go_duration
from kubevirt.virtctl.vmexport.progress import ProgressBar, format_bytes

DEFAULT_WIDTH = 100
# pb shows elapsed time to the tenth of a second below this, to the second above it.
_FINE_ELAPSED_LIMIT = 9950 * MILLISECOND
_BAR_EDGE = 1  # "[" and "]" are one cell each


def terminal_width() -> int:
    """pb's: the size of ``/dev/tty`` (else of stdin), or 100 columns."""
    with contextlib.suppress(OSError):
        fd = os.open("/dev/tty", os.O_RDONLY)
        try:
            return os.get_terminal_size(fd).columns
        finally:
            os.close(fd)
    with contextlib.suppress(OSError, ValueError):
        return os.get_terminal_size(sys.stdin.fileno()).columns
    return DEFAULT_WIDTH


def go_round_duration(nanoseconds: int, precision: int) -> int:
    """Go's ``Duration.Round`` for a positive duration: halves away from zero."""
    remainder = nanoseconds % precision
    return (
        nanoseconds - remainder if remainder + remainder < precision else nanoseconds + precision - remainder
    )


def elapsed_text(nanoseconds: int) -> str:
    """pb's elapsed time: tenths of a second (always shown once past a second) below ~10 s."""
    precision = 100 * MILLISECOND if nanoseconds < _FINE_ELAPSED_LIMIT else SECOND
    rounded = go_round_duration(max(nanoseconds, 0), precision)
    text = format_go_duration(rounded)
    if precision < SECOND and rounded >= SECOND and "." not in text:
        return text[:-1] + ".0s"
    return text


def bar_cells(current: int, total: int, width: int, finished: bool) -> str:
    """pb's ``[--->___]`` in ``width`` cells."""
    total, current = abs(total), abs(current)
    if total and current > total:
        total = current
    if width <= _BAR_EDGE:
        return "["[:width]
    left = width - _BAR_EDGE
    if left <= _BAR_EDGE:
        return "[" + "]"[:left]
    left -= _BAR_EDGE
    filled = math.ceil(current / total * left) if total > 0 else 0
    if total == current and finished:
        body = "-" * filled
    elif filled > 1:
        body = "-" * (filled - 1) + ">"
    else:
        body = ">" * filled
    return "[" + body + "_" * (left - len(body)) + "]"


class UploadBar(ProgressBar):
    """vmexport's bar, drawing pb's ``Full`` template for a transfer of ``total`` bytes."""

    def __init__(
        self,
        write: Callable[[str], None],
        total: int,
        *,
        terminal: bool,
        width: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(write, terminal=terminal, width=width, clock=clock)
        self.total = total
        self._started = clock()

    def start(self) -> None:
        self._started = self._clock()
        super().start()

    def set_current(self, value: int) -> None:
        """Back to ``value`` (zero when an upload starts over)."""
        with self._lock:
            self._current = value

    def render(self, *, finished: bool) -> str:
        with self._lock:
            current = self._current
        self._drawings += 1
        now = self._clock()
        speed = self._speed(now, current, finished)
        total = self.total
        counters = f"{format_bytes(current)} / {format_bytes(total)}" if total > 0 else format_bytes(current)
        percent = f"{current / (total / 100):.2f}%" if total > 0 else "?%"
        shown_speed = f"{format_bytes(math.floor(speed + 0.5))} p/s" if speed else "? p/s"
        if finished:
            remaining = elapsed_text(int((now - self._started) * SECOND))
        elif speed > 0:
            remaining = "ETA " + format_go_duration(int((total - current) / speed) * SECOND)
        else:
            remaining = "?"
        head, tail = f"{counters} ", f" {percent} {shown_speed} {remaining}"
        room = self._width - len(head) - len(tail)
        if room <= 0:
            return (head + tail)[: self._width]
        return head + bar_cells(current, total, room, finished) + tail
