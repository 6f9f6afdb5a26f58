"""virt-launcher talks to a real QEMU guest agent: the Fedora-compatible test guest (Debian's qemu-ga on
KubeVirt's agent channel) booted through the launcher on QEMU/TCG, with the test playing virt-handler.

The launcher reports the agent connecting (the channel's state in the domain), polls it (the OS info in the
domain's status, GetGuestInfo, GetFilesystems), and passes on virt-handler's agent commands: GuestPing,
Exec, a freeze that thaws by itself after its unfreeze timeout, an explicit unfreeze, and a soft reboot
through the agent. Skipped until the test guest has a Fedora-compatible flavour.
"""

from __future__ import annotations

import copy
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from localcluster import testguest

from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2

from .test_compatible_guests import disk_boot_vmi

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        not hasattr(testguest, "FEDORA_COMPATIBLE"),
        reason="the test guest has no Fedora-compatible flavour (with a guest agent) yet",
    ),
]

# From the domain's start to the agent connected: the guest's boot under TCG, a hang beyond it.
AGENT_LIMIT = 120.0
# KubeVirt's fsfreeze-status poll interval, plus a margin for a loaded machine.
FREEZE_STATUS_WAIT = 30.0

Event = tuple[str, dict[str, Any]]


def agent_state(domain: dict[str, Any]) -> str:
    for channel in (domain.get("Spec") or {}).get("Devices", {}).get("Channels") or []:
        target = channel.get("Target") or {}
        if target.get("Name") == "org.qemu.guest_agent.0":
            return str(target.get("State") or "")
    return ""


def freeze_status(domain: dict[str, Any]) -> str:
    return str(((domain.get("Status") or {}).get("FSFreezeStatus") or {}).get("Status") or "")


def wait_for_event(
    pod: Any, predicate: Callable[[dict[str, Any]], bool], timeout: float, after: int = 0
) -> Event:
    """The first domain event after the ``after``-th that satisfies ``predicate``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in pod.notify.snapshot()[after:]:
            if predicate(event[1]):
                return event  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise AssertionError(f"no matching domain event in {timeout}s\n{pod.logs()}")


@pytest.fixture(scope="module")
def fedora_guest() -> Any:
    cache = Path(os.environ.get("KUBEVIRT_CACHE", "/var/cache/kubevirt-py"))
    flavour = testguest.FEDORA_COMPATIBLE
    return testguest.build_all(cache, (flavour,))[flavour.name]


def test_the_launcher_polls_and_commands_the_guest_agent(
    fedora_guest: Any, launcher_pods: Any, make_vmi: Any, tmp_path: Path
) -> None:
    vmi = disk_boot_vmi(make_vmi, "agent", {"cloudInitNoCloud": {"userData": "#!/bin/sh\n"}})
    vmi["spec"]["domain"]["memory"]["guest"] = "256Mi"
    vmi["spec"]["domain"]["resources"]["requests"]["memory"] = "256Mi"
    image = tmp_path / "pod" / "share" / "container-disks" / "disk_0.img"
    image.parent.mkdir(parents=True)
    shutil.copyfile(fedora_guest.disk, image)
    pod = launcher_pods(vmi, notify=True)
    domain_name = f"{vmi['metadata']['namespace']}_{vmi['metadata']['name']}"
    pod.client.sync_vmi(vmi)

    # The agent connects: the domain update carries the channel's state (virt-handler's AgentConnected).
    wait_for_event(pod, lambda d: agent_state(d) == "connected", AGENT_LIMIT)
    # The poller's first round: the OS info lands in the domain's status.
    _, domain = wait_for_event(pod, lambda d: d["Status"]["OSInfo"]["Id"] == "fedora", 60)
    assert domain["Status"]["OSInfo"]["PrettyName"].startswith("Fedora Linux")

    info = pod.client.get_guest_info()
    assert info["guestAgentVersion"]
    assert {"name": "guest-ping", "enabled": True} in info["supportedCommands"]
    assert info["os"]["id"] == "fedora"
    assert info["hostname"]
    assert ", " in info["timezone"]
    filesystems = pod.client.get_filesystems()
    data = next(fs for fs in filesystems if fs["mountPoint"] == testguest.DATA_MOUNT)
    assert data["fileSystemType"] == "ext4"
    assert data["totalBytes"] > 0

    ping = cmd_pb2.GuestPingRequest(domainName=domain_name, timeoutSeconds=5)
    assert pod.client.call("GuestPing", ping, timeout=15).response.success
    run = cmd_pb2.ExecRequest(
        domainName=domain_name, Command="/bin/sh", Args=["-c", "echo hello; exit 3"], timeoutSeconds=20
    )
    answer = pod.client.call("Exec", run, timeout=40)
    assert (answer.exitCode, answer.stdOut) == (3, "hello\n")

    # A freeze with a 3 s unfreeze timeout: frozen, then thawed by the launcher on its own.
    mark = len(pod.notify.snapshot())
    pod.client.freeze_vmi(vmi, 3)
    wait_for_event(pod, lambda d: freeze_status(d) == "frozen", FREEZE_STATUS_WAIT, after=mark)
    mark = len(pod.notify.snapshot())
    wait_for_event(pod, lambda d: freeze_status(d) == "thawed", FREEZE_STATUS_WAIT, after=mark)
    assert pod.client.get_guest_info()["fsFreezeStatus"] == "thawed"

    # A freeze with a long timeout ends with the unfreeze.
    pod.client.freeze_vmi(vmi, 300)
    assert pod.client.get_guest_info()["fsFreezeStatus"] == "frozen"
    pod.client.vmi_command("UnfreezeVirtualMachine", vmi)
    assert pod.client.get_guest_info()["fsFreezeStatus"] == "thawed"

    # Soft reboot with the agent connected goes through the agent: it disconnects, then comes back.
    connected = copy.deepcopy(vmi)
    connected["status"]["phase"] = "Running"
    connected["status"]["conditions"] = [{"type": "AgentConnected", "status": "True"}]
    mark = len(pod.notify.snapshot())
    pod.client.vmi_command("SoftRebootVirtualMachine", connected)
    wait_for_event(pod, lambda d: agent_state(d) == "disconnected", 60, after=mark)
    wait_for_event(pod, lambda d: agent_state(d) == "connected", AGENT_LIMIT, after=mark)
    assert pod.status()[0] == "Running"
