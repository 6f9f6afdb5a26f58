"""virtctl's root command; each subcommand lives in its own module and registers itself here."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from kubevirt.client import ApiError, KubeClient
from kubevirt.log import configure as configure_logging
from kubevirt.version import format_version_info, get_version, version_info
from kubevirt.virtctl.clientconfig import ClientFlags, client_flags, connect, flags_from
from kubevirt.virtctl.console import console
from kubevirt.virtctl.create import create
from kubevirt.virtctl.diagnose.command import diagnose_command
from kubevirt.virtctl.expand import expand
from kubevirt.virtctl.expose import expose
from kubevirt.virtctl.guest_agent import COMMANDS as GUEST_AGENT_COMMANDS
from kubevirt.virtctl.imageupload import image_upload
from kubevirt.virtctl.lifecycle import COMMANDS as LIFECYCLE_COMMANDS
from kubevirt.virtctl.portforward import port_forward
from kubevirt.virtctl.render import render
from kubevirt.virtctl.ssh.command import ssh
from kubevirt.virtctl.ssh.scp import scp
from kubevirt.virtctl.validate import validate
from kubevirt.virtctl.vmexport import vmexport
from kubevirt.virtctl.vnc import vnc
from kubevirt.virtctl.volumes import COMMANDS as VOLUME_COMMANDS


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


SUBRESOURCES_GROUP = "/apis/subresources.kubevirt.io"


def server_version(client: KubeClient) -> Any:
    """As client-go asks: the group's preferred version first, then that version's ``/version``."""
    group = json.loads(client.request("GET", SUBRESOURCES_GROUP))
    preferred = group["preferredVersion"]["groupVersion"]
    return json.loads(client.request("GET", f"/apis/{preferred}/version"))


@root.command()
@click.option("-c", "--client", "client_only", is_flag=True, help="Client version only (no server required).")
@client_flags
@click.pass_context
def version(ctx: click.Context, /, client_only: bool, **flags: Any) -> None:
    """Print the client and server version information."""
    click.echo(f"Client Version: {format_version_info(version_info())}")
    if client_only:
        return
    client, _ = connect(flags_from(ctx, **flags))
    try:
        server = server_version(client)
    except (ApiError, ValueError, KeyError, TypeError) as err:
        click.echo(f"failed to get server version: {err}", err=True)
        sys.exit(1)
    click.echo(f"Server Version: {format_version_info(server)}")


root.add_command(create)
root.add_command(expand)
root.add_command(diagnose_command)
root.add_command(expose)
root.add_command(render)
root.add_command(validate)
root.add_command(console)
root.add_command(vnc)
root.add_command(port_forward)
root.add_command(ssh)
root.add_command(scp)
root.add_command(vmexport)
root.add_command(image_upload)
for command in (*LIFECYCLE_COMMANDS, *GUEST_AGENT_COMMANDS, *VOLUME_COMMANDS):
    root.add_command(command)
