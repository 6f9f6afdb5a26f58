"""virt-tail: follows the guest's serial console log file and copies it to stdout (the container's log).

The launcher creates the file when the domain starts, so the follower first waits for it; a truncated
file is read again from its start.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import BinaryIO

POLL_SECONDS = 0.2


def follow(path: Path, out: BinaryIO, stop: threading.Event, poll: float = POLL_SECONDS) -> None:
    """Copy what ``path`` holds and whatever is appended to it to ``out`` until ``stop`` is set."""
    while not path.exists():
        if stop.wait(poll):
            return
    with path.open("rb") as source:
        while True:
            chunk = source.read(65536)
            if chunk:
                out.write(chunk)
                out.flush()
                continue
            if stop.wait(poll):
                return
            if path.stat().st_size < source.tell():
                source.seek(0)


def run(logfile: Path, stop: threading.Event) -> int:
    follow(logfile, sys.stdout.buffer, stop)
    return 0
