"""Polls the guest agent while it is connected, as KubeVirt's agent poller does.

Each task runs on its own thread at its own interval: ``guest-info`` (version and commands) and
``guest-get-fsinfo`` every 300 s, ``guest-fsfreeze-status`` every 5 s, libvirt's guest info for the
interfaces, OS, hostname and timezone every 120 s, for the users every 10 s (and for the load every
120 s where libvirt offers it). A task runs at once when the poller starts, then after 10 s (or its
interval, if shorter), the wait doubling up to its interval. Results go to the :class:`AgentStore`; a
failed call is skipped (the agent may be busy or gone), an unreadable answer is logged.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from dataclasses import dataclass

import libvirt

from kubevirt.log import get_logger
from kubevirt.virt_launcher import COMPONENT
from kubevirt.virt_launcher.virtwrap.agent import parsers
from kubevirt.virt_launcher.virtwrap.agent import store as keys
from kubevirt.virt_launcher.virtwrap.agent.caller import AGENT_RESPONSE_TIMEOUT, WAIT_MARGIN, AgentCaller
from kubevirt.virt_launcher.virtwrap.agent.errors import AgentError, AgentReplyError
from kubevirt.virt_launcher.virtwrap.agent.store import AgentStore
from kubevirt.virt_launcher.virtwrap.errors import ManagerError

INITIAL_INTERVAL = 10.0
# How long a poll waits for libvirt's guest info (bounded by the domain's agent response timeout).
GUEST_INFO_WAIT = AGENT_RESPONSE_TIMEOUT + WAIT_MARGIN

# The guest-info type bits; LOAD only exists in newer libvirt (11.2).
SYS_INFO_TYPES = (
    libvirt.VIR_DOMAIN_GUEST_INFO_INTERFACES
    | libvirt.VIR_DOMAIN_GUEST_INFO_OS
    | libvirt.VIR_DOMAIN_GUEST_INFO_HOSTNAME
    | libvirt.VIR_DOMAIN_GUEST_INFO_TIMEZONE
)
USER_INFO_TYPES = libvirt.VIR_DOMAIN_GUEST_INFO_USERS
LOAD_INFO_TYPES: int = getattr(libvirt, "VIR_DOMAIN_GUEST_INFO_LOAD", 0)

DomainGetter = Callable[[], libvirt.virDomain | None]


@dataclass(frozen=True)
class PollIntervals:
    """Seconds between polls (KubeVirt's virt-launcher flag defaults)."""

    sys: float = 120.0  # --qemu-agent-sys-interval
    file: float = 300.0  # --qemu-agent-file-interval
    user: float = 10.0  # --qemu-agent-user-interval
    version: float = 300.0  # --qemu-agent-version-interval
    fsfreeze: float = 5.0  # --qemu-fsfreeze-status-interval


DEFAULT_INTERVALS = PollIntervals()


@dataclass(frozen=True)
class PollTask:
    name: str
    interval: float
    run: Callable[[], None]


def next_interval(interval: float, maximum: float) -> float:
    return min(interval * 2, maximum)


class AgentPoller:
    def __init__(
        self,
        domain: DomainGetter,
        caller: AgentCaller,
        store: AgentStore,
        intervals: PollIntervals = DEFAULT_INTERVALS,
        *,
        initial_interval: float = INITIAL_INTERVAL,
    ) -> None:
        self._domain = domain
        self._caller = caller
        self._store = store
        self._initial = initial_interval
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None
        self._log = get_logger(component=COMPONENT)
        self.tasks = [
            PollTask("guest-info", intervals.version, self.poll_agent_info),
            PollTask("guest-get-fsinfo", intervals.file, self.poll_filesystems),
            PollTask("guest-fsfreeze-status", intervals.fsfreeze, self.poll_fsfreeze_status),
            PollTask("guest info: interfaces, os, hostname, timezone", intervals.sys, self.poll_sys_info),
            PollTask("guest info: users", intervals.user, self.poll_users),
        ]
        if LOAD_INFO_TYPES:
            self.tasks.append(PollTask("guest info: load", intervals.sys, self.poll_load))

    @property
    def running(self) -> bool:
        with self._lock:
            return self._stop is not None

    def start(self) -> None:
        """Start polling (nothing happens when it already does)."""
        with self._lock:
            if self._stop is not None:
                return
            stop = self._stop = threading.Event()
        self._log.info("starting the guest agent poller", tasks=[task.name for task in self.tasks])
        for index, task in enumerate(self.tasks):
            thread = threading.Thread(
                target=contextvars.copy_context().run,
                args=(self._loop, task, stop),
                name=f"agent-poll-{index}",
                daemon=True,
            )
            thread.start()

    def stop(self) -> None:
        """Stop polling; a call under way finishes on its own."""
        with self._lock:
            stop, self._stop = self._stop, None
        if stop is not None:
            stop.set()
            self._log.info("stopped the guest agent poller")

    def _loop(self, task: PollTask, stop: threading.Event) -> None:
        interval = min(self._initial, task.interval)
        self._run(task)
        while not stop.wait(interval):
            self._run(task)
            interval = next_interval(interval, task.interval)

    def _run(self, task: PollTask) -> None:
        try:
            task.run()
        except Exception:  # a poll must never end its thread
            self._log.exception("guest agent poll failed", task=task.name)

    def poll_all(self) -> None:
        """Every task once, on the calling thread."""
        for task in self.tasks:
            self._run(task)

    # -- the tasks -----------------------------------------------------------------------------

    def domain(self) -> libvirt.virDomain | None:
        """The domain to poll the agent of (None when there is none, or no answer from libvirt)."""
        try:
            return self._domain()
        except (ManagerError, libvirt.libvirtError) as err:
            self._log.debug("no domain to poll the guest agent of", reason=str(err))
            return None

    def _command(self, execute: str) -> str | None:
        dom = self.domain()
        if dom is None:
            return None
        try:
            return self._caller.command(dom, execute, key=f"poll {execute}")
        except AgentReplyError as err:
            self._log.error("unreadable guest agent reply", command=execute, reason=str(err))
        except AgentError as err:  # not vital: tried again next time
            self._log.debug("guest agent command failed", command=execute, reason=str(err))
        return None

    def _parse(self, execute: str, parse: Callable[[str], object], key: str) -> None:
        reply = self._command(execute)
        if reply is None:
            return
        try:
            value = parse(reply)
        except AgentReplyError as err:
            self._log.error("cannot parse the guest agent's reply", command=execute, reason=str(err))
            return
        self._store.store(key, value)

    def poll_agent_info(self) -> None:
        self._parse("guest-info", parsers.parse_agent_info, keys.AGENT_INFO)

    def poll_filesystems(self) -> None:
        self._parse("guest-get-fsinfo", parsers.parse_filesystems, keys.FILESYSTEMS)

    def poll_fsfreeze_status(self) -> None:
        self._parse("guest-fsfreeze-status", parsers.parse_fsfreeze_status, keys.FS_FREEZE_STATUS)

    def _guest_info(self, types: int) -> parsers.GuestInfoParams | None:
        dom = self.domain()
        if dom is None:
            return None
        try:
            params = self._caller.run(
                "reading guest info",
                lambda: dom.guestInfo(types, 0),
                wait=GUEST_INFO_WAIT,
                key=f"poll guest info {types}",
            )
            return parsers.GuestInfoParams(params)
        except AgentReplyError as err:
            self._log.error("unreadable guest info", types=types, reason=str(err))
        except AgentError as err:
            self._log.debug("fetching guest info failed", types=types, reason=str(err))
        return None

    def poll_sys_info(self) -> None:
        params = self._guest_info(SYS_INFO_TYPES)
        if params is None:
            return
        try:
            values = {
                keys.INTERFACES: parsers.interfaces_from(params),
                keys.OS_INFO: parsers.os_info_from(params),
                keys.HOSTNAME: params.string("hostname"),
                keys.TIMEZONE: parsers.timezone_from(params),
            }
        except AgentReplyError as err:
            self._log.error("unreadable guest info", reason=str(err))
            return
        self._store.store_many(values)  # one domain update for all that changed

    def poll_users(self) -> None:
        params = self._guest_info(USER_INFO_TYPES)
        if params is None:
            return
        try:
            users = parsers.users_from(params)
        except AgentReplyError as err:
            self._log.error("unreadable guest users", reason=str(err))
            return
        self._store.store(keys.USERS, users)

    def poll_load(self) -> None:
        params = self._guest_info(LOAD_INFO_TYPES)
        if params is None:
            return
        try:
            load = parsers.load_from(params)
        except AgentReplyError as err:
            self._log.error("unreadable guest load", reason=str(err))
            return
        self._store.store(keys.LOAD, load)
