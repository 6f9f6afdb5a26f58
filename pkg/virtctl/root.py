"""virtctl's root command; each subcommand lives in its own module and registers itself here."""

from __future__ import annotations

import click

from kubevirt.log import configure as configure_logging
from kubevirt.version import get_version
from kubevirt.virtctl.clientconfig import ClientFlags, client_flags
from kubevirt.virtctl.lifecycle import COMMANDS as LIFECYCLE_COMMANDS
from kubevirt.virtctl.render import render
from kubevirt.virtctl.validate import validate


@click.group(name="virtctl", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(get_version(), prog_name="virtctl", message="%(prog)s %(version)s")
@client_flags
@click.pass_context
def root(
    ctx: click.Context, /, kubeconfig: str | None, kube_context: str | None, namespace: str | None
) -> None:
    """virtctl controls virtual machine related operations on your kubernetes cluster."""
    configure_logging("virtctl")
    ctx.obj = ClientFlags(kubeconfig, kube_context, namespace)


@root.command()
def version() -> None:
    """Print the client version."""
    click.echo(f"Client Version: {get_version()}")


root.add_command(render)
root.add_command(validate)
for command in LIFECYCLE_COMMANDS:
    root.add_command(command)
