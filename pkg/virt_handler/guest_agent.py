"""Whether a connected guest agent can do what KubeVirt needs of it: the ``UnsupportedAgent`` condition.

An agent must offer KubeVirt's basic commands, and the commands of the access credentials the VMI
propagates through it (SSH keys: the ``guest-ssh-*`` commands, or the file and exec commands older
agents wrote keys with; passwords: ``guest-set-user-password``). An agent that lists no commands (a
launcher of an older KubeVirt) is judged by its version against ``supportedGuestAgentVersions``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubevirt.virt_handler.status_conditions import conditions_of, find_condition, remove_condition
from kubevirt_api.view import JSON

UNSUPPORTED_AGENT = "AgentVersionNotSupported"

REQUIRED_COMMANDS = (
    "guest-ping",
    "guest-get-time",
    "guest-info",
    "guest-shutdown",
    "guest-network-get-interfaces",
    "guest-get-fsinfo",
    "guest-get-host-name",
    "guest-get-users",
    "guest-get-timezone",
    "guest-get-osinfo",
)
SSH_KEY_COMMANDS = (
    "guest-ssh-get-authorized-keys",
    "guest-ssh-add-authorized-keys",
    "guest-ssh-remove-authorized-keys",
)
# How agents without the SSH key commands had their keys written.
FILE_AND_EXEC_COMMANDS = (
    "guest-exec-status",
    "guest-exec",
    "guest-file-open",
    "guest-file-close",
    "guest-file-read",
    "guest-file-write",
)
PASSWORD_COMMANDS = ("guest-set-user-password",)


@dataclass(frozen=True)
class AgentSupport:
    supported: bool
    reason: str


def _offers(enabled: Mapping[str, bool], commands: Iterable[str]) -> bool:
    return all(enabled.get(command, False) for command in commands)


def _propagated_by_agent(vmi: JSON) -> tuple[bool, bool]:
    """Whether the VMI's access credentials propagate (SSH keys, passwords) through the agent."""
    ssh = password = False
    for credential in (vmi.get("spec") or {}).get("accessCredentials") or []:
        key = credential.get("sshPublicKey") or {}
        if (key.get("propagationMethod") or {}).get("qemuGuestAgent") is not None:
            ssh = True
        user_password = credential.get("userPassword") or {}
        if (user_password.get("propagationMethod") or {}).get("qemuGuestAgent") is not None:
            password = True
    return ssh, password


def judge_commands(vmi: JSON, commands: Iterable[Mapping[str, Any]]) -> AgentSupport:
    """KubeVirt's verdict on the commands an agent reports (``supportedCommands``)."""
    enabled = {str(command.get("name") or ""): bool(command.get("enabled")) for command in commands}
    if not _offers(enabled, REQUIRED_COMMANDS):
        return AgentSupport(False, "This guest agent doesn't support required basic commands")
    ssh, password = _propagated_by_agent(vmi)
    if ssh and not (_offers(enabled, SSH_KEY_COMMANDS) or _offers(enabled, FILE_AND_EXEC_COMMANDS)):
        return AgentSupport(False, "This guest agent doesn't support required public key commands")
    if password and not _offers(enabled, PASSWORD_COMMANDS):
        return AgentSupport(False, "This guest agent doesn't support required password commands")
    return AgentSupport(True, "This guest agent is supported")


def judge_version(version: str, patterns: Iterable[str]) -> AgentSupport:
    """The fallback for an agent that lists no commands: its version against the accepted patterns
    (each a regular expression found anywhere in it, as Go's MatchString)."""
    for pattern in patterns:
        try:
            if re.search(pattern, version):
                return AgentSupport(True, "This guest agent is supported")
        except re.error:
            continue  # a pattern Go would have refused matches nothing here
    return AgentSupport(False, f"Guest agent version '{version}' is not supported")


def judge_guest_info(vmi: JSON, info: Mapping[str, Any], patterns: Iterable[str]) -> AgentSupport:
    """The verdict from a launcher's GetGuestInfo answer."""
    commands = info.get("supportedCommands") or []
    if commands:
        return judge_commands(vmi, commands)
    return judge_version(str(info.get("guestAgentVersion") or ""), patterns)


def update_unsupported_agent(status: JSON, support: AgentSupport | None, now: Callable[[], str]) -> None:
    """Sets or removes the condition; ``None`` (no verdict this sync) leaves it as it is."""
    if support is None:
        return
    if support.supported:
        remove_condition(status, UNSUPPORTED_AGENT)
        return
    if find_condition(status, UNSUPPORTED_AGENT) is None:
        condition = {
            "type": UNSUPPORTED_AGENT,
            "status": "True",
            "reason": support.reason,
            "lastProbeTime": now(),
            "lastTransitionTime": None,
        }
        status["conditions"] = [*conditions_of(status), condition]


ACCESS_CREDENTIALS_SYNCHRONIZED = "AccessCredentialsSynchronized"


def update_access_credentials(
    status: JSON, domain: JSON | None, now: Callable[[], str]
) -> tuple[str, str, str] | None:
    """``AccessCredentialsSynchronized`` from the launcher's last propagation (the domain metadata's
    ``accessCredential``); returns the event to record when the condition changed, else None."""
    metadata = (((domain or {}).get("Spec") or {}).get("Metadata") or {}).get("KubeVirt") or {}
    result = metadata.get("AccessCredential")
    if not isinstance(result, dict):
        return None
    message = str(result.get("Message") or "")
    state = "True" if result.get("Succeeded") else "False"
    current = find_condition(status, ACCESS_CREDENTIALS_SYNCHRONIZED)
    if current is not None and current.get("status") == state and (current.get("message") or "") == message:
        return None
    remove_condition(status, ACCESS_CREDENTIALS_SYNCHRONIZED)
    condition = {
        "type": ACCESS_CREDENTIALS_SYNCHRONIZED,
        "status": state,
        "lastProbeTime": None,
        "lastTransitionTime": now(),
    }
    if message:
        condition["message"] = message
    status["conditions"] = [*conditions_of(status), condition]
    if state == "True":
        text = (
            f"Access credentials sync successful: {message}"
            if message
            else "Access credentials sync successful."
        )
        return ("Normal", "AccessCredentialsSyncSuccess", text)
    return ("Warning", "AccessCredentialsSyncFailed", f"Access credentials sync failed: {message}")
