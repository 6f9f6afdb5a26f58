"""The launcher's guest agent: the poller and its store, the agent commands virt-handler sends, and the
safety thaw after a freeze.

Freezing follows KubeVirt's ``FreezeVMI``: nothing to do when the agent says the filesystems are frozen
already (the pending automatic thaw is left as it is); otherwise libvirt freezes them and a thaw is
scheduled ``unfreezeTimeoutSeconds`` later (0: none), replacing any earlier one; also when the freeze
failed, since one that timed out may still complete in the guest. Unfreezing cancels the scheduled thaw
and thaws unless the agent says the filesystems are thawed. After either, the freeze status is read
again so the domain's status follows at once rather than at the next poll.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import libvirt

from kubevirt.log import get_logger
from kubevirt.virt_launcher import COMPONENT
from kubevirt.virt_launcher.virtwrap.agent import store as keys
from kubevirt.virt_launcher.virtwrap.agent.caller import (
    AGENT_RESPONSE_TIMEOUT,
    COMMAND_TIMEOUT,
    WAIT_MARGIN,
    AgentCaller,
)
from kubevirt.virt_launcher.virtwrap.agent.errors import AgentError
from kubevirt.virt_launcher.virtwrap.agent.execute import guest_exec
from kubevirt.virt_launcher.virtwrap.agent.model import FS_FROZEN, FS_THAWED, GuestOSInfo
from kubevirt.virt_launcher.virtwrap.agent.parsers import agent_return, parse_fsfreeze_status
from kubevirt.virt_launcher.virtwrap.agent.poller import (
    DEFAULT_INTERVALS,
    INITIAL_INTERVAL,
    AgentPoller,
    DomainGetter,
    PollIntervals,
)
from kubevirt.virt_launcher.virtwrap.agent.store import AgentStore

# The virtio-serial channel the agent talks on; libvirt sets its target's state to "connected".
GUEST_AGENT_CHANNEL = "org.qemu.guest_agent.0"
# GetGuestInfo lists at most this many users and filesystems (GetUsers/GetFilesystems list all).
GUEST_INFO_LIST_LIMIT = 10
# How long a command waits for libvirt's freeze and thaw (bounded by the domain's agent response timeout);
# virt-handler gives a freeze 60 s in all, the status read before it included.
FREEZE_WAIT = AGENT_RESPONSE_TIMEOUT + WAIT_MARGIN
THAW_WAIT = AGENT_RESPONSE_TIMEOUT + WAIT_MARGIN


def channel_connected(domain: Mapping[str, Any] | None) -> bool:
    """Whether a domain's JSON shows its agent channel connected (what virt-handler's AgentConnected
    condition reads too)."""
    spec = (domain or {}).get("Spec") or {}
    channels = (spec.get("Devices") or {}).get("Channels") or []
    return any(
        (channel.get("Target") or {}).get("Name") == GUEST_AGENT_CHANNEL
        and (channel.get("Target") or {}).get("State") == "connected"
        for channel in channels
    )


class SafetyThaw:
    """One pending call of an action after a delay; scheduling again replaces it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._log = get_logger(component=COMPONENT)

    @property
    def pending(self) -> bool:
        with self._lock:
            return self._timer is not None

    def schedule(self, seconds: float, action: Callable[[], None]) -> None:
        context = contextvars.copy_context()
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            timer = threading.Timer(seconds, lambda: context.run(self._fire, timer, action))
            timer.daemon = True
            self._timer = timer
            timer.start()

    def cancel(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _fire(self, timer: threading.Timer, action: Callable[[], None]) -> None:
        with self._lock:
            if self._timer is not timer:
                return  # cancelled or replaced while it was due
            self._timer = None
        self._log.warning("Unfreeze was not called before its timeout, initiating unfreeze")
        try:
            action()
        except Exception:
            self._log.exception("the automatic unfreeze failed")


class GuestAgent:
    def __init__(
        self,
        domain: DomainGetter,
        *,
        on_change: Callable[[], None] | None = None,
        intervals: PollIntervals = DEFAULT_INTERVALS,
        initial_interval: float = INITIAL_INTERVAL,
        caller: AgentCaller | None = None,
    ) -> None:
        self.caller = caller or AgentCaller()
        self.store = AgentStore(on_change)
        self.poller = AgentPoller(
            domain, self.caller, self.store, intervals, initial_interval=initial_interval
        )
        self.safety_thaw = SafetyThaw()
        self._log = get_logger(component=COMPONENT)

    def set_polling(self, wanted: bool) -> None:
        """Poll while ``wanted`` (the domain runs and its agent is connected)."""
        if not wanted:
            self.poller.stop()
            return
        if self.poller.running:
            return
        self._bound_agent_calls()
        self.poller.start()

    def _bound_agent_calls(self) -> None:
        """libvirt's agent calls without a timeout of their own block by default: give them one."""
        dom = self.poller.domain()
        if dom is None:
            return
        try:
            self.caller.run(
                "setting the agent's response timeout",
                lambda: dom.agentSetResponseTimeout(AGENT_RESPONSE_TIMEOUT, 0),
                wait=COMMAND_TIMEOUT,
            )
        except AgentError as err:
            self._log.warning("cannot bound the guest agent's response time", reason=str(err))

    def close(self) -> None:
        self.poller.stop()
        self.safety_thaw.cancel()
        self.caller.close()

    # -- what virt-handler reads ---------------------------------------------------------------

    def guest_info(self) -> dict[str, Any]:
        """``v1.VirtualMachineInstanceGuestAgentInfo`` from the stored answers, as KubeVirt builds it
        (its ``os`` and ``fsInfo`` are always there, its ``timezone`` is ``"<zone>, <offset>"``)."""
        agent = self.store.agent_info()
        info: dict[str, Any] = {}
        if agent.version:
            info["guestAgentVersion"] = agent.version
        if agent.supported_commands:
            info["supportedCommands"] = [command.vmi_json() for command in agent.supported_commands]
        if hostname := self.store.hostname():
            info["hostname"] = hostname
        info["os"] = (self.store.os_info() or GuestOSInfo()).vmi_json()
        timezone = self.store.timezone()
        info["timezone"] = f"{timezone.zone}, {timezone.offset}"
        if users := self.store.users(GUEST_INFO_LIST_LIMIT):
            info["userList"] = [user.vmi_json() for user in users]
        filesystems = self.store.filesystems(GUEST_INFO_LIST_LIMIT)
        info["fsInfo"] = {"disks": [fs.vmi_json() for fs in filesystems] if filesystems else None}
        if status := self.store.fs_freeze_status():
            info["fsFreezeStatus"] = status
        return info

    def users(self) -> list[dict[str, Any]]:
        return [user.vmi_json() for user in self.store.users()]

    def filesystems(self) -> list[dict[str, Any]]:
        return [fs.vmi_json() for fs in self.store.filesystems()]

    def domain_status_fields(self) -> dict[str, Any]:
        return self.store.domain_status_fields()

    # -- commands ------------------------------------------------------------------------------

    def ping(self, dom: libvirt.virDomain, timeout_seconds: int = 0) -> None:
        seconds = timeout_seconds if timeout_seconds > 0 else COMMAND_TIMEOUT
        agent_return(self.caller.command(dom, "guest-ping", timeout=seconds), "guest-ping")

    def exec_command(
        self, dom: libvirt.virDomain, command: str, args: Sequence[str], timeout_seconds: int
    ) -> str:
        """The output of ``command`` run in the guest (:class:`ExecExitError` for a non-zero exit)."""
        return guest_exec(self.caller, dom, command, args, timeout_seconds)

    def freeze_status(self, dom: libvirt.virDomain) -> str:
        """The agent's ``frozen``/``thawed``, kept in the store as a poll would."""
        status = parse_fsfreeze_status(self.caller.command(dom, "guest-fsfreeze-status"))
        self.store.store(keys.FS_FREEZE_STATUS, status)
        return status

    def _refresh_freeze_status(self, dom: libvirt.virDomain) -> None:
        try:
            self.freeze_status(dom)
        except AgentError as err:  # the next poll reads it
            self._log.info("reading the freeze status failed", reason=str(err))

    def freeze(
        self,
        dom: libvirt.virDomain,
        unfreeze_timeout_seconds: float,
        *,
        thaw_later: Callable[[], None],
        before_freeze: Callable[[], None] = lambda: None,
    ) -> None:
        if self.freeze_status(dom) == FS_FROZEN:
            return
        before_freeze()
        try:
            self.caller.run(
                "freezing the guest's filesystems", lambda: dom.fsFreeze(None, 0), wait=FREEZE_WAIT
            )
        except AgentError:
            # A freeze that timed out (here or in libvirt) may still complete in the guest: it must not
            # outlive its timeout unattended. A thaw of thawed filesystems does nothing.
            self._schedule_thaw(unfreeze_timeout_seconds, thaw_later)
            raise
        self._schedule_thaw(unfreeze_timeout_seconds, thaw_later)
        self._refresh_freeze_status(dom)

    def _schedule_thaw(self, seconds: float, thaw_later: Callable[[], None]) -> None:
        """The automatic thaw ``seconds`` from now (none for 0), instead of any pending one."""
        if seconds > 0:
            self.safety_thaw.schedule(seconds, thaw_later)
        else:
            self.safety_thaw.cancel()

    def thaw(self, dom: libvirt.virDomain) -> None:
        self.safety_thaw.cancel()
        try:
            if self.freeze_status(dom) == FS_THAWED:
                return  # thawing again would run the guest's thaw hooks again
        except AgentError:
            pass  # KubeVirt thaws anyway
        self.caller.run("thawing the guest's filesystems", lambda: dom.fsThaw(None, 0), wait=THAW_WAIT)
        self._refresh_freeze_status(dom)
