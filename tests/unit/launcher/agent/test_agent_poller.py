"""The agent store's change detection, the poller's tasks and schedule, and bounded agent calls."""

from __future__ import annotations

import threading
import time
from typing import Any

import libvirt
import pytest

from kubevirt.virt_launcher.virtwrap.agent import AgentCallError, AgentStore, AgentTimeoutError
from kubevirt.virt_launcher.virtwrap.agent import store as keys
from kubevirt.virt_launcher.virtwrap.agent.caller import AgentCaller
from kubevirt.virt_launcher.virtwrap.agent.model import GuestOSInfo, InterfaceStatus, User
from kubevirt.virt_launcher.virtwrap.agent.poller import (
    LOAD_INFO_TYPES,
    SYS_INFO_TYPES,
    USER_INFO_TYPES,
    AgentPoller,
    PollIntervals,
    PollTask,
    next_interval,
)

from .harness import FakeDomain, not_connected, reply


def running(poller: AgentPoller) -> bool:
    return poller.running  # read anew each time (mypy would narrow the property)


def wait_until(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


# -- the store -----------------------------------------------------------------------------------


def test_a_status_value_stored_first_or_changed_is_a_domain_update() -> None:
    changes: list[int] = []
    store = AgentStore(lambda: changes.append(1))
    store.store(keys.OS_INFO, GuestOSInfo(name="Fedora"))
    assert len(changes) == 1
    store.store(keys.OS_INFO, GuestOSInfo(name="Fedora"))  # the same again: nothing to report
    assert len(changes) == 1
    store.store(keys.OS_INFO, GuestOSInfo(name="Fedora", version_id="41"))
    assert len(changes) == 2
    store.store(keys.INTERFACES, None)  # first interfaces answer, even none, is news (as in KubeVirt)
    assert len(changes) == 3
    store.store(keys.FS_FREEZE_STATUS, "thawed")
    store.store(keys.FS_FREEZE_STATUS, "frozen")
    assert len(changes) == 5
    store.store(keys.USERS, (User("a"),))  # not in the domain's status
    store.store(keys.HOSTNAME, "h")
    assert len(changes) == 5
    store.store_many({keys.OS_INFO: GuestOSInfo(name="Other"), keys.INTERFACES: (InterfaceStatus("m"),)})
    assert len(changes) == 6  # one update for one poll's changes


def test_domain_status_fields_use_go_field_names() -> None:
    store = AgentStore()
    assert store.domain_status_fields() == {}
    store.store_many(
        {
            keys.OS_INFO: GuestOSInfo(name="Fedora", id="fedora"),
            keys.INTERFACES: (InterfaceStatus("52:54:00:00:00:01", "10.0.0.5", ("10.0.0.5",), "eth0"),),
            keys.FS_FREEZE_STATUS: "frozen",
        }
    )
    assert store.domain_status_fields() == {
        "Interfaces": [
            {"Mac": "52:54:00:00:00:01", "Ip": "10.0.0.5", "IPs": ["10.0.0.5"], "InterfaceName": "eth0"}
        ],
        "OSInfo": {
            "Name": "Fedora",
            "KernelRelease": "",
            "Version": "",
            "PrettyName": "",
            "VersionId": "",
            "KernelVersion": "",
            "Machine": "",
            "Id": "fedora",
        },
        "FSFreezeStatus": {"Status": "frozen"},
    }
    store.store(keys.INTERFACES, None)
    assert store.domain_status_fields()["Interfaces"] is None


# -- the poller's tasks --------------------------------------------------------------------------


def poller_of(dom: FakeDomain | None, changes: list[int] | None = None) -> tuple[AgentPoller, AgentStore]:
    store = AgentStore(lambda: (changes if changes is not None else []).append(1))
    return AgentPoller(lambda: dom, AgentCaller(), store), store


def test_one_round_polls_what_kubevirt_polls_and_stores_it() -> None:
    dom = FakeDomain()
    changes: list[int] = []
    poller, store = poller_of(dom, changes)
    poller.poll_all()
    assert [name for name, _ in dom.calls if name != "guestInfo"] == [
        "guest-info",
        "guest-get-fsinfo",
        "guest-fsfreeze-status",
    ]
    expected_types = [SYS_INFO_TYPES, USER_INFO_TYPES] + ([LOAD_INFO_TYPES] if LOAD_INFO_TYPES else [])
    assert dom.called("guestInfo") == expected_types
    assert all(timeout == 10 for timeout in dom.timeouts.values())  # never libvirt's default or blocking
    assert store.agent_info().version == "9.0.0"
    assert store.filesystems()[0].name == "vda1"
    assert store.fs_freeze_status() == "thawed"
    assert store.hostname() == "fedora-guest"
    assert store.timezone().zone == "UTC"
    assert store.os_info() == GuestOSInfo(
        name="Fedora Linux",
        kernel_release="6.11.4-301.fc41.x86_64",
        version="41 (Cloud Edition)",
        pretty_name="Fedora Linux 41 (Cloud Edition)",
        version_id="41",
        kernel_version="#1 SMP PREEMPT_DYNAMIC",
        machine="x86_64",
        id="fedora",
    )
    assert store.interfaces() == (
        InterfaceStatus("52:54:00:12:34:56", "10.0.2.2", ("fe80::5054:ff:fe12:3456", "10.0.2.2"), "eth0"),
    )
    assert store.users() == (User("fedora", "", 1700000000.5),)
    assert len(changes) == 2  # the freeze status, then the interfaces and OS info of one guest-info call
    poller.poll_all()
    assert len(changes) == 2  # nothing changed


def test_garbage_and_failures_skip_only_their_own_task() -> None:
    dom = FakeDomain(
        {
            "guest-info": reply([1, 2, 3]),
            "guest-get-fsinfo": "}{",
            "guest-fsfreeze-status": not_connected(),
        },
        guest_info={"os.name": 42, "user.count": 1, "user.0.name": "root"},
    )
    poller, store = poller_of(dom)
    poller.poll_all()  # no exception escapes
    for key in (keys.AGENT_INFO, keys.FILESYSTEMS, keys.FS_FREEZE_STATUS, keys.OS_INFO, keys.INTERFACES):
        assert not store.has(key), key
    assert store.users() == (User("root"),)
    dom.answers["guest-info"] = reply({"version": "9.1"})
    poller.poll_all()
    assert store.agent_info().version == "9.1"


def test_no_domain_no_calls() -> None:
    poller, store = poller_of(None)
    poller.poll_all()
    assert store.domain_status_fields() == {}


def test_a_raising_task_does_not_end_the_poller(monkeypatch: pytest.MonkeyPatch) -> None:
    dom = FakeDomain()
    poller, store = poller_of(dom)

    def broken() -> None:
        raise ZeroDivisionError

    poller.tasks.insert(0, PollTask("broken", 1.0, broken))
    poller.poll_all()
    assert store.agent_info().version == "9.0.0"


# -- the schedule --------------------------------------------------------------------------------


class StopAfter:
    """A stop event that records each wait and stops after ``rounds`` of them."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.waits: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        return len(self.waits) > self.rounds


def test_each_task_runs_at_once_then_backs_off_from_ten_seconds_to_its_interval() -> None:
    poller, _ = poller_of(None)
    runs: list[int] = []
    slow = PollTask("sys", 120.0, lambda: runs.append(1))
    stop = StopAfter(6)
    poller._loop(slow, stop)  # type: ignore[arg-type]
    assert stop.waits == [10.0, 20.0, 40.0, 80.0, 120.0, 120.0, 120.0]
    assert len(runs) == 7  # once at once, then after each of the six waits
    fast = PollTask("fsfreeze", 5.0, lambda: None)
    stop = StopAfter(3)
    poller._loop(fast, stop)  # type: ignore[arg-type]
    assert stop.waits == [5.0, 5.0, 5.0, 5.0]
    assert next_interval(10.0, 300.0) == 20.0
    assert next_interval(200.0, 300.0) == 300.0
    assert PollIntervals() == PollIntervals(sys=120.0, file=300.0, user=10.0, version=300.0, fsfreeze=5.0)


def test_start_polls_on_threads_until_stopped() -> None:
    dom = FakeDomain()
    store = AgentStore()
    intervals = PollIntervals(sys=0.02, file=0.02, user=0.02, version=0.02, fsfreeze=0.02)
    poller = AgentPoller(lambda: dom, AgentCaller(), store, intervals, initial_interval=0.01)
    poller.start()
    poller.start()  # already running: no second set of threads
    assert running(poller)
    wait_until(lambda: len(dom.called("guest-fsfreeze-status")) >= 5)
    poller.stop()
    assert not running(poller)
    time.sleep(0.1)  # a call under way finishes
    count = len(dom.called("guest-fsfreeze-status"))
    time.sleep(0.2)
    assert len(dom.called("guest-fsfreeze-status")) == count
    assert store.os_info() is not None
    poller.start()  # started again after a disconnect
    wait_until(lambda: len(dom.called("guest-fsfreeze-status")) > count)
    poller.stop()


# -- bounded calls -------------------------------------------------------------------------------


def test_a_hung_agent_is_abandoned_after_its_timeout() -> None:
    release = threading.Event()

    def hang(_: Any) -> str:
        release.wait(10)
        return reply({})

    dom = FakeDomain({"guest-ping": hang})
    caller = AgentCaller(wait_margin=0.2)
    started = time.monotonic()
    with pytest.raises(AgentTimeoutError, match=r"guest-ping: no answer from the guest agent within 1.2s"):
        caller.command(dom, "guest-ping", timeout=1)
    assert time.monotonic() - started < 3
    release.set()
    caller.close()


def test_calls_queued_behind_hung_ones_time_out_and_never_run() -> None:
    release = threading.Event()
    ran: list[str] = []
    caller = AgentCaller(workers=1)
    first = threading.Thread(target=lambda: caller.run("hang", lambda: release.wait(5), wait=5), daemon=True)
    first.start()
    time.sleep(0.05)
    with pytest.raises(AgentTimeoutError, match="queued"):
        caller.run("queued", lambda: ran.append("queued"), wait=0.1)
    release.set()
    first.join()
    assert ran == []
    caller.close()


def test_a_keyed_call_is_refused_while_the_previous_one_is_out() -> None:
    release = threading.Event()
    caller = AgentCaller()
    with pytest.raises(AgentTimeoutError):
        caller.run("poll", lambda: release.wait(5), wait=0.05, key="users")
    with pytest.raises(AgentTimeoutError, match="the previous call is still waiting"):
        caller.run("poll", lambda: None, wait=1, key="users")
    assert caller.run("other", lambda: "answered", wait=1, key="os") == "answered"
    release.set()

    def answered_again() -> bool:
        try:
            return caller.run("poll", lambda: True, wait=1, key="users")
        except AgentTimeoutError:
            return False  # the first call is returning

    wait_until(answered_again)
    caller.close()


def test_libvirt_errors_and_a_closed_caller() -> None:
    caller = AgentCaller()
    err = libvirt.libvirtError("x")
    err.err = (
        libvirt.VIR_ERR_AGENT_UNRESPONSIVE,
        10,
        "Guest agent is not responding: x",
        2,
        None,
        None,
        None,
        0,
        0,
    )

    def refuse() -> None:
        raise err

    with pytest.raises(AgentCallError) as caught:
        caller.run("ping", refuse, wait=1)
    assert str(caught.value) == "LibvirtError(Code=86, Domain=10, Message='Guest agent is not responding: x')"
    assert (
        caught.value.go_message == "virError(Code=86, Domain=10, Message='Guest agent is not responding: x')"
    )
    caller.close()
    with pytest.raises(Exception, match="shutting down"):
        caller.run("late", lambda: None, wait=1)
