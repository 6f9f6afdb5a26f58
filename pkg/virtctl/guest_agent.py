"""``virtctl guestosinfo|userlist|fslist VMI``: the guest agent's answers, printed as indented JSON."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from kubevirt.client import ApiError
from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.lifecycle import EXIT_FAILED, SUBRESOURCES


def _guest_agent_command(name: str, subresource: str, failure: str, help_text: str) -> click.Command:
    @click.command(name=name, help=help_text)
    @click.argument("vmi")
    @client_flags
    @click.pass_context
    def run(ctx: click.Context, /, vmi: str, **flags: Any) -> None:
        client, namespace = connect(flags_from(ctx, **flags))
        path = f"{SUBRESOURCES}/namespaces/{namespace}/virtualmachineinstances/{vmi}/{subresource}"
        try:
            answer = json.loads(client.request("GET", path))
        except (ApiError, ValueError) as err:
            reason = err.message if isinstance(err, ApiError) else str(err)
            click.echo(f"{failure} of VirtualMachineInstance {vmi}, {reason}", err=True)
            sys.exit(EXIT_FAILED)
        click.echo(json.dumps(answer, indent=2))

    return run


COMMANDS = (
    _guest_agent_command(
        "guestosinfo",
        "guestosinfo",
        "Error getting guestosinfo",
        "Return guest agent info about operating system.",
    ),
    _guest_agent_command(
        "userlist",
        "userlist",
        "Error listing users",
        "Return full list of logged in users on a guest machine.",
    ),
    _guest_agent_command(
        "fslist",
        "filesystemlist",
        "Error listing filesystems",
        "Return full list of filesystems available on the guest machine.",
    ),
)
