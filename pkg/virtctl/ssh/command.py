"""``virtctl ssh (VM|VMI)``: by default the local ``ssh`` with ``virtctl port-forward --stdio`` as its
ProxyCommand; with ``--local-ssh=false`` the built-in client."""

from __future__ import annotations

import sys
from typing import Any

import click
from click.core import ParameterSource

from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.ssh.goflags import GoFlagsCommand
from kubevirt.virtctl.ssh.native import NativeSSH, portforward_dialer
from kubevirt.virtctl.ssh.options import (
    LOCAL_SSH_FLAG,
    SSHError,
    common_options,
    options_from,
    parse_ssh_target,
    with_target,
)
from kubevirt.virtctl.ssh.wrapped import local_client_command, run_local_client, ssh_arguments

RED, NONE = "\033[0;31m", "\033[0m"
DEPRECATED_LOCAL_SSH = f"The --{LOCAL_SSH_FLAG} flag is deprecated and now defaults to true."
BUILT_IN_CLIENT_WARNING = (
    f"{RED}WARNING: The built-in ssh client is affected by multiple CVEs and should not be used!{NONE}"
)

EXAMPLES = """\b
Examples:
  # Connect to 'testvmi':
  virtctl ssh jdoe@vmi/testvmi [--identity-file]

\b
  # Connect to 'testvm' in 'mynamespace' namespace
  virtctl ssh jdoe@vm/testvm/mynamespace [--identity-file]

\b
  # Specify a username and namespace:
  virtctl ssh --namespace=mynamespace --username=jdoe vmi/testvmi

\b
  # Connect to 'testvmi' using the local ssh binary found in $PATH:
  virtctl ssh --local-ssh=true jdoe@vmi/testvmi
"""


def warn_if_local_ssh_given(ctx: click.Context) -> None:
    """Naming --local-ssh at all (either value) earns KubeVirt's deprecation notice."""
    if ctx.get_parameter_source("local_ssh") is ParameterSource.COMMANDLINE:
        click.echo(DEPRECATED_LOCAL_SSH, err=True)
        click.echo(BUILT_IN_CLIENT_WARNING, err=True, color=True)  # KubeVirt colours it even when piped


@click.command(
    name="ssh",
    cls=GoFlagsCommand,
    short_help="Open a SSH connection to a virtual machine instance.",
    help=(
        "Open a SSH connection to a virtual machine instance.\n\n"
        "The target is [username@]type/name[/namespace] (type: vmi or vm); the legacy type/name.namespace "
        "is still understood."
    ),
    epilog=EXAMPLES,
)
@click.argument("target", metavar="(VM|VMI)")
@common_options
@click.option("-c", "--command", default="", help="--command='ls /': Specify a command to execute in the VM")
@client_flags
@click.pass_context
def ssh(
    ctx: click.Context,
    /,
    target: str,
    command: str,
    username: str | None,
    identity_file: str | None,
    known_hosts: str | None,
    port: int,
    local_ssh_opts: tuple[str, ...],
    local_ssh: bool,
    **flags: Any,
) -> None:
    client, namespace = connect(flags_from(ctx, **flags))
    options = options_from(
        username=username,
        identity_file=identity_file,
        known_hosts=known_hosts,
        port=port,
        local_ssh_opts=local_ssh_opts,
        local_ssh=local_ssh,
        local_client="ssh",
    )
    try:
        parsed = with_target(options, parse_ssh_target(target), namespace)
        warn_if_local_ssh_given(ctx)
        if options.wrap_local_ssh:
            run_local_client(local_client_command(options, parsed, ssh_arguments(options, parsed, command)))
        else:
            NativeSSH(options, parsed, portforward_dialer(client, parsed, options.port)).run(command)
    except SSHError as err:
        click.echo(str(err), err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)  # as a shell reports a command ended by SIGINT
