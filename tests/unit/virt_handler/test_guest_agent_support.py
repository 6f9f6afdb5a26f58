"""KubeVirt's verdict on a guest agent: the commands it must offer, those the VMI's access credentials
need, the version fallback, and the condition written from the verdict."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.virt_handler.guest_agent import (
    FILE_AND_EXEC_COMMANDS,
    PASSWORD_COMMANDS,
    REQUIRED_COMMANDS,
    SSH_KEY_COMMANDS,
    AgentSupport,
    judge_commands,
    judge_guest_info,
    judge_version,
    update_access_credentials,
    update_unsupported_agent,
)

JSON = dict[str, Any]
SUPPORTED = "This guest agent is supported"


def _commands(*groups: tuple[str, ...], disabled: tuple[str, ...] = ()) -> list[JSON]:
    names = [name for group in groups for name in group]
    return [{"name": name, "enabled": name not in disabled} for name in names]


def _vmi(*, ssh: bool = False, password: bool = False) -> JSON:
    credentials: list[JSON] = []
    if ssh:
        credentials.append(
            {
                "sshPublicKey": {
                    "source": {"secret": {"secretName": "k"}},
                    "propagationMethod": {"qemuGuestAgent": {"users": ["fedora"]}},
                }
            }
        )
    if password:
        credentials.append(
            {
                "userPassword": {
                    "source": {"secret": {"secretName": "p"}},
                    "propagationMethod": {"qemuGuestAgent": {}},
                }
            }
        )
    return {"spec": {"accessCredentials": credentials}} if credentials else {"spec": {}}


def test_the_basic_commands_are_required_and_must_be_enabled() -> None:
    assert judge_commands(_vmi(), _commands(REQUIRED_COMMANDS)) == AgentSupport(True, SUPPORTED)
    missing = judge_commands(_vmi(), _commands(REQUIRED_COMMANDS[1:]))
    assert missing == AgentSupport(False, "This guest agent doesn't support required basic commands")
    disabled = judge_commands(_vmi(), _commands(REQUIRED_COMMANDS, disabled=("guest-get-osinfo",)))
    assert not disabled.supported


def test_ssh_keys_through_the_agent_need_the_key_commands_or_the_file_and_exec_ones() -> None:
    vmi = _vmi(ssh=True)
    refused = judge_commands(vmi, _commands(REQUIRED_COMMANDS))
    assert refused == AgentSupport(False, "This guest agent doesn't support required public key commands")
    assert judge_commands(vmi, _commands(REQUIRED_COMMANDS, SSH_KEY_COMMANDS)).supported
    assert judge_commands(vmi, _commands(REQUIRED_COMMANDS, FILE_AND_EXEC_COMMANDS)).supported
    # A VMI that propagates no keys through the agent does not need them.
    assert judge_commands(_vmi(), _commands(REQUIRED_COMMANDS)).supported


def test_passwords_through_the_agent_need_set_user_password() -> None:
    vmi = _vmi(password=True)
    refused = judge_commands(vmi, _commands(REQUIRED_COMMANDS, SSH_KEY_COMMANDS))
    assert refused == AgentSupport(False, "This guest agent doesn't support required password commands")
    assert judge_commands(vmi, _commands(REQUIRED_COMMANDS, PASSWORD_COMMANDS)).supported


@pytest.mark.parametrize(
    ("version", "supported"),
    # Go's MatchString finds a pattern anywhere: "2.*" accepts 7.2.0 too.
    [("4.2.0", True), ("5.1", True), ("7.2.0", True), ("6.1.0", False), ("", False)],
)
def test_an_agent_listing_no_commands_is_judged_by_its_version(version: str, supported: bool) -> None:
    verdict = judge_guest_info(_vmi(), {"guestAgentVersion": version}, ("2.*", "3.*", "4.*", "5.*"))
    assert verdict.supported is supported
    if not supported:
        assert verdict.reason == f"Guest agent version '{version}' is not supported"


def test_a_pattern_go_would_refuse_matches_nothing() -> None:
    assert judge_version("1.0", ["(", "1\\.0"]).supported
    assert not judge_version("1.0", ["("]).supported


def test_the_condition_follows_the_verdict_and_keeps_its_first_probe_time() -> None:
    status: JSON = {"conditions": [{"type": "AgentConnected", "status": "True"}]}
    refused = AgentSupport(False, "This guest agent doesn't support required basic commands")
    update_unsupported_agent(status, refused, lambda: "2026-12-07T10:00:00Z")
    update_unsupported_agent(status, refused, lambda: "2026-12-07T10:05:00Z")
    (condition,) = [c for c in status["conditions"] if c["type"] == "AgentVersionNotSupported"]
    assert condition == {
        "type": "AgentVersionNotSupported",
        "status": "True",
        "reason": refused.reason,
        "lastProbeTime": "2026-12-07T10:00:00Z",
        "lastTransitionTime": None,
    }
    update_unsupported_agent(status, None, lambda: "later")  # no verdict: unchanged
    assert len(status["conditions"]) == 2
    update_unsupported_agent(status, AgentSupport(True, SUPPORTED), lambda: "later")
    assert [c["type"] for c in status["conditions"]] == ["AgentConnected"]


def _domain_with_credentials(succeeded: bool | None, message: str = "") -> JSON:
    result = None if succeeded is None else {"Succeeded": succeeded, "Message": message}
    return {"Spec": {"Metadata": {"KubeVirt": {"UID": "u", "AccessCredential": result}}}}


def test_the_access_credentials_condition_follows_the_launchers_last_propagation() -> None:
    status: JSON = {}
    assert update_access_credentials(status, _domain_with_credentials(None), lambda: "t0") is None
    assert "conditions" not in status

    failed = _domain_with_credentials(False, "Guest agent is offline")
    event = update_access_credentials(status, failed, lambda: "t1")
    assert event == (
        "Warning",
        "AccessCredentialsSyncFailed",
        "Access credentials sync failed: Guest agent is offline",
    )
    assert status["conditions"] == [
        {
            "type": "AccessCredentialsSynchronized",
            "status": "False",
            "message": "Guest agent is offline",
            "lastProbeTime": None,
            "lastTransitionTime": "t1",
        }
    ]
    assert update_access_credentials(status, failed, lambda: "t2") is None  # unchanged: no event, same time
    assert status["conditions"][0]["lastTransitionTime"] == "t1"

    event = update_access_credentials(status, _domain_with_credentials(True), lambda: "t3")
    assert event == ("Normal", "AccessCredentialsSyncSuccess", "Access credentials sync successful.")
    (condition,) = status["conditions"]
    assert (condition["status"], condition.get("message"), condition["lastTransitionTime"]) == (
        "True",
        None,
        "t3",
    )
