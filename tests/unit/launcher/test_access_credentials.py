"""Access credentials through the guest agent: what the mounted Secrets ask for, one propagation's
outcome as KubeVirt reports it, and the worker that follows a Secret's changes."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kubevirt.virt_launcher.virtwrap import api
from kubevirt.virt_launcher.virtwrap.access_credentials import (
    AGENT_OFFLINE,
    AccessCredentialWorker,
    Outcome,
    metadata_change,
    propagate,
    read_credentials,
)
from kubevirt.virt_launcher.virtwrap.agent import AgentError

JSON = dict[str, Any]


def _ssh(secret: str, *users: str) -> JSON:
    return {
        "sshPublicKey": {
            "source": {"secret": {"secretName": secret}},
            "propagationMethod": {"qemuGuestAgent": {"users": list(users)}},
        }
    }


def _password(secret: str) -> JSON:
    return {
        "userPassword": {
            "source": {"secret": {"secretName": secret}},
            "propagationMethod": {"qemuGuestAgent": {}},
        }
    }


def _mount(base: Path, secret: str, files: dict[str, str]) -> Path:
    """A Secret as the kubelet mounts it: the keys are links into a ``..data`` swap folder."""
    folder = base / f"{secret}-access-cred"
    data = folder / "..2026_12_07_10_00_00.1"
    data.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (data / name).write_text(text)
        link = folder / name
        if not link.exists():
            link.symlink_to(Path(data.name) / name)
    return folder


class Agent:
    def __init__(self) -> None:
        self.offline = False
        self.refuse_keys = ""
        self.keys: dict[str, list[str]] = {}
        self.passwords: dict[str, str] = {}
        self.calls = 0
        self.called = threading.Event()

    def ping(self) -> None:
        self.calls += 1
        self.called.set()
        if self.offline:
            raise AgentError("Guest agent is not responding: QEMU guest agent is not connected")

    def set_authorized_keys(self, user: str, keys: list[str]) -> None:
        if self.refuse_keys:
            raise AgentError(self.refuse_keys)
        self.keys[user] = keys

    def set_user_password(self, user: str, password: str) -> None:
        self.passwords[user] = password


def test_keys_of_every_secret_naming_a_user_and_passwords_per_file(tmp_path: Path) -> None:
    _mount(tmp_path, "keys-a", {"key1": "ssh-ed25519 AAAA a@x\n\n  ssh-rsa BBBB b@x  \n"})
    _mount(tmp_path, "keys-b", {"key": "ssh-ed25519 CCCC c@x"})
    _mount(tmp_path, "passwords", {"fedora": " s3cret\n", "empty": "  \n"})
    credentials = [_ssh("keys-a", "fedora", "root"), _ssh("keys-b", "fedora"), _password("passwords")]
    wanted, errors = read_credentials(credentials, tmp_path)
    assert errors == []
    assert wanted.keys == {
        "fedora": ["ssh-ed25519 AAAA a@x", "ssh-rsa BBBB b@x", "ssh-ed25519 CCCC c@x"],
        "root": ["ssh-ed25519 AAAA a@x", "ssh-rsa BBBB b@x"],
    }
    assert wanted.passwords == {"fedora": "s3cret"}


def test_credentials_propagated_otherwise_are_left_alone(tmp_path: Path) -> None:
    cloud_init = {
        "sshPublicKey": {"source": {"secret": {"secretName": "k"}}, "propagationMethod": {"noCloud": {}}}
    }
    wanted, errors = read_credentials([cloud_init], tmp_path)
    assert (wanted.keys, wanted.passwords, errors) == ({}, {}, [])


def test_a_propagation_reports_success_or_the_last_error_in_kubevirts_words(tmp_path: Path) -> None:
    _mount(tmp_path, "keys", {"key": "ssh-ed25519 AAAA a@x"})
    agent = Agent()
    credentials = [_ssh("keys", "fedora")]
    assert propagate(agent, credentials, tmp_path) == Outcome(True, "")
    assert agent.keys == {"fedora": ["ssh-ed25519 AAAA a@x"]}

    agent.refuse_keys = "internal error: unable to execute QEMU agent command 'guest-ssh-add-authorized-keys'"
    refused = propagate(agent, credentials, tmp_path)
    assert refused == Outcome(
        False,
        "Error encountered writing ssh pub key access credentials for user [fedora]: " + agent.refuse_keys,
    )

    agent.offline = True
    assert propagate(agent, credentials, tmp_path) == Outcome(False, AGENT_OFFLINE)


def test_a_secret_that_cannot_be_read_fails_the_propagation_naming_its_folder(tmp_path: Path) -> None:
    outcome = propagate(Agent(), [_ssh("missing", "fedora")], tmp_path)
    assert not outcome.succeeded
    assert outcome.message.startswith("error occurred while reading the list of secrets files")
    assert "missing-access-cred" in outcome.message


def test_an_oversized_secret_file_is_refused(tmp_path: Path) -> None:
    _mount(tmp_path, "keys", {"key": "x" * ((1 << 20) + 1)})
    outcome = propagate(Agent(), [_ssh("keys", "fedora")], tmp_path)
    assert not outcome.succeeded
    assert "larger than 1 MiB" in outcome.message


def test_the_worker_follows_a_changed_secret_and_reports_each_new_outcome(tmp_path: Path) -> None:
    _mount(tmp_path, "keys", {"key": "ssh-ed25519 AAAA a@x"})
    agent = Agent()
    reports: list[Outcome] = []
    reported = threading.Event()

    def report(outcome: Outcome) -> None:
        reports.append(outcome)
        reported.set()

    worker = AccessCredentialWorker(agent, report, base=tmp_path, interval=0.02, forced_resync=3600)
    worker.start([_ssh("keys", "fedora")])
    worker.start([_ssh("keys", "fedora")])  # once only
    try:
        assert reported.wait(5)
        assert reports == [Outcome(True, "")]
        calls = agent.calls
        agent.called.clear()
        assert not agent.called.wait(0.2)  # nothing changed: the agent is left alone
        assert agent.calls == calls

        _mount(tmp_path, "keys", {"key": "ssh-ed25519 DDDD d@x"})  # the kubelet swapped the Secret
        assert agent.called.wait(5)
        deadline = threading.Event()
        while agent.keys.get("fedora") != ["ssh-ed25519 DDDD d@x"] and not deadline.wait(0.02):
            pass
        assert agent.keys["fedora"] == ["ssh-ed25519 DDDD d@x"]
        assert reports == [Outcome(True, "")]  # the same outcome is not reported again
    finally:
        worker.stop()


def test_a_worker_without_agent_propagated_credentials_does_not_start(tmp_path: Path) -> None:
    agent = Agent()
    worker = AccessCredentialWorker(agent, lambda _outcome: None, base=tmp_path, interval=0.01)
    worker.start([])
    worker.stop()
    assert agent.calls == 0


def test_the_outcome_is_recorded_in_the_domain_metadata() -> None:
    metadata = api.KubeVirtMetadata(uid="u")
    metadata_change(Outcome(False, AGENT_OFFLINE))(metadata)
    xml = metadata.to_xml()
    assert "<succeeded>false</succeeded>" in xml
    assert f"<message>{AGENT_OFFLINE}</message>" in xml


def test_the_first_propagation_waits_one_interval_for_the_agent_to_come_up(tmp_path: Path) -> None:
    _mount(tmp_path, "keys", {"key": "ssh-ed25519 AAAA a@x"})
    agent = Agent()
    worker = AccessCredentialWorker(agent, lambda _outcome: None, base=tmp_path, interval=0.5)
    worker.start([_ssh("keys", "fedora")])
    try:
        assert not agent.called.wait(0.3)  # nothing before the first interval ended
        assert agent.called.wait(5)
    finally:
        worker.stop()
