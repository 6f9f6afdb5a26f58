"""What the user may not read is named and the walk goes on; text and JSON output; the command."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner

from kubevirt.client import JSON, ApiError, ConnectionFailedError, ForbiddenError, Resource
from kubevirt.virtctl.diagnose import Status
from kubevirt.virtctl.diagnose import command as command_module
from kubevirt.virtctl.diagnose.output import as_text
from kubevirt.virtctl.root import root
from kubevirt_testing import vm_chain as chain
from kubevirt_testing.fake_kube_api import FakeKubeApi

from .harness import NAME, NS, RUNNING_VM_STATUS, broken, by_name, scene, walk


class Refusing:
    """The fake API behind an RBAC that refuses some plurals."""

    def __init__(self, api: FakeKubeApi, refused: set[str]) -> None:
        self.api = api
        self.refused = refused
        self.writes = api.writes

    def _check(self, resource: Resource) -> None:
        if resource.plural in self.refused:
            raise ForbiddenError(403, "Forbidden", f"{resource.plural} is forbidden: User cannot list")

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        self._check(resource)
        return self.api.get(resource, namespace, name)

    def list(
        self, resource: Resource, namespace: str | None = None, **selectors: Any
    ) -> tuple[list[JSON], str]:
        self._check(resource)
        return self.api.list(resource, namespace, **selectors)


def test_a_user_who_sees_only_vms_gets_forbidden_for_the_rest_and_an_answer() -> None:
    api = Refusing(
        scene(), {"pods", "nodes", "virtualmachineinstances", "events", "virtualmachineinstancemigrations"}
    )
    links = walk(api)
    found = by_name(links)
    assert found["vm"].status is Status.OK
    assert found["vmi"].message == (
        f"could not see VirtualMachineInstance {NS}/{NAME}: forbidden; looking for its launcher pod by name."
    )
    assert found["scheduling"].message == (
        f"could not see pods in namespace {NS} (kubevirt.io=virt-launcher): forbidden; "
        "the launcher pod's state is not known."
    )
    assert found["containers"].status is Status.UNKNOWN
    assert found["node"].status is Status.UNKNOWN
    assert (
        found["migration"].message
        == f"could not see virtualmachineinstancemigrations in namespace {NS}: forbidden."
    )
    assert all(link.status is not Status.BROKEN for link in links)


def test_forbidden_nodes_still_let_the_scheduler_reason_through() -> None:
    said = "0/3 nodes are available: 3 Insufficient devices.kubevirt.io/kvm."
    vmi = chain.vmi(NAME, NS, phase="Scheduling", node=None, conditions=[])

    def pod(uid: str) -> dict[str, object]:
        scheduled = [chain.condition("PodScheduled", "False", "Unschedulable", said)]
        return chain.launcher_pod(NAME, NS, uid, node=None, phase="Pending", conditions=scheduled)

    link = broken(walk(Refusing(scene(vmi=vmi, pod=pod), {"nodes"})))
    assert link.message.endswith(f"the scheduler says {said!r}.")
    assert link.evidence["nodes"] == "could not see nodes: forbidden"


def test_a_broken_connection_is_named_not_raised() -> None:
    api = scene()
    api.fail_with = ApiError(503, "ServiceUnavailable", "etcd is down")
    links = walk(api)
    assert links[0].message.startswith(
        f"could not see VirtualMachine {NS}/{NAME}: 503 ServiceUnavailable: etcd is down"
    )


@pytest.fixture
def fake_cluster(monkeypatch: pytest.MonkeyPatch) -> FakeKubeApi:
    api = scene(nodes=[chain.node(schedulable="false", heartbeat=datetime.now(UTC))])
    monkeypatch.setattr(command_module, "connect", lambda flags: (api, flags.namespace or "default"))
    return api


def test_the_command_prints_the_walk_and_exits_1_at_a_broken_link(fake_cluster: FakeKubeApi) -> None:
    result = CliRunner().invoke(root, ["diagnose", "vm", NAME, "-n", NS])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"VirtualMachine {NS}/{NAME}"
    assert lines[1] == "  [ok]      vm: runStrategy Always, Running."
    assert "  [broken]  node: Node node-a is marked kubevirt.io/schedulable=false" in result.output
    assert "schedulable: false" in result.output  # the evidence under the broken link
    assert lines[-1].startswith("Stopped at the node link: Node node-a is marked")


def test_json_output_is_one_object_per_link(fake_cluster: FakeKubeApi) -> None:
    result = CliRunner().invoke(root, ["-n", NS, "diagnose", "vm", NAME, "--output", "json"])
    links = json.loads(result.output)
    assert [link["link"] for link in links] == ["vm", "vmi", "scheduling", "containers", "node"]
    assert links[-1]["status"] == "broken"
    assert links[-1]["evidence"]["schedulable"] == "false"
    assert set(links[0]) == {"link", "status", "message", "evidence"}
    assert fake_cluster.writes == []


def test_a_healthy_chain_exits_0_and_says_what_was_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    api = scene(nodes=[chain.node(heartbeat=datetime.now(UTC) - timedelta(seconds=10))])
    monkeypatch.setattr(command_module, "connect", lambda flags: (api, "ns"))
    result = CliRunner().invoke(root, ["diagnose", "vmi", NAME])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "No broken link found; not checked: launcher."


def test_an_unknown_kind_is_a_usage_error() -> None:
    result = CliRunner().invoke(root, ["diagnose", "pod", NAME])
    assert result.exit_code == 2
    assert "'pod' is not one of 'vm', 'vmi'" in result.output


def test_control_characters_from_the_cluster_cannot_reach_the_terminal() -> None:
    said = "0/1 nodes\x1b[2J\nforged line\r"
    scheduled = [chain.condition("PodScheduled", "False", "Unschedulable", said)]
    vmi = chain.vmi(NAME, NS, phase="Scheduling", node=None, conditions=[])

    def pod(uid: str) -> JSON:
        return chain.launcher_pod(NAME, NS, uid, node=None, phase="Pending", conditions=scheduled)

    text = as_text("vm", NS, NAME, walk(scene(vmi=vmi, pod=pod)))
    assert "\x1b" not in text
    assert "\r" not in text
    assert not any(line.startswith("forged") for line in text.splitlines())
    assert "0/1 nodes\\x1b[2J\\nforged line\\r" in text


def test_a_failure_record_without_a_retry_time_holds_nothing_back() -> None:
    status = {**RUNNING_VM_STATUS, "startFailure": {"consecutiveFailCount": 1}}
    links = walk(scene(vm=chain.vm(NAME, NS, status=status)))
    assert links[0].status is Status.OK


class Unreachable:
    """An API server that cannot be reached; counts the attempts."""

    def __init__(self) -> None:
        self.calls = 0
        self.writes: list[object] = []

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        self.calls += 1
        raise ConnectionFailedError("GET: connection refused")

    def list(
        self, resource: Resource, namespace: str | None = None, **selectors: Any
    ) -> tuple[list[JSON], str]:
        self.calls += 1
        raise ConnectionFailedError("GET: connection refused")


def test_an_unreachable_server_is_tried_once_and_named_on_every_link() -> None:
    api = Unreachable()
    links = walk(api)
    assert api.calls == 1
    assert links[0].message.startswith(f"could not see VirtualMachine {NS}/{NAME}: 0 ConnectionFailed: GET")
    assert {link.status for link in links} == {Status.UNKNOWN}
    assert "connection refused" in links[-1].message
