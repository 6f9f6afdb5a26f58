"""``virtctl vnc VMI``: a local TCP port relayed to the VMI's VNC websocket, as KubeVirt's virtctl does.

The websocket is opened first; then virtctl listens (``--address``/``--port``, a free port by default).
With ``--proxy-only`` it prints ``{"port":N}`` and waits for a viewer; otherwise it listens on loopback,
starts remote-viewer or TigerVNC's vncviewer (or the one ``--vnc-type``/``--vnc-path`` name) and gives
it 60 seconds to connect. One viewer connection is relayed; when either side ends, virtctl exits.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import click
import websocket

from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.screenshot import screenshot
from kubevirt.virtctl.streams import StreamError, open_stream, relay_socket

LISTEN_TIMEOUT = 60.0
REMOTE_VIEWER = "remote-viewer"
TIGER_VNC = "vncviewer"


class VNCError(Exception):
    """What virtctl prints before exiting 1."""


def viewer_command(port: int, vnc_type: str | None, vnc_path: str | None) -> list[str]:
    """The viewer to start on Linux, and its arguments (KubeVirt's choices)."""
    if vnc_type and vnc_path:
        if not shutil.which(vnc_path):
            raise VNCError(f"specified VNC path does not exist: {vnc_path}")
        if vnc_type == "tiger":
            return [vnc_path, f"127.0.0.1:{port}"]
        if vnc_type == "remote-viewer":
            return [vnc_path, f"vnc://127.0.0.1:{port}"]
        raise VNCError(f"unsupported vnc-type for linux: {vnc_type}")
    if shutil.which(REMOTE_VIEWER):
        return [REMOTE_VIEWER, f"vnc://127.0.0.1:{port}"]
    if shutil.which(TIGER_VNC):
        return [TIGER_VNC, f"127.0.0.1:{port}"]
    raise VNCError(f"could not find {REMOTE_VIEWER} or {TIGER_VNC} binary in $PATH")


def serve_one_viewer(
    ws: websocket.WebSocket, listener: socket.socket, *, accept_timeout: float | None
) -> None:
    listener.settimeout(accept_timeout)
    try:
        connection, _ = listener.accept()
    except OSError as err:
        ws.close()
        raise VNCError(f"error encountered: {err}") from None
    finally:
        listener.close()
    connection.settimeout(None)
    relay_socket(ws, connection)


def run_vnc(
    ws: websocket.WebSocket,
    listener: socket.socket,
    *,
    proxy_only: bool,
    announce: Callable[[str], None],
    start_viewer: Callable[[int], None],
) -> None:
    """Announces the port (``--proxy-only``) or starts the viewer, then relays the one connection.
    A viewer that cannot be started ends the wait at once (:class:`VNCError`)."""
    port = int(listener.getsockname()[1])
    if proxy_only:
        announce(json.dumps({"port": port}, separators=(",", ":")))
        serve_one_viewer(ws, listener, accept_timeout=None)
        return
    failed: list[VNCError] = []

    def viewer() -> None:
        try:
            start_viewer(port)
        except VNCError as err:
            failed.append(err)
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept below

    threading.Thread(target=viewer, name="vnc-viewer", daemon=True).start()
    try:
        serve_one_viewer(ws, listener, accept_timeout=LISTEN_TIMEOUT)
    except VNCError:
        if failed:
            raise VNCError(f"error encountered: {failed[0]}") from None
        raise


def start_viewer_for(vnc_type: str | None, vnc_path: str | None) -> Callable[[int], None]:
    def start(port: int) -> None:
        command = viewer_command(port, vnc_type, vnc_path)
        try:
            subprocess.run(command, capture_output=True, check=False)
        except OSError as err:
            raise VNCError(f"{command[0]} execution failed: {err}") from None

    return start


class _VNCCommand(click.Command):
    """``vnc VMI`` or, as with KubeVirt's subcommand, ``vnc screenshot VMI``."""

    subcommands = {"screenshot": screenshot}

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        if args and args[0] in self.subcommands:
            return self.subcommands[args[0]].make_context(args[0], args[1:], parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


@click.command(
    name="vnc",
    cls=_VNCCommand,
    help="Open a vnc connection to a virtual machine instance.",
    epilog="Subcommand: 'vnc screenshot VMI --file F' saves the screen as a PNG.",
)
@click.argument("vmi")
@click.option("--address", default="127.0.0.1", show_default=True, help="The listening address of the proxy.")
@click.option("--port", default=0, type=click.IntRange(0, 65535), help="Local port; a free one when 0.")
@click.option("--proxy-only", is_flag=True, help="Only run the proxy and print the port viewers can use.")
@click.option("--preserve-session", is_flag=True, help="Keep an existing VNC session instead of dropping it.")
@click.option(
    "--vnc-type", default=None, help="The VNC viewer to use (tiger, remote-viewer); needs --vnc-path."
)
@click.option("--vnc-path", default=None, help="The path of the VNC viewer; needs --vnc-type.")
@client_flags
@click.pass_context
def vnc(
    ctx: click.Context,
    /,
    vmi: str,
    address: str,
    port: int,
    proxy_only: bool,
    preserve_session: bool,
    vnc_type: str | None,
    vnc_path: str | None,
    **flags: Any,
) -> None:
    if (vnc_type is None) != (vnc_path is None):
        raise click.UsageError("if any flags in the group [vnc-type vnc-path] are set they must all be set")
    client, namespace = connect(flags_from(ctx, **flags))
    query = {"preserveSession": "true" if preserve_session else "false"}  # client-go always names it
    try:
        ws = open_stream(client, namespace, vmi, "vnc", query)
    except StreamError as err:
        click.echo(f"can't access VMI {vmi}: {err}", err=True)
        sys.exit(1)
    ws.settimeout(None)
    try:
        listener = socket.create_server((address if proxy_only else "127.0.0.1", port))
    except OSError as err:
        ws.close()
        click.echo(f"can't listen on unix socket: {err}", err=True)
        sys.exit(1)
    try:
        run_vnc(
            ws,
            listener,
            proxy_only=proxy_only,
            announce=click.echo,
            start_viewer=start_viewer_for(vnc_type, vnc_path),
        )
    except VNCError as err:
        click.echo(str(err), err=True)
        sys.exit(1)
