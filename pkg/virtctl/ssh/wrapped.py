"""The local ``ssh``/``scp`` binaries, reaching the guest through ``virtctl port-forward --stdio`` as their
ProxyCommand: the command lines are built as KubeVirt's virtctl builds them."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys

from kubevirt.log import get_logger
from kubevirt.virtctl.ssh.options import SSHError, SSHOptions, Target


def program() -> str:
    """How this virtctl was started, for the ProxyCommand to run it again."""
    return sys.argv[0]


def proxy_command_option(target: Target, port: int) -> str:
    return (
        f"ProxyCommand={shlex.quote(program())} port-forward --stdio=true "
        f"{target.kind}/{target.name}/{target.namespace} {port}"
    )


def host_alias(options: SSHOptions, target: Target) -> str:
    """``[user@]kind.name.namespace``: only a name for the local client's known_hosts, the ProxyCommand
    decides where the connection goes."""
    user = f"{options.username}@" if options.username else ""
    return f"{user}{target.kind}.{target.name}.{target.namespace}"


def ssh_arguments(options: SSHOptions, target: Target, command: str) -> list[str]:
    arguments = [host_alias(options, target)]
    return [*arguments, command] if command else arguments


def scp_arguments(
    options: SSHOptions,
    target: Target,
    remote_path: str,
    local_path: str,
    to_remote: bool,
    *,
    recursive: bool,
    preserve: bool,
) -> list[str]:
    flags = (["-r"] if recursive else []) + (["-p"] if preserve else [])
    remote = f"{host_alias(options, target)}:{remote_path}"
    return [*flags, *((local_path, remote) if to_remote else (remote, local_path))]


def local_client_command(options: SSHOptions, target: Target, client_arguments: list[str]) -> list[str]:
    command = [
        options.local_client,
        "-o",
        proxy_command_option(target, options.port),
        *options.local_ssh_opts,
    ]
    if options.identity_file_provided:
        command += ["-i", options.identity_file]
    return command + client_arguments


def run_local_client(command: list[str]) -> None:
    """Runs the client on this terminal; a failure is reported as Go's ``exec`` reports it."""
    get_logger().debug(f"running: {' '.join(command)}")
    try:
        process = subprocess.Popen(command)
    except FileNotFoundError:
        raise SSHError(f'exec: "{command[0]}": executable file not found in $PATH') from None
    except OSError as err:
        raise SSHError(f"fork/exec {command[0]}: {(err.strerror or str(err)).lower()}") from None
    while True:
        try:
            code = process.wait()
            break
        except KeyboardInterrupt:
            continue  # the client got the interrupt too and decides what it means
    if code > 0:
        raise SSHError(f"exit status {code}")
    if code < 0:
        raise SSHError(f"signal: {(signal.strsignal(-code) or str(-code)).lower()}")
