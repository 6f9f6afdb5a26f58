"""A fake libvirt domain whose guest agent answers canned replies.

A canned answer is a reply string, an exception to raise, or a function of the command's arguments
(conftest routes ``libvirt_qemu.qemuAgentCommand`` to the domain's own ``qemuAgentCommand``).
"""

from __future__ import annotations

import json
import threading
from typing import Any

import libvirt

DOMAIN_NAME = "ns_vm"
AGENT_CHANNEL = (
    '<channel type="unix"><source mode="bind" path="/var/run/kubevirt-private/x/agent"/>'
    '<target type="virtio" name="org.qemu.guest_agent.0" state="{state}"/></channel>'
)


def libvirt_error(code: int, message: str, domain: int = libvirt.VIR_FROM_QEMU) -> libvirt.libvirtError:
    """A libvirtError as libvirt raises it (code, domain and message set)."""
    err = libvirt.libvirtError(message)
    err.err = (code, domain, message, libvirt.VIR_ERR_ERROR, None, None, None, 0, 0)
    return err


def not_connected() -> libvirt.libvirtError:
    return libvirt_error(
        libvirt.VIR_ERR_AGENT_UNRESPONSIVE, "Guest agent is not responding: QEMU guest agent is not connected"
    )


def reply(value: Any) -> str:
    return json.dumps({"return": value})


GUEST_INFO_PARAMS: dict[str, Any] = {
    "hostname": "fedora-guest",
    "os.id": "fedora",
    "os.name": "Fedora Linux",
    "os.pretty-name": "Fedora Linux 41 (Cloud Edition)",
    "os.version": "41 (Cloud Edition)",
    "os.version-id": "41",
    "os.kernel-release": "6.11.4-301.fc41.x86_64",
    "os.kernel-version": "#1 SMP PREEMPT_DYNAMIC",
    "os.machine": "x86_64",
    "timezone.name": "UTC",
    "timezone.offset": 0,
    "if.count": 2,
    "if.0.name": "lo",
    "if.0.hwaddr": "00:00:00:00:00:00",
    "if.0.addr.count": 1,
    "if.0.addr.0.type": "ipv4",
    "if.0.addr.0.addr": "127.0.0.1",
    "if.0.addr.0.prefix": 8,
    "if.1.name": "eth0",
    "if.1.hwaddr": "52:54:00:12:34:56",
    "if.1.addr.count": 2,
    "if.1.addr.0.type": "ipv6",
    "if.1.addr.0.addr": "fe80::5054:ff:fe12:3456",
    "if.1.addr.0.prefix": 64,
    "if.1.addr.1.type": "ipv4",
    "if.1.addr.1.addr": "10.0.2.2",
    "if.1.addr.1.prefix": 24,
    "user.count": 1,
    "user.0.name": "fedora",
    "user.0.login-time": 1700000000500,
}


def default_answers() -> dict[str, Any]:
    return {
        "guest-ping": reply({}),
        "guest-info": reply(
            {
                "version": "9.0.0",
                "supported_commands": [
                    {"name": "guest-ping", "enabled": True, "success-response": True},
                    {"name": "guest-exec", "enabled": False, "success-response": True},
                ],
            }
        ),
        "guest-get-fsinfo": reply(
            [
                {
                    "name": "vda1",
                    "mountpoint": "/",
                    "type": "ext4",
                    "used-bytes": 1000,
                    "total-bytes": 4000,
                    "disk": [{"serial": "disk-1", "bus-type": "virtio", "bus": 0}],
                }
            ]
        ),
    }


class FakeDomain:
    """A running domain whose agent answers from ``answers``; records what it was asked."""

    def __init__(
        self,
        answers: dict[str, Any] | None = None,
        *,
        guest_info: dict[str, Any] | Exception | None = None,
        channel: str = "connected",
        acpi: bool = True,
        migration: str = "",
        state: int = libvirt.VIR_DOMAIN_RUNNING,
    ) -> None:
        self.answers = default_answers() if answers is None else answers
        self.guest_info_answer: dict[str, Any] | Exception = (
            dict(GUEST_INFO_PARAMS) if guest_info is None else guest_info
        )
        self.channel = channel
        self.acpi = acpi
        self.migration = migration
        self.current_state = state
        self.frozen = False
        self.calls: list[tuple[str, Any]] = []
        self.timeouts: dict[str, int] = {}
        self.lock = threading.Lock()

    def _record(self, name: str, detail: Any = None) -> None:
        with self.lock:
            self.calls.append((name, detail))

    def called(self, name: str) -> list[Any]:
        with self.lock:
            return [detail for call, detail in self.calls if call == name]

    # -- agent ---------------------------------------------------------------------------------

    def qemuAgentCommand(self, cmd: str, timeout: int, flags: int) -> str:  # noqa: N802
        request = json.loads(cmd)
        execute = request["execute"]
        self._record(execute, request.get("arguments"))
        self.timeouts[execute] = timeout
        if execute == "guest-fsfreeze-status" and execute not in self.answers:
            return reply("frozen" if self.frozen else "thawed")  # what fsFreeze/fsThaw left
        answer = self.answers.get(execute)
        if answer is None:
            raise libvirt_error(
                libvirt.VIR_ERR_INTERNAL_ERROR,
                f"internal error: unable to execute QEMU agent command '{execute}': "
                f"The command {execute} has not been found",
            )
        if callable(answer):
            answer = answer(request.get("arguments"))
        if isinstance(answer, Exception):
            raise answer
        return str(answer)

    def guestInfo(self, types: int, flags: int) -> dict[str, Any]:  # noqa: N802
        self._record("guestInfo", types)
        if isinstance(self.guest_info_answer, Exception):
            raise self.guest_info_answer
        return self.guest_info_answer

    def fsFreeze(self, mountpoints: Any, flags: int) -> int:  # noqa: N802
        self._record("fsFreeze")
        answer = self.answers.get("fsFreeze")
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            answer()
        self.frozen = True
        return 1

    def fsThaw(self, mountpoints: Any, flags: int) -> int:  # noqa: N802
        self._record("fsThaw")
        answer = self.answers.get("fsThaw")
        if isinstance(answer, Exception):
            raise answer
        self.frozen = False
        return 1

    def agentSetResponseTimeout(self, timeout: int, flags: int) -> int:  # noqa: N802
        self._record("agentSetResponseTimeout", timeout)
        return 0

    def reboot(self, flags: int) -> int:
        self._record("reboot", flags)
        answer = self.answers.get("reboot")
        if isinstance(answer, Exception):
            raise answer
        return 0

    # -- the domain ----------------------------------------------------------------------------

    def name(self) -> str:
        return DOMAIN_NAME

    def state(self) -> tuple[int, int]:
        return self.current_state, 1

    def isActive(self) -> bool:  # noqa: N802
        return self.current_state in (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_PAUSED)

    def XMLDesc(self, flags: int = 0) -> str:  # noqa: N802
        features = "<features><acpi/></features>" if self.acpi else ""
        migration = (
            f"<kubevirt:migration><kubevirt:startTimestamp>{self.migration}</kubevirt:startTimestamp>"
            "</kubevirt:migration>"
            if self.migration
            else ""
        )
        return (
            f'<domain type="kvm"><name>{DOMAIN_NAME}</name>'
            '<metadata><kubevirt:kubevirt xmlns:kubevirt="http://kubevirt.io">'
            f"<kubevirt:uid>vmi-uid</kubevirt:uid>{migration}</kubevirt:kubevirt></metadata>"
            f"{features}<devices>{AGENT_CHANNEL.format(state=self.channel)}</devices></domain>"
        )


class FakeConn:
    def __init__(self, dom: FakeDomain) -> None:
        self.dom = dom

    def lookupByName(self, name: str) -> FakeDomain:  # noqa: N802
        if name != DOMAIN_NAME:
            raise libvirt_error(libvirt.VIR_ERR_NO_DOMAIN, f"Domain not found: no domain named '{name}'")
        return self.dom

    def listAllDomains(self) -> list[FakeDomain]:  # noqa: N802
        return [self.dom]
