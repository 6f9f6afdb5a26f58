"""``virtctl diagnose vm|vmi NAME``: prints the walk; exits 1 when it stopped at a broken link."""

from __future__ import annotations

import sys
from typing import Any

import click

from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.diagnose.output import as_json, as_text
from kubevirt.virtctl.diagnose.verdict import Status
from kubevirt.virtctl.diagnose.walk import KINDS, diagnose

__all__ = ["diagnose_command"]

EXIT_BROKEN = 1


@click.command(name="diagnose")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("name")
@click.option(
    "-o",
    "--output",
    type=click.Choice(("text", "json")),
    default="text",
    show_default=True,
    help="text for people, json (one object per link) for scripts.",
)
@client_flags
@click.pass_context
def diagnose_command(ctx: click.Context, /, kind: str, name: str, output: str, **flags: Any) -> None:
    """Walk a VM's request from the API to the node and say where it stopped.

    Reads only what your RBAC allows and writes nothing; what it could not see is named as such.
    """
    client, namespace = connect(flags_from(ctx, **flags))
    links = diagnose(client, kind, namespace, name)
    click.echo(as_json(links) if output == "json" else as_text(kind, namespace, name, links))
    if any(link.status is Status.BROKEN for link in links):
        sys.exit(EXIT_BROKEN)
