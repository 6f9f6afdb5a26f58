"""``virtctl console VMI``: the terminal attached to the VMI's serial console, as KubeVirt's virtctl does.

The websocket is retried every second while virt-api answers 400 (the VMI is not running yet), for
``--timeout`` minutes. Then the terminal goes raw, what is typed goes to the guest and what the guest
prints comes out, until Ctrl+] (byte 29, also what Ctrl+5 sends) starts a read, stdin ends, or the
server ends the stream (another user took the console over, the VM stopped, or the network failed).
"""

from __future__ import annotations

import contextlib
import os
import sys
import termios
import time
import tty
from collections.abc import Callable, Iterator
from typing import Any

import click
import websocket

from kubevirt.client import KubeClient
from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.streams import (
    BAD_REQUEST,
    StreamEndedError,
    StreamError,
    open_stream,
    pump,
    write_stdout,
)

ESCAPE = 29  # Ctrl+] (and Ctrl+5)
CONNECTED = "Successfully connected to {vmi} console. Press Ctrl+] or Ctrl+5 to exit console.\n"
TIMED_OUT = "Timeout trying to connect to the virtual machine instance"
DISCONNECTED = (
    "\nYou were disconnected from the console. This could be caused by one of the following:"
    "\n - the target VM was powered off"
    "\n - another user connected to the console of the target VM"
    "\n - network issues\n"
)
RETRY_INTERVAL = 1.0
READ_SIZE = 1024


def connect_console(
    client: KubeClient,
    namespace: str,
    vmi: str,
    timeout: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> websocket.WebSocket:
    """The console stream, retried while the server answers 400, for ``timeout`` seconds."""
    deadline = clock() + timeout
    while True:
        try:
            ws = open_stream(client, namespace, vmi, "console")
        except StreamError as err:
            if err.status != BAD_REQUEST:
                raise
        else:
            ws.settimeout(None)
            return ws
        if clock() + RETRY_INTERVAL > deadline:
            raise StreamError(TIMED_OUT)
        sleep(RETRY_INTERVAL)


def user_input(read: Callable[[], bytes]) -> Callable[[], bytes]:
    """``read``, ending at the escape byte (at the start of a read, as KubeVirt checks it)."""

    def next_chunk() -> bytes:
        chunk = read()
        return b"" if chunk[:1] == bytes([ESCAPE]) else chunk

    return next_chunk


def attach(ws: websocket.WebSocket, read: Callable[[], bytes], write: Callable[[bytes], None]) -> None:
    """Relays until the user leaves (returns) or the server ends the stream (:class:`StreamEndedError`)."""
    ended = pump(ws, user_input(read), write)
    if ended is not None:
        raise ended


@contextlib.contextmanager
def raw_terminal(fd: int) -> Iterator[None]:
    if not os.isatty(fd):
        yield
        return
    saved = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


@click.command(name="console", help="Connect to a console of a virtual machine instance.")
@click.argument("vmi")
@click.option(
    "--timeout",
    default=5,
    show_default=True,
    type=int,
    help="The number of minutes to wait for the virtual machine instance to be ready.",
)
@client_flags
@click.pass_context
def console(ctx: click.Context, /, vmi: str, timeout: int, **flags: Any) -> None:
    client, namespace = connect(flags_from(ctx, **flags))
    try:
        ws = connect_console(client, namespace, vmi, timeout * 60.0)
    except StreamError as err:
        click.echo(str(err), err=True)
        sys.exit(1)
    stdin = sys.stdin.fileno()
    ended: StreamEndedError | None = None
    with raw_terminal(stdin):
        click.echo(CONNECTED.format(vmi=vmi), err=True, nl=False)
        try:
            attach(ws, lambda: os.read(stdin, READ_SIZE), write_stdout)
        except StreamEndedError as err:
            ended = err
    if ended is not None and ended.abnormal:
        click.echo(DISCONNECTED, err=True, nl=False)
        click.echo(str(ended), err=True)
        sys.exit(1)
