"""Running a command in the guest (``guest-exec``), as KubeVirt's exec probes do.

The command starts with its output captured; its status is then read every tenth of the timeout
until it exited or the timeout passed. A non-zero exit code is :class:`ExecExitError` carrying the
output (KubeVirt answers it as a successful call with that exit code).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import libvirt

from kubevirt.virt_launcher.virtwrap.agent.caller import AgentCaller
from kubevirt.virt_launcher.virtwrap.agent.errors import AgentError, AgentReplyError, ExecExitError
from kubevirt.virt_launcher.virtwrap.agent.parsers import parse_exec_pid, parse_exec_status


def guest_exec(
    caller: AgentCaller,
    dom: libvirt.virDomain,
    command: str,
    args: Sequence[str],
    timeout_seconds: int,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """The command's standard output once it exited 0."""
    timeout = timeout_seconds if timeout_seconds > 0 else 1  # KubeVirt's ticker needs a positive period
    reply = caller.command(dom, "guest-exec", {"path": command, "arg": list(args), "capture-output": True})
    pid = parse_exec_pid(reply)
    if pid <= 0:
        raise AgentReplyError(f"Invalid pid [{pid}] returned from qemu agent for command [{command}]")
    period = timeout / 10
    deadline = clock() + timeout
    while True:
        status = parse_exec_status(caller.command(dom, "guest-exec-status", {"pid": pid}))
        if status.exited:
            break
        sleep(period)
        if clock() > deadline:
            raise AgentError(f"Timed out waiting for guest pid [{pid}] for command [{command}] to exit")
    if status.exit_code != 0:
        raise ExecExitError(status.exit_code, status.stdout)
    return status.stdout
