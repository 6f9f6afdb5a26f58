"""Leader election between candidates sharing an in-memory API (short timings), and over HTTP with a
leader whose API requests stall."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest
import urllib3

from kubevirt.client import LEASES, ApiError, KubeApi, KubeClient
from kubevirt.client.connection import Connection
from kubevirt.client.resources import Resource
from kubevirt.controller import LeaderElector
from kubevirt_testing.fake_kube_api import FakeKubeApi

JSON = dict[str, Any]
TIMINGS = {"lease_duration": 0.6, "renew_deadline": 0.4, "retry_period": 0.1}


class Candidate:
    def __init__(
        self,
        api: KubeApi,
        identity: str,
        *,
        release_on_cancel: bool = False,
        timings: Mapping[str, float] = TIMINGS,
    ) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.stopped_at: float | None = None
        self.stop = threading.Event()
        self.elector = LeaderElector(
            api,
            namespace="kubevirt",
            name="virt-controller",
            identity=identity,
            on_started_leading=self.started.set,
            on_stopped_leading=self._stopped,
            release_on_cancel=release_on_cancel,
            lease_duration=timings["lease_duration"],
            renew_deadline=timings["renew_deadline"],
            retry_period=timings["retry_period"],
        )
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def _stopped(self) -> None:
        self.stopped_at = time.monotonic()
        self.stopped.set()

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


# -- a leader whose requests stall ----------------------------------------------------------------------
# Wider timings than above: the 0.5 s between the leader's renew deadline and the lease's end must
# cover thread scheduling on a busy machine.
STALL_TIMINGS = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}


class LeaseServer(ThreadingHTTPServer):
    """The Lease API over plain HTTP, on a FakeKubeApi; requests from a stalled user agent hang until
    released, as an API server (or the network to it) that stopped answering."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), LeaseRequests)
        self.api = FakeKubeApi()
        self.stalled: set[str] = set()
        self.released = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class LeaseRequests(BaseHTTPRequestHandler):
    server: LeaseServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, call: Callable[[], JSON]) -> None:
        if self.headers.get("User-Agent") in self.server.stalled:
            self.server.released.wait(60)
        try:
            status, body = 200, call()
        except ApiError as err:
            status, body = err.status, {"kind": "Status", "reason": err.reason, "message": err.message}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> JSON:
        data: JSON = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        return data

    def do_GET(self) -> None:
        name = self.path.rsplit("/", 1)[-1]
        self._answer(lambda: self.server.api.get(LEASES, "kubevirt", name))

    def do_POST(self) -> None:
        body = self._body()
        self._answer(lambda: self.server.api.create(LEASES, "kubevirt", body))

    def do_PUT(self) -> None:
        body = self._body()
        self._answer(lambda: self.server.api.update(LEASES, "kubevirt", body))


@pytest.fixture
def lease_server() -> Iterator[LeaseServer]:
    server = LeaseServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.released.set()  # lets the stalled requests, and the threads left waiting on them, end
    server.shutdown()
    server.server_close()


class NoAuth:
    def auth_settings(self) -> dict[str, Any]:
        return {}

    def get_basic_auth_token(self) -> None:
        return None


def kube_client(server: LeaseServer, user_agent: str) -> KubeClient:
    """A KubeClient as the components use, with its own read timeout and retries."""
    return KubeClient(Connection(server.url, urllib3.PoolManager(), NoAuth()), user_agent=user_agent)


class Overlap:
    """Watches two electors and remembers whether both ever said they lead at the same time."""

    def __init__(self, *electors: LeaderElector) -> None:
        self.electors = electors
        self.seen = threading.Event()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _look(self) -> None:
        if all(elector.is_leader() for elector in self.electors):
            self.seen.set()

    def _watch(self) -> None:
        while not self.done.wait(0.002):
            self._look()

    def stop(self) -> bool:
        """Whether both ever led at once, up to now."""
        self.done.set()
        self.thread.join(timeout=5)
        self._look()
        return self.seen.is_set()


def test_a_leader_whose_reads_stall_steps_down_before_the_lease_can_pass_on(
    lease_server: LeaseServer,
) -> None:
    first = Candidate(kube_client(lease_server, "a"), "a", timings=STALL_TIMINGS)
    assert first.started.wait(5)
    second = Candidate(kube_client(lease_server, "b"), "b", timings=STALL_TIMINGS)
    overlap = Overlap(first.elector, second.elector)
    try:
        assert not second.started.wait(0.5)
        stalled = time.monotonic()
        lease_server.stalled.add("a")  # the leader's GETs now hang (its client would retry them 5 x 30 s)
        assert second.started.wait(5)  # the standby takes over once the unrenewed lease ran out
        assert holder(lease_server.api) == "b"
        assert not overlap.stop(), "both led at once"
        # The leader gave up no later than the renew deadline after its last renewal began, and that
        # was before the stall: in time for the lease it wrote then.
        assert first.stopped_at is not None
        assert first.stopped_at - stalled < STALL_TIMINGS["renew_deadline"] + 0.3
        first.thread.join(timeout=1)
        assert not first.thread.is_alive()
    finally:
        overlap.stop()
        first.halt()
        second.halt()


class StallingApi:
    """A FakeKubeApi whose verbs named in ``stalled`` hang until ``released``."""

    def __init__(self, api: FakeKubeApi) -> None:
        self.api = api
        self.stalled: set[str] = set()
        self.released = threading.Event()

    def _wait(self, verb: str) -> None:
        if verb in self.stalled:
            self.released.wait(60)

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        self._wait("get")
        return self.api.get(resource, namespace, name)

    def create(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        self._wait("create")
        return self.api.create(resource, namespace, body)

    def update(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        self._wait("update")
        return self.api.update(resource, namespace, body)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)


def test_a_stalled_renewal_write_does_not_keep_the_leader_leading() -> None:
    api = FakeKubeApi()
    stalling = StallingApi(api)
    first = Candidate(cast(KubeApi, stalling), "a", timings=STALL_TIMINGS)
    try:
        assert first.started.wait(5)
        second = Candidate(api, "b", timings=STALL_TIMINGS)
        overlap = Overlap(first.elector, second.elector)
        try:
            stalled = time.monotonic()
            stalling.stalled.add("update")
            assert second.started.wait(5)
            assert not overlap.stop(), "both led at once"
            assert first.stopped_at is not None
            assert first.stopped_at - stalled < STALL_TIMINGS["renew_deadline"] + 0.3
        finally:
            overlap.stop()
            second.halt()
    finally:
        stalling.released.set()
        first.halt()
