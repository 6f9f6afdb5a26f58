"""Entrypoint of virt-tail: the guest's serial console log on the container's stdout."""

import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import click

from kubevirt.service import binary
from kubevirt.virt_launcher import console_tail


@click.option("--logfile", required=True, type=click.Path(path_type=Path), help="The file to follow.")
@binary("virt-tail", "Follows the guest's serial console log file.")
def main(logfile: Path) -> None:
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    sys.exit(console_tail.run(logfile, stop))
