"""Entrypoint of container-disk: keeps a containerDisk container alive and findable by virt-handler."""

import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import click

import kubevirt.container_disk as container_disk
from kubevirt.service import binary


@click.option("--copy-path", type=click.Path(path_type=Path), default=None, help="Socket path without .sock.")
@click.option("--no-op", is_flag=True, help="Exit at once (the init container's pull-only run).")
@binary("container-disk", "Holds a containerDisk's files for virt-handler.")
def main(copy_path: Path | None, no_op: bool) -> None:
    if no_op:
        sys.exit(0)
    if copy_path is None:
        raise click.UsageError("--copy-path is required unless --no-op is given")
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    container_disk.hold(copy_path, stop)
    sys.exit(0)
