"""Reading the guest agent's replies and libvirt's guest info: KubeVirt's fields, and garbage refused
with a clear error instead of a crash."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from kubevirt.virt_launcher.virtwrap.agent import AgentReplyError, parsers
from kubevirt.virt_launcher.virtwrap.agent.model import (
    AgentInfo,
    CommandInfo,
    Filesystem,
    FSDisk,
    GuestOSInfo,
    InterfaceStatus,
    Timezone,
    User,
)


def reply(value: Any) -> str:
    return json.dumps({"return": value})


def test_agent_info_keeps_version_and_commands() -> None:
    text = reply(
        {
            "version": "9.0.0",
            "supported_commands": [
                {"name": "guest-ping", "enabled": True, "success-response": True},
                {"name": "guest-exec"},
            ],
        }
    )
    assert parsers.parse_agent_info(text) == AgentInfo(
        version="9.0.0",
        supported_commands=(CommandInfo("guest-ping", True), CommandInfo("guest-exec", False)),
    )
    assert parsers.parse_agent_info(reply({"version": "4.1"})) == AgentInfo(version="4.1")


def test_filesystems_as_kubevirt_reads_them() -> None:
    text = reply(
        [
            {
                "name": "main",
                "mountpoint": "/",
                "type": "ext",
                "total-bytes": 99999,
                "used-bytes": 33333,
                "disk": [{"serial": "testserial-1234", "bus-type": "scsi"}],
            },
            {"name": "tmp", "mountpoint": "/tmp", "type": "tmpfs", "disk": None},
        ]
    )
    assert parsers.parse_filesystems(text) == (
        Filesystem("main", "/", "ext", 33333, 99999, (FSDisk("testserial-1234", "scsi"),)),
        Filesystem("tmp", "/tmp", "tmpfs"),
    )


def test_freeze_status_is_the_returned_string() -> None:
    assert parsers.parse_fsfreeze_status('{"return":"frozen"}') == "frozen"
    for bad in ('{"return": {{frozen}', '{"return": frozen}', reply(""), reply({"status": "frozen"})):
        with pytest.raises(AgentReplyError, match="guest-fsfreeze-status"):
            parsers.parse_fsfreeze_status(bad)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("", "malformed reply to guest-info"),
        ("not json", "malformed reply to guest-info"),
        ('{"error": {"class": "GenericError"}}', 'has no "return"'),
        ("[1, 2]", 'has no "return"'),
        (reply(None), "expected an object, got NoneType"),
        (reply([]), "expected an object, got list"),
        (reply({"version": 9}), "guest-info.version: expected a string, got int"),
        (reply({"supported_commands": {}}), "supported_commands: expected a list"),
        (reply({"supported_commands": ["guest-ping"]}), r"supported_commands\[0\]: expected an object"),
        (reply({"supported_commands": [{"enabled": "yes"}]}), "enabled: expected a boolean, got str"),
        ("[" * 200 + "]" * 200, "nested deeper"),
    ],
)
def test_garbage_agent_info_is_a_clear_error(text: str, complaint: str) -> None:
    with pytest.raises(AgentReplyError, match=complaint):
        parsers.parse_agent_info(text)


def test_an_oversized_reply_is_refused_before_it_is_read() -> None:
    huge = reply({"version": "x" * parsers.MAX_REPLY_CHARS})
    with pytest.raises(AgentReplyError, match="longer than"):
        parsers.parse_agent_info(huge)


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ({"used-bytes": True}, "used-bytes: expected an integer, got a boolean"),
        ({"used-bytes": 1.5}, "used-bytes: expected an integer, got float"),
        ({"total-bytes": 2**64}, "total-bytes: 18446744073709551616 is out of range"),
        ({"disk": [{"bus-type": 3}]}, r"disk\[0\].bus-type: expected a string"),
        ({"name": ["vda"]}, "name: expected a string, got list"),
    ],
)
def test_garbage_filesystems_are_a_clear_error(entry: dict[str, Any], complaint: str) -> None:
    with pytest.raises(AgentReplyError, match=complaint):
        parsers.parse_filesystems(reply([entry]))
    with pytest.raises(AgentReplyError, match="expected a list, got dict"):
        parsers.parse_filesystems(reply(entry))


def test_exec_replies() -> None:
    assert parsers.parse_exec_pid(reply({"pid": 42})) == 42
    output = base64.b64encode("hello\n\xff".encode()).decode()
    status = parsers.parse_exec_status(reply({"exited": True, "exitcode": 3, "out-data": output}))
    assert status == parsers.ExecStatus(exited=True, exit_code=3, stdout="hello\n\xff")
    assert parsers.parse_exec_status(reply({"exited": False})) == parsers.ExecStatus(False, 0, "")
    # Bytes that are not UTF-8 are replaced, never an error of the gRPC answer.
    raw = base64.b64encode(b"\xff\xfe").decode()
    assert parsers.parse_exec_status(reply({"exited": True, "out-data": raw})).stdout == "\ufffd\ufffd"
    with pytest.raises(AgentReplyError, match="out-data: not base64"):
        parsers.parse_exec_status(reply({"exited": True, "out-data": "@@@"}))
    with pytest.raises(AgentReplyError, match="pid: expected an integer"):
        parsers.parse_exec_pid(reply({"pid": "42"}))


def test_interfaces_skip_lo_and_prefer_the_first_ipv4_address() -> None:
    info = parsers.GuestInfoParams(
        {
            "if.count": 4,
            "if.0.name": "lo",
            "if.0.addr.count": 1,
            "if.0.addr.0.type": "ipv4",
            "if.0.addr.0.addr": "127.0.0.1",
            "if.1.name": "eth0",
            "if.1.hwaddr": "52:54:00:00:00:01",
            "if.1.addr.count": 3,
            "if.1.addr.0.type": "ipv6",
            "if.1.addr.0.addr": "fd00::1",
            "if.1.addr.1.type": "ipv4",
            "if.1.addr.1.addr": "10.0.0.5",
            "if.1.addr.2.type": "ipv4",
            "if.1.addr.2.addr": "10.0.0.6",
            "if.2.name": "eth1",
            "if.2.hwaddr": "52:54:00:00:00:02",
            "if.2.addr.count": 1,
            "if.2.addr.0.type": "ipv6",
            "if.2.addr.0.addr": "fd00::2",
            "if.3.name": "eth2",
            "if.3.hwaddr": "52:54:00:00:00:03",
        }
    )
    assert parsers.interfaces_from(info) == (
        InterfaceStatus("52:54:00:00:00:01", "10.0.0.5", ("fd00::1", "10.0.0.5", "10.0.0.6"), "eth0"),
        InterfaceStatus("52:54:00:00:00:02", "fd00::2", ("fd00::2",), "eth1"),
        InterfaceStatus("52:54:00:00:00:03", "", None, "eth2"),
    )
    only_lo = {"if.count": 1, "if.0.name": "lo"}
    assert parsers.interfaces_from(parsers.GuestInfoParams(only_lo)) is None
    assert parsers.interfaces_from(parsers.GuestInfoParams({})) is None


def test_os_timezone_and_users() -> None:
    info = parsers.GuestInfoParams(
        {
            "os.id": "fedora",
            "os.name": "Fedora Linux",
            "os.version-id": "41",
            "timezone.name": "CET",
            "timezone.offset": 3600,
            "user.count": 2,
            "user.0.name": "fedora",
            "user.0.login-time": 1700000000500,
            "user.1.name": "admin",
            "user.1.domain": "CORP",
            "user.1.login-time": 1700000001000,
        }
    )
    assert parsers.os_info_from(info) == GuestOSInfo(name="Fedora Linux", version_id="41", id="fedora")
    assert parsers.timezone_from(info) == Timezone("CET", 3600)
    assert parsers.users_from(info) == (
        User("fedora", "", 1700000000.5),
        User("admin", "CORP", 1700000001.0),
    )


def test_bogus_guest_info_is_a_clear_error_or_cut_short() -> None:
    # A count beyond what libvirt sent describes nothing more: the entries there are.
    info = parsers.GuestInfoParams({"user.count": 10**9, "user.0.name": "a"})
    assert parsers.users_from(info)[0] == User("a")
    assert len(parsers.users_from(info)) == 2
    with pytest.raises(AgentReplyError, match=r"os\.name: expected a string, got int"):
        parsers.os_info_from(parsers.GuestInfoParams({"os.name": 3}))
    with pytest.raises(AgentReplyError, match=r"timezone\.offset: expected an integer, got str"):
        parsers.timezone_from(parsers.GuestInfoParams({"timezone.offset": "+01:00"}))
    with pytest.raises(AgentReplyError, match="expected libvirt's parameters"):
        parsers.GuestInfoParams(None)


def test_vmi_json_omits_what_go_omits() -> None:
    assert User("fedora").vmi_json() == {"userName": "fedora"}
    assert User("a", "CORP", 1700000000.0).vmi_json() == {
        "userName": "a",
        "domain": "CORP",
        "loginTime": 1700000000,
    }
    assert json.dumps(User("a", "", 1.5).vmi_json()) == '{"userName": "a", "loginTime": 1.5}'
    assert Filesystem("vda1", "/", "ext4").vmi_json() == {
        "diskName": "vda1",
        "mountPoint": "/",
        "fileSystemType": "ext4",
        "usedBytes": 0,
        "totalBytes": 0,
    }
    disks = Filesystem("vda1", "/", "ext4", disks=(FSDisk("", "virtio"), FSDisk("s1", "scsi"))).vmi_json()
    assert disks["disk"] == [{"busType": "virtio"}, {"serial": "s1", "busType": "scsi"}]
    assert GuestOSInfo(name="Fedora", id="fedora").vmi_json() == {"name": "Fedora", "id": "fedora"}
    assert CommandInfo("guest-exec").vmi_json() == {"name": "guest-exec"}
