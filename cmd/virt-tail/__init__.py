"""Entrypoint of virt-tail: the guest's serial console log on the container's stdout.

It runs in the guest-console-log container, whose CPU limit is 15m: at that rate every import costs
about seventy times its CPU time in start-up delay, so this entrypoint imports the follower and the
standard library only (no click, no logging set-up).
"""

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from kubevirt.virt_launcher import console_tail


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="virt-tail", description="Follows the guest's serial console log file."
    )
    parser.add_argument("--logfile", required=True, type=Path, help="The file to follow.")
    options = parser.parse_args()
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    sys.exit(console_tail.run(options.logfile, stop))
