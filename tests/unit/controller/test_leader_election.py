"""Leader election between candidates sharing an in-memory API (short timings)."""

from __future__ import annotations

import threading

import pytest

from kubevirt.client import LEASES, ApiError
from kubevirt.client.fake import FakeKubeApi
from kubevirt.controller import LeaderElector

TIMINGS = {"lease_duration": 0.6, "renew_deadline": 0.4, "retry_period": 0.1}


class Candidate:
    def __init__(self, api: FakeKubeApi, identity: str, *, release_on_cancel: bool = False) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.stop = threading.Event()
        self.elector = LeaderElector(
            api,
            namespace="kubevirt",
            name="virt-controller",
            identity=identity,
            on_started_leading=self.started.set,
            on_stopped_leading=self.stopped.set,
            release_on_cancel=release_on_cancel,
            **TIMINGS,
        )
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def halt(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def holder(api: FakeKubeApi) -> str:
    return str(api.get(LEASES, "kubevirt", "virt-controller")["spec"]["holderIdentity"])


def test_one_leads_and_the_other_takes_over_once_the_lease_runs_out() -> None:
    api = FakeKubeApi()
    first = Candidate(api, "a")
    assert first.started.wait(2)
    second = Candidate(api, "b")
    try:
        assert not second.started.wait(1.0)  # the leader keeps renewing
        assert holder(api) == "a"
        first.halt()  # dies without releasing the lease
        assert first.stopped.is_set()
        assert second.started.wait(2)
        assert holder(api) == "b"
        lease = api.get(LEASES, "kubevirt", "virt-controller")
        assert lease["spec"]["leaseTransitions"] == 1
        assert lease["spec"]["leaseDurationSeconds"] == 1  # whole seconds, at least one
    finally:
        first.halt()
        second.halt()


def test_a_released_lease_is_taken_at_once() -> None:
    api = FakeKubeApi()
    first = Candidate(api, "a", release_on_cancel=True)
    assert first.started.wait(2)
    second = Candidate(api, "b")
    try:
        first.halt()
        assert holder(api) in ("", "b")
        assert second.started.wait(0.5)  # well before the 0.6 s lease would have run out
    finally:
        second.halt()


def test_a_leader_that_cannot_renew_stops_leading() -> None:
    api = FakeKubeApi()
    leader = Candidate(api, "a")
    try:
        assert leader.started.wait(2)
        api.fail_with = ApiError(503, "ServiceUnavailable", "down")
        assert leader.stopped.wait(2)
        assert not leader.elector.is_leader()
        leader.thread.join(timeout=2)
        assert not leader.thread.is_alive()
    finally:
        leader.halt()


def test_timings_must_leave_room_to_renew() -> None:
    with pytest.raises(ValueError, match="lease_duration > renew_deadline"):
        LeaderElector(
            FakeKubeApi(),
            namespace="ns",
            name="l",
            identity="a",
            on_started_leading=lambda: None,
            lease_duration=10,
            renew_deadline=10,
        )
