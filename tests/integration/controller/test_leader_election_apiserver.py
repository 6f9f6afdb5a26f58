"""Two electors on a real Lease: one leads; when it stops, the other takes over."""

from __future__ import annotations

import threading
import time

from kubevirt.client import LEASES, KubeClient
from kubevirt.controller import LeaderElector


class Candidate:
    def __init__(self, kube: KubeClient, namespace: str, identity: str, **timings: float) -> None:
        self.started_at: float | None = None
        self.lost = threading.Event()
        self.stop = threading.Event()
        self.elector = LeaderElector(
            kube,
            namespace=namespace,
            name="virt-controller",
            identity=identity,
            on_started_leading=self._started,
            on_stopped_leading=self.lost.set,
            **timings,
        )
        self.leading = threading.Event()
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def _started(self) -> None:
        self.started_at = time.monotonic()
        self.leading.set()

    def halt(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def test_the_standby_takes_over_within_the_lease_duration_of_the_leaders_death(
    kube: KubeClient, namespace: str
) -> None:
    leader = Candidate(kube, namespace, "replica-a")  # client-go's defaults: 15 s, 10 s, 2 s
    assert leader.leading.wait(10)
    standby = Candidate(kube, namespace, "replica-b")
    try:
        assert not standby.leading.wait(3)
        lease = kube.get(LEASES, namespace, "virt-controller")
        assert lease["spec"]["holderIdentity"] == "replica-a"
        assert lease["spec"]["leaseDurationSeconds"] == 15
        died = time.monotonic()
        leader.halt()  # stops renewing without releasing, as a killed process would
        assert standby.leading.wait(25)
        assert standby.started_at is not None
        takeover = standby.started_at - died
        print(f"standby took over {takeover:.1f} s after the leader stopped renewing")
        assert 10 < takeover < 15 + 2 * 1.2 + 1  # the lease must run out first; then one retry period
        lease = kube.get(LEASES, namespace, "virt-controller")
        assert lease["spec"]["holderIdentity"] == "replica-b"
        assert lease["spec"]["leaseTransitions"] == 1
        assert not standby.lost.is_set()
    finally:
        leader.halt()
        standby.halt()


def test_exactly_one_of_two_concurrent_candidates_leads(kube: KubeClient, namespace: str) -> None:
    timings = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.5}
    first = Candidate(kube, namespace, "a", **timings)
    second = Candidate(kube, namespace, "b", **timings)
    try:
        deadline = time.monotonic() + 10
        while not (first.leading.is_set() or second.leading.is_set()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(2)
        assert first.elector.is_leader() != second.elector.is_leader()
    finally:
        first.halt()
        second.halt()
