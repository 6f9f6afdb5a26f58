"""``virtctl scp SOURCE DESTINATION``: one side is ``[username@]type/name[/namespace]:path`` on the guest,
the other a local path. By default the local ``scp`` runs with ``virtctl port-forward --stdio`` as its
ProxyCommand; with ``--local-ssh=false`` the built-in client copies with the SCP protocol.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.ssh import scp_protocol
from kubevirt.virtctl.ssh.goflags import GoFlagsCommand, bool_flag
from kubevirt.virtctl.ssh.knownhosts import go_quote
from kubevirt.virtctl.ssh.native import Console, NativeSSH, portforward_dialer
from kubevirt.virtctl.ssh.options import (
    SSHError,
    SSHOptions,
    Target,
    common_options,
    options_from,
    parse_ssh_target,
    with_target,
)
from kubevirt.virtctl.ssh.scp_protocol import ScpError
from kubevirt.virtctl.ssh.wrapped import local_client_command, run_local_client, scp_arguments
from kubevirt.virtctl.streams import MessageStream

EXAMPLES = """\b
Examples:
  # Copy a file to the remote home folder of user jdoe
  virtctl scp myfile.bin jdoe@vmi/testvmi:myfile.bin

\b
  # Copy a directory to the remote home folder of user jdoe
  virtctl scp --recursive ~/mydir/ jdoe@vmi/testvmi:./mydir

\b
  # Copy a file to the remote home folder of user jdoe without specifying a file name on the target
  virtctl scp myfile.bin jdoe@vmi/testvmi:.

\b
  # Copy a file to 'testvm' in 'mynamespace' namespace
  virtctl scp myfile.bin jdoe@vmi/testvmi.mynamespace:myfile.bin

\b
  # Copy a file from the remote location to a local folder
  virtctl scp jdoe@vmi/testvmi:myfile.bin ~/myfile.bin
"""


@dataclass(frozen=True)
class Transfer:
    local: str
    remote: Target
    remote_path: str
    to_remote: bool


def parse_locations(source: str, destination: str) -> Transfer:
    """Exactly one of the two is remote (has a ``:``); the remote one is split at its first ``:``."""
    if ":" in source and ":" in destination:
        raise SSHError(
            "copying from a remote location to another remote location is not supported: "
            f"{go_quote(source)} to {go_quote(destination)}"
        )
    if ":" not in source and ":" not in destination:
        raise SSHError(
            "none of the two provided locations seems to be a remote location: "
            f"{go_quote(source)} to {go_quote(destination)}"
        )
    to_remote = ":" in destination
    remote, local = (destination, source) if to_remote else (source, destination)
    target, _, path = remote.partition(":")
    return Transfer(local, parse_ssh_target(target), path, to_remote)


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise SSHError(f"failed reading path {go_quote(path)}: stat {path}: {_reason(err)}") from None


def _reason(err: OSError) -> str:
    return (err.strerror or str(err)).lower()


def go_base(path: str) -> str:
    """Go's ``filepath.Base``."""
    if not path:
        return "."
    trimmed = path.rstrip("/")
    return os.path.basename(trimmed) if trimmed else "/"


def append_remote_base(local: str, remote: str) -> str:
    """``local/<remote's last element>``, unless the remote path names no element of its own."""
    base = go_base(remote)
    return local if base in ("..", ".", "/", "./", "") else os.path.join(local, base)


def copy_to_remote(transport: Any, local: str, remote: str, *, recursive: bool, preserve: bool) -> None:
    info = _stat(local)
    if info is None:
        raise SSHError(f"local path {go_quote(local)} does not exist, can't copy it")
    is_dir = os.path.isdir(local)
    if recursive and not is_dir:
        raise SSHError(f"local path {go_quote(local)} is not a directory but '--recursive' was provided")
    if not recursive and is_dir:
        raise SSHError(f"local path {go_quote(local)} is a directory but '--recursive' was not provided")
    copy = scp_protocol.copy_directory_to_remote if recursive else scp_protocol.copy_file_to_remote
    _scp(lambda: copy(transport, local, remote, preserve=preserve))


def copy_from_remote(transport: Any, local: str, remote: str, *, recursive: bool, preserve: bool) -> None:
    info = _stat(local)
    exists, is_dir = info is not None, os.path.isdir(local)
    if recursive:
        if exists:
            if not is_dir:
                raise SSHError(f"local path {go_quote(local)} is a file but '--recursive' was provided")
            local = append_remote_base(local, remote)
        try:
            os.makedirs(local, exist_ok=True)
        except OSError as err:
            raise SSHError(
                "failed ensuring the existence of the local target directory "
                f"{go_quote(local)}: mkdir {local}: {_reason(err)}"
            ) from None
        _scp(lambda: scp_protocol.copy_directory_from_remote(transport, remote, local, preserve=preserve))
        return
    if exists and is_dir:
        local = append_remote_base(local, remote)
    if not os.path.exists(local):
        parent = os.path.dirname(local) or "."
        if not os.path.exists(parent):
            raise SSHError(f"scp: stat {parent}: no such file or directory")
        if not os.path.isdir(parent):
            raise SSHError(f"scp: {local} no such file or directory")
    elif os.path.isdir(local):
        local = os.path.join(local, go_base(remote))
    _scp(lambda: scp_protocol.copy_file_from_remote(transport, remote, local, preserve=preserve))


def _scp(transfer: Callable[[], None]) -> None:
    """Runs a transfer; its failures read ``scp: <why>``, as the Go library words them."""
    try:
        transfer()
    except ScpError as err:
        raise SSHError(f"scp: {err}") from None
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        raise SSHError(f"scp: {where}{_reason(err)}") from None
    except EOFError:
        raise SSHError("scp: EOF") from None


def native_scp(
    options: SSHOptions,
    transfer: Transfer,
    dial: Callable[[], MessageStream],
    *,
    recursive: bool,
    preserve: bool,
    console: Console | None = None,
) -> None:
    client = NativeSSH(options, transfer.remote, dial, console or Console())
    transport = client.connect()
    try:
        copy = copy_to_remote if transfer.to_remote else copy_from_remote
        copy(transport, transfer.local, transfer.remote_path, recursive=recursive, preserve=preserve)
    finally:
        client.close()


@click.command(
    name="scp",
    cls=GoFlagsCommand,
    short_help="SCP files from/to a virtual machine instance.",
    help=(
        "SCP files from/to a virtual machine instance.\n\n"
        "One location is local, the other [username@]type/name[/namespace]:path (type: vmi or vm)."
    ),
    epilog=EXAMPLES,
)
@click.argument("source")
@click.argument("destination")
@common_options
@bool_flag("-r", "--recursive", help="Recursively copy entire directories")
@bool_flag("--preserve", help="Preserves modification times, access times, and modes from the original file.")
@client_flags
@click.pass_context
def scp(
    ctx: click.Context,
    /,
    source: str,
    destination: str,
    username: str | None,
    identity_file: str | None,
    known_hosts: str | None,
    port: int,
    local_ssh_opts: tuple[str, ...],
    local_ssh: bool,
    recursive: bool,
    preserve: bool,
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
        local_client="scp",
    )
    try:
        transfer = parse_locations(source, destination)
        remote = with_target(options, transfer.remote, namespace)
        transfer = Transfer(transfer.local, remote, transfer.remote_path, transfer.to_remote)
        if options.wrap_local_ssh:
            arguments = scp_arguments(
                options,
                remote,
                transfer.remote_path,
                transfer.local,
                transfer.to_remote,
                recursive=recursive,
                preserve=preserve,
            )
            run_local_client(local_client_command(options, remote, arguments))
        else:
            dial = portforward_dialer(client, remote, options.port)
            native_scp(options, transfer, dial, recursive=recursive, preserve=preserve)
    except SSHError as err:
        click.echo(str(err), err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)  # as a shell reports a command ended by SIGINT
