"""What ``virtctl ssh`` and ``virtctl scp`` share: their options and defaults, and the target syntax
``[username@]type/name[/namespace]`` (or the legacy ``type/name.namespace``), as KubeVirt's virtctl has
them."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click

from kubevirt.log import get_logger
from kubevirt.virtctl.portforward import PortForwardError, parse_target
from kubevirt.virtctl.ssh.goflags import bool_flag

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_PORT = 22
LOCAL_SSH_FLAG = "local-ssh"


class SSHError(Exception):
    """What virtctl prints before exiting 1."""


@dataclass
class SSHOptions:
    port: int = DEFAULT_PORT
    username: str = ""
    identity_file: str = ""
    identity_file_provided: bool = False
    known_hosts: str = ""
    local_ssh_opts: list[str] = field(default_factory=list)
    wrap_local_ssh: bool = True
    local_client: str = "ssh"


@dataclass(frozen=True)
class Target:
    kind: str  # "vm" or "vmi"
    name: str
    namespace: str
    username: str = ""


def home_dir() -> str:
    home = os.environ.get("HOME", "")
    if not home:
        get_logger().warning("failed to determine user home directory: $HOME is not defined")
    return home


def default_username() -> str:
    """The first of ``$USER``, ``$USERNAME`` and ``$LOGNAME`` that is set."""
    return next((os.environ[name] for name in ("USER", "USERNAME", "LOGNAME") if os.environ.get(name)), "")


def default_identity_file() -> str:
    return os.path.join(home_dir(), ".ssh", "id_rsa")


def default_known_hosts() -> str:
    """``~/.ssh/kubevirt_known_hosts``, or nothing (no host key checking) without a home directory."""
    home = home_dir()
    return os.path.join(home, ".ssh", "kubevirt_known_hosts") if home else ""


def parse_ssh_target(text: str) -> Target:
    """``[username@]type/name[/namespace]``; only what precedes the first ``@`` is the user name and only
    what follows it up to a second ``@`` is the target, as KubeVirt splits it."""
    username = ""
    parts = text.split("@")
    if len(parts) > 1:
        username = parts[0]
        if not username:
            raise SSHError("expected username before '@'")
        text = parts[1]
    if not text:
        raise SSHError("expected target after '@'")
    try:
        target = parse_target(text)
    except PortForwardError as err:
        raise SSHError(str(err)) from None
    return Target(target.kind, target.name, target.namespace, username)


USERNAME_HELP = (
    "--username=jdoe: Set this to the user you want to open the SSH connection as; If unassigned, this "
    "will be empty and the SSH default will apply  [default: $USER, else $USERNAME, else $LOGNAME]"
)
IDENTITY_FILE_HELP = (
    "--identity-file=/home/jdoe/.ssh/id_rsa: Set the path to a private key used for authenticating to "
    "the server; If not provided, the client will try to use the local ssh-agent at $SSH_AUTH_SOCK  "
    "[default: ~/.ssh/id_rsa]"
)
KNOWN_HOSTS_HELP = (
    "--known-hosts=/home/jdoe/.ssh/kubevirt_known_hosts: Set the path to the known_hosts file.  "
    '[default: ~/.ssh/kubevirt_known_hosts; "" skips the host key check]'
)
LOCAL_SSH_OPTS_HELP = (
    '--local-ssh-opts="-o StrictHostKeyChecking=no" : Additional options to be passed to the local ssh. '
    "This is applied only if local-ssh=true"
)
LOCAL_SSH_HELP = (
    f"--{LOCAL_SSH_FLAG}=true: Set this to true to use the SSH/SCP client available on your system by "
    "using this command as ProxyCommand; If set to false, this will establish a SSH/SCP connection with "
    "limited capabilities provided by this client"
)


def common_options(command: F) -> F:
    """The options both commands take (KubeVirt's ``AddCommandlineArgs``)."""
    options = [
        click.option("-l", "--username", default=None, help=USERNAME_HELP),
        click.option("-i", "--identity-file", default=None, help=IDENTITY_FILE_HELP),
        click.option("--known-hosts", default=None, help=KNOWN_HOSTS_HELP),
        click.option(
            "-p",
            "--port",
            type=int,
            default=DEFAULT_PORT,
            show_default=True,
            help="--port=22: Specify a port on the VM to send SSH traffic to",
        ),
        click.option("-t", "--local-ssh-opts", multiple=True, help=LOCAL_SSH_OPTS_HELP),
        bool_flag(f"--{LOCAL_SSH_FLAG}", default=True, help=LOCAL_SSH_HELP),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def options_from(
    *,
    username: str | None,
    identity_file: str | None,
    known_hosts: str | None,
    port: int,
    local_ssh_opts: tuple[str, ...],
    local_ssh: bool,
    local_client: str,
) -> SSHOptions:
    """The options as given, with KubeVirt's defaults for the ones that were not."""
    return SSHOptions(
        port=port,
        username=default_username() if username is None else username,
        identity_file=default_identity_file() if identity_file is None else identity_file,
        identity_file_provided=identity_file is not None,
        known_hosts=default_known_hosts() if known_hosts is None else known_hosts,
        local_ssh_opts=list(local_ssh_opts),
        wrap_local_ssh=local_ssh,
        local_client=local_client,
    )


def with_target(options: SSHOptions, target: Target, fallback_namespace: str) -> Target:
    """The target in the client's namespace when it names none; its user name overrides ``--username``."""
    if target.username:
        options.username = target.username
    return Target(target.kind, target.name, target.namespace or fallback_namespace, target.username)
