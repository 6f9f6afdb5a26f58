"""The download's progress line, as KubeVirt's virtctl draws it with cheggaaa/pb v3 on stderr.

``Downloading file: <bytes so far> <a cycling [==>___] frame> <speed>``, redrawn every 200 ms and once
more when done. On a terminal each drawing starts with a carriage return, is padded to the terminal's
width and the last one ends the line; elsewhere the drawings follow one another as pb writes them.
The speed is pb's: "? p/s" until half a second has passed, then an exponentially weighted average of
the rate between drawings, and the average over the whole download in the last drawing.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

REFRESH_INTERVAL = 0.2
SPEED_SAMPLE_MIN = 0.5  # pb adds a speed sample only after this long
EWMA_DECAY = 2 / (30 + 1)  # VividCortex/ewma's simple average over ~30 samples
CYCLE = (
    "[___________________]",
    "[==>________________]",
    "[====>______________]",
    "[======>____________]",
    "[========>__________]",
    "[==========>________]",
    "[============>______]",
    "[==============>____]",
    "[================>__]",
    "[==================>]",
)
_UNITS = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def format_bytes(count: int) -> str:
    """pb's binary-prefixed sizes: ``512 B``, ``1.50 KiB``, ``2.00 MiB``."""
    for size, unit in _UNITS:
        if count >= size:
            return f"{count / size:.2f} {unit}"
    return f"{count} B"


class ProgressBar:
    """Counts bytes (``add``, from any thread) and draws them from a thread of its own."""

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        terminal: bool,
        width: int,
        clock: Callable[[], float] = time.monotonic,
        interval: float = REFRESH_INTERVAL,
    ) -> None:
        self._write = write
        self._terminal = terminal
        self._width = width
        self._clock = clock
        self._interval = interval
        self._lock = threading.Lock()
        self._current = 0
        self._drawings = 0
        self._start_time = self._previous_time = 0.0
        self._previous_value = 0
        self._average = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, count: int) -> None:
        with self._lock:
            self._current += count

    def start(self) -> None:
        self._thread = threading.Thread(target=self._tick, name="vmexport-progress", daemon=True)
        self._thread.start()

    def finish(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.draw(finished=True)

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            self.draw(finished=False)

    def draw(self, *, finished: bool) -> None:
        line = self.render(finished=finished)
        if self._terminal:
            line = "\r" + line.ljust(self._width) + ("\n" if finished else "")
        self._write(line)

    def render(self, *, finished: bool) -> str:
        with self._lock:
            current = self._current
        self._drawings += 1
        frame = CYCLE[(self._drawings - 1) % len(CYCLE)]
        speed = self._speed(self._clock(), current, finished)
        shown = f"{format_bytes(_go_round(speed))} p/s" if speed else "? p/s"
        return f"Downloading file: {format_bytes(current)} {frame} {shown}"

    def _speed(self, now: float, value: int, finished: bool) -> float:
        if self._drawings == 1:
            self._start_time = self._previous_time = now
            self._previous_value, self._average = value, 0.0
            return 0.0
        if finished:
            elapsed = now - self._start_time
            return value / elapsed if elapsed > 0 else 0.0
        elapsed = now - self._previous_time
        if elapsed < SPEED_SAMPLE_MIN:
            return self._average
        sample = abs(value - self._previous_value) / elapsed
        self._previous_time, self._previous_value = now, value
        # The average's zero stands for "no sample yet", as in VividCortex/ewma.
        self._average = (
            sample if self._average == 0 else sample * EWMA_DECAY + self._average * (1 - EWMA_DECAY)
        )
        return self._average


def _go_round(value: float) -> int:
    """pb's ``round``: halves away from zero, for the positive speeds it gets."""
    return math.floor(value + 0.5)
