"""The requests each virtctl command sends, pinned to what KubeVirt v1.6's virtctl (client-go) sends:
method, path, query and JSON body (Go's encoder leaves zero-valued ``omitempty`` fields out)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from kubevirt.client import JSON
from kubevirt.virtctl import guest_agent, lifecycle, screenshot, vnc
from kubevirt.virtctl import root as root_module
from kubevirt.virtctl.root import root
from kubevirt.virtctl.streams import StreamError

VM = "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachines/vm"
VMI = "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm"


class RecordingClient:
    """Answers every call and records ``(method, path, query, body)``."""

    def __init__(self, answers: dict[str, bytes] | None = None) -> None:
        self.calls: list[tuple[str, str, dict[str, str] | None, Any]] = []
        self.answers = answers or {}

    def request(
        self, method: str, path: str, *, query: dict[str, str] | None = None, body: Any = None, **_: Any
    ) -> bytes:
        self.calls.append((method, path, query, body))
        return self.answers.get(path, b"{}")

    def get(self, _resource: Any, _namespace: str, name: str) -> JSON:
        self.calls.append(("GET", f"virtualmachines/{name}", None, None))
        return {"metadata": {"name": name}, "spec": {"runStrategy": "Always"}}

    def list(self, _resource: Any, namespace: str, *, label_selector: str) -> tuple[list[JSON], str]:
        self.calls.append(("LIST", f"{namespace}/migrations", {"labelSelector": label_selector}, None))
        done = {"metadata": {"name": "old"}, "status": {"phase": "Succeeded"}}
        return [done, {"metadata": {"name": "active"}, "status": {"phase": "Running"}}], "1"

    def delete(self, _resource: Any, namespace: str, name: str) -> None:
        self.calls.append(("DELETE", f"{namespace}/migrations/{name}", None, None))


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> RecordingClient:
    recording = RecordingClient(
        {
            "/apis/subresources.kubevirt.io": json.dumps(
                {"preferredVersion": {"groupVersion": "subresources.kubevirt.io/v1"}}
            ).encode(),
            "/apis/subresources.kubevirt.io/v1/version": json.dumps({"gitVersion": "v1.6.6"}).encode(),
        }
    )
    for module in (lifecycle, guest_agent, screenshot, vnc, root_module):
        monkeypatch.setattr(module, "connect", lambda _flags: (recording, "ns"))
    return recording


@pytest.mark.parametrize(
    ("args", "method", "path", "body"),
    [
        (["start", "vm"], "PUT", f"{VM}/start", {}),
        (["start", "vm", "--paused", "--dry-run"], "PUT", f"{VM}/start", {"paused": True, "dryRun": ["All"]}),
        (["stop", "vm"], "PUT", f"{VM}/stop", {}),
        (["stop", "vm", "--force", "--grace-period", "0"], "PUT", f"{VM}/stop", {"gracePeriod": 0}),
        (["restart", "vm", "--dry-run"], "PUT", f"{VM}/restart", {"dryRun": ["All"]}),
        (
            ["restart", "vm", "--force", "--grace-period", "0"],
            "PUT",
            f"{VM}/restart",
            {"gracePeriodSeconds": 0},
        ),
        (["migrate", "vm"], "PUT", f"{VM}/migrate", {}),
        (
            ["migrate", "vm", "--addedNodeSelector", "zone=a,disk=ssd"],
            "PUT",
            f"{VM}/migrate",
            {"addedNodeSelector": {"zone": "a", "disk": "ssd"}},
        ),
        (["pause", "vmi", "vm"], "PUT", f"{VMI}/pause", {}),
        (["unpause", "vmi", "vm", "--dry-run"], "PUT", f"{VMI}/unpause", {"dryRun": ["All"]}),
        (["soft-reboot", "vm"], "PUT", f"{VMI}/softreboot", None),  # client-go sends no body at all
        (["reset", "vm"], "PUT", f"{VMI}/reset", None),
        (["guestosinfo", "vm"], "GET", f"{VMI}/guestosinfo", None),
        (["userlist", "vm"], "GET", f"{VMI}/userlist", None),
        (["fslist", "vm"], "GET", f"{VMI}/filesystemlist", None),
    ],
)
def test_each_command_sends_client_gos_request(
    client: RecordingClient, args: list[str], method: str, path: str, body: Any
) -> None:
    result = CliRunner().invoke(root, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert client.calls[-1] == (method, path, None, body)


def test_pausing_a_vm_reads_the_vm_then_pauses_its_vmi(client: RecordingClient) -> None:
    result = CliRunner().invoke(root, ["pause", "vm", "vm"], catch_exceptions=False)
    assert result.exit_code == 0
    assert [call[:2] for call in client.calls] == [("GET", "virtualmachines/vm"), ("PUT", f"{VMI}/pause")]


def test_dry_run_notices_go_where_kubevirts_go(client: RecordingClient) -> None:
    del client
    runner = CliRunner()
    paused = runner.invoke(root, ["pause", "vmi", "vm", "--dry-run"], catch_exceptions=False)
    assert (paused.stdout, paused.stderr) == ("VMI vm was scheduled to pause\n", "Dry Run execution\n")
    unpaused = runner.invoke(root, ["unpause", "vmi", "vm", "--dry-run"], catch_exceptions=False)
    assert unpaused.stdout == "Dry Run execution\nVMI vm was scheduled to unpause\n"


def test_screenshot_always_names_move_cursor(client: RecordingClient, tmp_path: Any) -> None:
    target = tmp_path / "screen.png"
    client.answers[f"{VMI}/vnc/screenshot"] = b"\x89PNG-bytes"
    for flag, expected in (([], "false"), (["--move-cursor"], "true")):
        result = CliRunner().invoke(root, ["vnc", "screenshot", "vm", "-f", str(target), *flag])
        assert result.exit_code == 0, result.output
        assert client.calls[-1] == ("GET", f"{VMI}/vnc/screenshot", {"moveCursor": expected}, None)
    assert target.read_bytes() == b"\x89PNG-bytes"


def test_screenshot_needs_a_file(client: RecordingClient) -> None:
    result = CliRunner().invoke(root, ["vnc", "screenshot", "vm"])
    assert result.exit_code == 2
    assert "Missing option '-f' / '--file'" in result.output
    assert client.calls == []


def test_version_asks_the_groups_preferred_version(client: RecordingClient) -> None:
    result = CliRunner().invoke(root, ["version"], catch_exceptions=False)
    assert result.exit_code == 0
    assert [call[:2] for call in client.calls] == [
        ("GET", "/apis/subresources.kubevirt.io"),
        ("GET", "/apis/subresources.kubevirt.io/v1/version"),
    ]
    assert "v1.6.6" in result.stdout.splitlines()[1]


@pytest.mark.parametrize(("flag", "expected"), [([], "false"), (["--preserve-session"], "true")])
def test_vnc_always_names_preserve_session(
    client: RecordingClient, monkeypatch: pytest.MonkeyPatch, flag: list[str], expected: str
) -> None:
    del client
    opened: list[tuple[Any, ...]] = []

    def refuse(*args: Any) -> None:
        opened.append(args[1:])
        raise StreamError("refused")

    monkeypatch.setattr(vnc, "open_stream", refuse)
    result = CliRunner().invoke(root, ["vnc", "vm", "--proxy-only", *flag])
    assert result.exit_code == 1
    assert opened == [("ns", "vm", "vnc", {"preserveSession": expected})]


def test_migrate_cancel_deletes_the_one_unfinished_migration_it_selects(client: RecordingClient) -> None:
    result = CliRunner().invoke(root, ["migrate-cancel", "vm"], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (0, "VM vm was scheduled to migrate-cancel\n")
    assert client.calls == [
        ("LIST", "ns/migrations", {"labelSelector": "kubevirt.io/vmi-name==vm"}, None),
        ("DELETE", "ns/migrations/active", None, None),
    ]
