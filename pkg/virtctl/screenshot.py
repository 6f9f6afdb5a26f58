"""``virtctl vnc screenshot VMI --file F``: the VMI's screen as a PNG, written to F (``-`` for stdout)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from kubevirt.client import ApiError, KubeClient
from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.lifecycle import EXIT_FAILED, SUBRESOURCES


def fetch_screenshot(client: KubeClient, namespace: str, vmi: str, *, move_cursor: bool) -> bytes:
    """client-go's request: a GET that always names ``moveCursor``."""
    path = f"{SUBRESOURCES}/namespaces/{namespace}/virtualmachineinstances/{vmi}/vnc/screenshot"
    return client.request("GET", path, query={"moveCursor": "true" if move_cursor else "false"})


@click.command(name="screenshot", help="Create a VNC screenshot of a virtual machine instance.")
@click.argument("vmi")
@click.option("-f", "--file", "file_name", required=True, help="Where to store the PNG; '-' for stdout.")
@click.option("-m", "--move-cursor", is_flag=True, help="Move the cursor to wake up a sleeping screen.")
@client_flags
@click.pass_context
def screenshot(ctx: click.Context, /, vmi: str, file_name: str, move_cursor: bool, **flags: Any) -> None:
    client, namespace = connect(flags_from(ctx, **flags))
    try:
        png = fetch_screenshot(client, namespace, vmi, move_cursor=move_cursor)
    except ApiError as err:
        click.echo(f"Can't access VMI {vmi}: {err.message}", err=True)
        sys.exit(EXIT_FAILED)
    try:
        if file_name == "-":
            sys.stdout.buffer.write(png)
            sys.stdout.buffer.flush()
        else:
            Path(file_name).write_bytes(png)
    except OSError as err:
        click.echo(f"Can't write image to a file: {err}", err=True)
        sys.exit(EXIT_FAILED)
