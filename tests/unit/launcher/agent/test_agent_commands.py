"""The guest-agent commands virt-handler sends, through the command server and the domain manager:
answers and error texts as KubeVirt's launcher gives them, the freeze and its automatic thaw, exec,
ping, soft reboot through the agent, and the domain updates the agent's data causes."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import grpc
import libvirt
import pytest

from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.virt_launcher.events import DomainEventForwarder
from kubevirt.virt_launcher.virtwrap.agent import GuestAgent
from kubevirt.virt_launcher.virtwrap.cmd_server.server import CommandServer
from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.migration import Migrator

from .harness import DOMAIN_NAME, FakeDomain, libvirt_error, not_connected, reply

Make = Callable[..., tuple[DomainManager, list[str]]]
NOT_CONNECTED = "Guest agent is not responding: QEMU guest agent is not connected"


def vmi(**status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = status.pop("spec", {})
    return {
        "metadata": {"name": "vm", "namespace": "ns", "uid": "vmi-uid"},
        "spec": spec,
        "status": {"phase": "Running", **status},
    }


def payload(the_vmi: dict[str, Any] | None = None) -> cmd_pb2.VMI:
    return cmd_pb2.VMI(vmiJson=json.dumps(the_vmi or vmi()).encode())


class Context:
    """What a gRPC servicer is given to fail a call."""

    def __init__(self) -> None:
        self.code: grpc.StatusCode | None = None
        self.details = ""

    def set_code(self, code: grpc.StatusCode) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details


def server_of(manager: DomainManager, tmp_path: Any) -> CommandServer:
    return CommandServer(manager, Migrator(manager, tmp_path))


# Read anew on each call (mypy would narrow a repeated attribute read).
def polling(manager: DomainManager) -> bool:
    return manager.agent.poller.running


def thaw_pending(manager: DomainManager) -> bool:
    return manager.agent.safety_thaw.pending


def frozen(dom: FakeDomain) -> bool:
    return dom.frozen


def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


# -- what virt-handler reads ---------------------------------------------------------------------


def test_guest_info_before_any_poll_is_kubevirts_empty_answer(make_manager: Make, tmp_path: Any) -> None:
    manager, _ = make_manager(FakeDomain())
    server = server_of(manager, tmp_path)
    reply_ = server.GetGuestInfo(cmd_pb2.EmptyRequest(), None)
    assert reply_.response.success
    assert json.loads(reply_.guestInfoResponse) == {"os": {}, "timezone": ", 0", "fsInfo": {"disks": None}}
    users = server.GetUsers(cmd_pb2.EmptyRequest(), None)
    assert (users.response.success, users.guestUserListResponse) == (True, "[]")
    filesystems = server.GetFilesystems(cmd_pb2.EmptyRequest(), None)
    assert (filesystems.response.success, filesystems.guestFilesystemsResponse) == (True, "[]")


def test_guest_info_users_and_filesystems_after_a_poll(make_manager: Make, tmp_path: Any) -> None:
    dom = FakeDomain()
    many_users = {"user.count": 12, **{f"user.{i}.name": f"user{i}" for i in range(12)}}
    dom.answers["guest-get-fsinfo"] = reply(
        [{"name": f"vd{i}", "mountpoint": f"/m{i}", "type": "xfs", "disk": []} for i in range(11)]
    )
    manager, _ = make_manager(dom)
    manager.agent.poller.poll_all()
    dom.guest_info_answer = many_users
    manager.agent.poller.poll_users()
    server = server_of(manager, tmp_path)
    info = json.loads(server.GetGuestInfo(cmd_pb2.EmptyRequest(), None).guestInfoResponse)
    assert info["guestAgentVersion"] == "9.0.0"
    assert info["supportedCommands"] == [{"name": "guest-ping", "enabled": True}, {"name": "guest-exec"}]
    assert info["hostname"] == "fedora-guest"
    assert info["os"] == {
        "name": "Fedora Linux",
        "kernelRelease": "6.11.4-301.fc41.x86_64",
        "version": "41 (Cloud Edition)",
        "prettyName": "Fedora Linux 41 (Cloud Edition)",
        "versionId": "41",
        "kernelVersion": "#1 SMP PREEMPT_DYNAMIC",
        "machine": "x86_64",
        "id": "fedora",
    }
    assert info["timezone"] == "UTC, 0"
    assert info["fsFreezeStatus"] == "thawed"
    # GetGuestInfo lists ten users and filesystems; GetUsers and GetFilesystems list them all.
    assert [user["userName"] for user in info["userList"]] == [f"user{i}" for i in range(10)]
    assert len(info["fsInfo"]["disks"]) == 10
    assert info["fsInfo"]["disks"][0] == {
        "diskName": "vd0",
        "mountPoint": "/m0",
        "fileSystemType": "xfs",
        "usedBytes": 0,
        "totalBytes": 0,
    }
    users = json.loads(server.GetUsers(cmd_pb2.EmptyRequest(), None).guestUserListResponse)
    assert len(users) == 12
    assert users[0] == {"userName": "user0"}
    filesystems = json.loads(server.GetFilesystems(cmd_pb2.EmptyRequest(), None).guestFilesystemsResponse)
    assert len(filesystems) == 11


# -- the domain and its updates ------------------------------------------------------------------


def test_agent_data_in_events_and_get_domain(make_manager: Make) -> None:
    dom = FakeDomain()
    manager, changes = make_manager(dom)
    before = manager.domain_to_json(dom, for_event=True)
    assert before["Status"]["Interfaces"] is None
    assert before["Status"]["OSInfo"]["Name"] == ""
    manager.agent.poller.poll_all()
    assert changes  # the launcher reports the domain again
    event = manager.domain_to_json(dom, for_event=True)
    assert event["Status"]["Interfaces"] == [
        {
            "Mac": "52:54:00:12:34:56",
            "Ip": "10.0.2.2",
            "IPs": ["fe80::5054:ff:fe12:3456", "10.0.2.2"],
            "InterfaceName": "eth0",
        }
    ]
    assert event["Status"]["OSInfo"]["PrettyName"] == "Fedora Linux 41 (Cloud Edition)"
    assert event["Status"]["FSFreezeStatus"] == {"Status": "thawed"}
    assert event["Spec"]["Devices"]["Channels"][0]["Target"]["State"] == "connected"
    # GetDomain carries the same agent data: it is what virt-handler reads the VMI's status from.
    got = manager.get_domain()
    assert got is not None
    assert got["Status"] == event["Status"]


def test_the_poller_runs_while_the_domain_runs_with_its_agent_connected(make_manager: Make) -> None:
    dom = FakeDomain(channel="disconnected")
    manager, _ = make_manager(dom)
    forwarder = DomainEventForwarder(manager, None)
    seen: list[dict[str, Any]] = []
    forwarder.add_listener(lambda _, domain: seen.append(domain))
    forwarder._report(DOMAIN_NAME, "MODIFIED")
    assert not polling(manager)

    # libvirt's agent-lifecycle event: the launcher reports the domain, whose channel is now connected.
    dom.channel = "connected"
    forwarder._on_agent_lifecycle(
        None, dom, libvirt.VIR_CONNECT_DOMAIN_EVENT_AGENT_LIFECYCLE_STATE_CONNECTED, 2, None
    )
    assert forwarder._queue.get_nowait() == (DOMAIN_NAME, "MODIFIED")
    forwarder._report(DOMAIN_NAME, "MODIFIED")
    assert seen[-1]["Spec"]["Devices"]["Channels"][0]["Target"]["State"] == "connected"
    assert polling(manager)
    # libvirt's agent calls without a timeout of their own get one.
    assert dom.called("agentSetResponseTimeout") == [30]

    dom.channel = "disconnected"
    forwarder._report(DOMAIN_NAME, "MODIFIED")
    assert not polling(manager)
    dom.channel = "connected"
    forwarder._report(DOMAIN_NAME, "MODIFIED")
    assert polling(manager)
    dom.current_state = libvirt.VIR_DOMAIN_SHUTOFF
    forwarder._report(DOMAIN_NAME, "MODIFIED")
    assert not polling(manager)
    manager.sync_agent_poller(None)
    assert not polling(manager)


def test_an_agent_answer_that_changes_the_status_sends_a_domain_update(make_manager: Make) -> None:
    dom = FakeDomain()
    manager, changes = make_manager(dom, sys=0.05, file=0.05, user=0.05, version=0.05, fsfreeze=0.05)
    manager.sync_agent_poller(manager.domain_to_json(dom))
    wait_until(lambda: len(changes) >= 2)
    settled = len(changes)
    time.sleep(0.3)  # more polls, the same answers: no more updates
    assert len(changes) == settled
    dom.frozen = True
    wait_until(lambda: len(changes) == settled + 1)
    manager.sync_agent_poller(None)


# -- freeze and thaw -----------------------------------------------------------------------------


def test_freeze_thaws_by_itself_after_the_unfreeze_timeout(make_manager: Make) -> None:
    dom = FakeDomain()
    manager, changes = make_manager(dom)
    agent: GuestAgent = manager.agent
    thawed: list[int] = []

    def thaw_later() -> None:
        thawed.append(1)
        agent.thaw(dom)

    agent.freeze(dom, 0.2, thaw_later=thaw_later)
    assert dom.called("fsFreeze") == [None]
    assert agent.store.fs_freeze_status() == "frozen"  # read again at once: the status follows
    assert changes
    assert agent.safety_thaw.pending
    wait_until(lambda: bool(dom.called("fsThaw")))
    assert thawed == [1]
    assert agent.store.fs_freeze_status() == "thawed"
    assert not agent.safety_thaw.pending


def test_a_second_freeze_while_frozen_changes_nothing_and_unfreeze_cancels_the_thaw(
    make_manager: Make,
) -> None:
    dom = FakeDomain()
    manager, _ = make_manager(dom)
    agent: GuestAgent = manager.agent
    fired: list[int] = []
    agent.freeze(dom, 0.3, thaw_later=lambda: fired.append(1))
    agent.freeze(dom, 100, thaw_later=lambda: fired.append(2))
    assert len(dom.called("fsFreeze")) == 1  # KubeVirt: already frozen, nothing to do
    wait_until(lambda: fired == [1])  # the first timer still stands
    agent.thaw(dom)
    agent.freeze(dom, 0.2, thaw_later=lambda: fired.append(3))
    agent.thaw(dom)  # cancels the pending thaw
    assert not agent.safety_thaw.pending
    time.sleep(0.4)
    assert fired == [1]
    thaws = len(dom.called("fsThaw"))
    agent.thaw(dom)  # already thawed: the guest's thaw hooks do not run again
    assert len(dom.called("fsThaw")) == thaws


def test_a_freeze_after_a_thaw_replaces_the_pending_thaw(make_manager: Make) -> None:
    dom = FakeDomain()
    manager, _ = make_manager(dom)
    agent: GuestAgent = manager.agent
    fired: list[int] = []
    agent.freeze(dom, 0.2, thaw_later=lambda: fired.append(1))
    dom.frozen = False  # thawed in the guest meanwhile
    agent.freeze(dom, 0.6, thaw_later=lambda: fired.append(2))
    time.sleep(0.4)
    assert fired == []
    wait_until(lambda: fired == [2])


def test_a_freeze_that_times_out_is_still_thawed_later(
    make_manager: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubevirt.virt_launcher.virtwrap.agent import guest_agent

    monkeypatch.setattr(guest_agent, "FREEZE_WAIT", 0.1)
    dom = FakeDomain({"fsFreeze": lambda: time.sleep(0.5)})
    manager, _ = make_manager(dom)
    with pytest.raises(Exception, match=r"no answer from the guest agent within 0\.1s"):
        manager.agent.freeze(dom, 30, thaw_later=lambda: None)
    assert thaw_pending(manager)


def test_freeze_and_unfreeze_through_the_server(make_manager: Make, tmp_path: Any) -> None:
    dom = FakeDomain()
    manager, _ = make_manager(dom)
    server = server_of(manager, tmp_path)
    answer = server.FreezeVirtualMachine(
        cmd_pb2.FreezeRequest(vmi=payload(), unfreezeTimeoutSeconds=60), None
    )
    assert answer.success, answer.message
    assert frozen(dom)
    assert thaw_pending(manager)
    thawed = server.UnfreezeVirtualMachine(cmd_pb2.VMIRequest(vmi=payload()), None)
    assert thawed.success, thawed.message
    assert not frozen(dom)
    assert not thaw_pending(manager)
    # No timeout: no automatic thaw.
    server.FreezeVirtualMachine(cmd_pb2.FreezeRequest(vmi=payload(), unfreezeTimeoutSeconds=0), None)
    assert frozen(dom)
    assert not thaw_pending(manager)


def test_freeze_failures_as_kubevirt_reports_them(make_manager: Make, tmp_path: Any) -> None:
    dom = FakeDomain({"guest-fsfreeze-status": not_connected()})
    manager, _ = make_manager(dom)
    server = server_of(manager, tmp_path)
    request = cmd_pb2.FreezeRequest(vmi=payload(), unfreezeTimeoutSeconds=5)
    answer = server.FreezeVirtualMachine(request, None)
    assert not answer.success
    assert answer.message == f"LibvirtError(Code=86, Domain=10, Message='{NOT_CONNECTED}')"
    assert dom.called("fsFreeze") == []

    dom.answers["guest-fsfreeze-status"] = reply("thawed")
    timed_out = "Guest agent is not responding: Guest agent not available for now"
    dom.answers["fsFreeze"] = libvirt_error(libvirt.VIR_ERR_AGENT_UNRESPONSIVE, timed_out)
    answer = server.FreezeVirtualMachine(request, None)
    assert answer.message == f"LibvirtError(Code=86, Domain=10, Message='{timed_out}')"
    assert thaw_pending(manager)  # the freeze may still complete in the guest
    manager.agent.safety_thaw.cancel()

    dom.migration = "2026-01-01T00:00:00Z"
    answer = server.FreezeVirtualMachine(request, None)
    assert answer.message == "Failed to freeze VMI, VMI is currently during migration"


def test_freeze_syncs_a_persistent_tpm_state_first(
    make_manager: Make, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubevirt.virt_launcher.virtwrap import manager as manager_module

    dom = FakeDomain()
    manager, _ = make_manager(dom)
    server = server_of(manager, tmp_path)
    with_tpm = vmi(spec={"domain": {"devices": {"tpm": {"persistent": True}}}})
    monkeypatch.setattr(manager_module, "SWTPM_DIR", str(tmp_path / "missing"))
    request = cmd_pb2.FreezeRequest(vmi=payload(with_tpm), unfreezeTimeoutSeconds=5)
    answer = server.FreezeVirtualMachine(request, None)
    assert not answer.success
    assert "fsync error to TPM state directory" in answer.message
    assert dom.called("fsFreeze") == []
    monkeypatch.setattr(manager_module, "SWTPM_DIR", str(tmp_path))
    assert server.FreezeVirtualMachine(request, None).success
    assert frozen(dom)


# -- ping and exec -------------------------------------------------------------------------------


def test_guest_ping_uses_the_requests_timeout(make_manager: Make, tmp_path: Any) -> None:
    dom = FakeDomain()
    manager, _ = make_manager(dom)
    server = server_of(manager, tmp_path)
    context = Context()
    answer = server.GuestPing(cmd_pb2.GuestPingRequest(domainName=DOMAIN_NAME, timeoutSeconds=3), context)
    assert answer.response.success
    assert context.code is None
    assert dom.timeouts["guest-ping"] == 3
    server.GuestPing(cmd_pb2.GuestPingRequest(domainName=DOMAIN_NAME), context)
    assert dom.timeouts["guest-ping"] == 10  # none given: never libvirt's blocking default


def test_guest_ping_without_an_agent_fails_the_call(make_manager: Make, tmp_path: Any) -> None:
    manager, _ = make_manager(FakeDomain({"guest-ping": not_connected()}))
    server = server_of(manager, tmp_path)
    context = Context()
    answer = server.GuestPing(cmd_pb2.GuestPingRequest(domainName=DOMAIN_NAME, timeoutSeconds=1), context)
    expected = f"virError(Code=86, Domain=10, Message='{NOT_CONNECTED}')"
    assert (answer.response.success, answer.response.message) == (False, expected)
    assert (context.code, context.details) == (grpc.StatusCode.UNKNOWN, expected)
    context = Context()
    server.GuestPing(cmd_pb2.GuestPingRequest(domainName="other_vm"), context)
    assert (context.code, context.details) == (grpc.StatusCode.UNKNOWN, "Domain other_vm not found.")


def exec_answers(*statuses: dict[str, Any], pid: int = 7) -> dict[str, Any]:
    pending = list(statuses)

    def status(_: Any) -> str:
        return reply(pending.pop(0) if len(pending) > 1 else pending[0])

    return {"guest-exec": reply({"pid": pid}), "guest-exec-status": status}


def run_exec(server: CommandServer, timeout: int = 2) -> tuple[cmd_pb2.ExecResponse, Context]:
    context = Context()
    request = cmd_pb2.ExecRequest(
        domainName=DOMAIN_NAME, Command="/usr/bin/echo", Args=["a b", '"c"'], timeoutSeconds=timeout
    )
    return server.Exec(request, context), context


def test_exec_runs_the_command_and_answers_its_output(make_manager: Make, tmp_path: Any) -> None:
    out = base64.b64encode(b'a b "c"\n').decode()
    dom = FakeDomain(exec_answers({"exited": False}, {"exited": True, "exitcode": 0, "out-data": out}))
    manager, _ = make_manager(dom)
    answer, context = run_exec(server_of(manager, tmp_path))
    assert (answer.response.success, answer.exitCode, answer.stdOut) == (True, 0, 'a b "c"\n')
    assert context.code is None
    # The arguments go as JSON values, never spliced into the command's text.
    assert dom.called("guest-exec") == [
        {"path": "/usr/bin/echo", "arg": ["a b", '"c"'], "capture-output": True}
    ]
    assert dom.called("guest-exec-status") == [{"pid": 7}, {"pid": 7}]


def test_exec_non_zero_exit_is_a_successful_call(make_manager: Make, tmp_path: Any) -> None:
    out = base64.b64encode(b"nope").decode()
    dom = FakeDomain(exec_answers({"exited": True, "exitcode": 3, "out-data": out}))
    manager, _ = make_manager(dom)
    answer, context = run_exec(server_of(manager, tmp_path))
    assert (answer.response.success, answer.exitCode, answer.stdOut) == (True, 3, "nope")
    assert context.code is None


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        (
            exec_answers({"exited": False}),
            "Timed out waiting for guest pid [7] for command [/usr/bin/echo] to exit",
        ),
        (exec_answers({"exited": True}, pid=0), "Invalid pid [0] returned from qemu agent"),
        ({"guest-exec": "garbage"}, "malformed reply to guest-exec"),
        (
            {"guest-exec": reply({"pid": 7}), "guest-exec-status": reply([])},
            "guest-exec-status: expected an object",
        ),
        ({"guest-exec": not_connected()}, f"virError(Code=86, Domain=10, Message='{NOT_CONNECTED}')"),
        ({}, "The command guest-exec has not been found"),
    ],
)
def test_exec_failures_fail_the_call(
    make_manager: Make, tmp_path: Any, answers: dict[str, Any], message: str
) -> None:
    manager, _ = make_manager(FakeDomain(answers))
    started = time.monotonic()
    answer, context = run_exec(server_of(manager, tmp_path), timeout=1)
    assert time.monotonic() - started < 3
    assert not answer.response.success
    assert message in answer.response.message
    assert (context.code, context.details) == (grpc.StatusCode.UNKNOWN, answer.response.message)


# -- soft reboot ---------------------------------------------------------------------------------


def reboot(manager: DomainManager, tmp_path: Any, the_vmi: dict[str, Any]) -> cmd_pb2.Response:
    server = server_of(manager, tmp_path)
    answer: cmd_pb2.Response = server.SoftRebootVirtualMachine(cmd_pb2.VMIRequest(vmi=payload(the_vmi)), None)
    return answer


AGENT_CONNECTED = {"conditions": [{"type": "AgentConnected", "status": "True"}]}


def test_soft_reboot_goes_through_a_connected_agent(make_manager: Make, tmp_path: Any) -> None:
    dom = FakeDomain(acpi=False)
    manager, _ = make_manager(dom)
    assert reboot(manager, tmp_path, vmi(**AGENT_CONNECTED)).success
    assert dom.called("reboot") == [libvirt.VIR_DOMAIN_REBOOT_GUEST_AGENT]
    # An agent that does not answer is no failure (KubeVirt's).
    dom.answers["reboot"] = libvirt_error(libvirt.VIR_ERR_AGENT_UNRESPONSIVE, NOT_CONNECTED)
    assert reboot(manager, tmp_path, vmi(**AGENT_CONNECTED)).success
    dom.answers["reboot"] = libvirt_error(libvirt.VIR_ERR_OPERATION_FAILED, "operation failed: no")
    answer = reboot(manager, tmp_path, vmi(**AGENT_CONNECTED))
    assert (answer.success, answer.message) == (
        False,
        "LibvirtError(Code=9, Domain=10, Message='operation failed: no')",
    )


def test_soft_reboot_without_an_agent_presses_the_power_button(make_manager: Make, tmp_path: Any) -> None:
    dom = FakeDomain()
    manager, _ = make_manager(dom)
    assert reboot(manager, tmp_path, vmi()).success
    assert dom.called("reboot") == [libvirt.VIR_DOMAIN_REBOOT_ACPI_POWER_BTN]
    no_acpi = vmi(spec={"domain": {"features": {"acpi": {"enabled": False}}}})
    answer = reboot(manager, tmp_path, no_acpi)
    assert (answer.success, answer.message) == (
        False,
        "VMI neither have the agent connected nor the ACPI feature enabled",
    )
    dom.acpi = False
    assert not reboot(manager, tmp_path, vmi()).success
    assert len(dom.called("reboot")) == 1
