"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's timing and rules.

The holder renews the Lease every ``retry_period``; if it cannot renew within ``renew_deadline`` it stops
leading. A candidate takes the Lease over once the holder's record has not changed for ``lease_duration``
as measured on the candidate's own clock (so clock skew between machines does not matter). Every write
carries the Lease's resourceVersion, so two candidates can never both win a round.

The renew deadline runs from the start of the last successful renewal, which is no later than the
server's write of it, and no API request is waited for past it: a stalled request cannot keep a leader
leading once another candidate may take the Lease over ``lease_duration`` after that write.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from datetime import UTC, datetime
from typing import Any

from kubevirt.client.errors import AlreadyExistsError, ApiError, ConflictError, NotFoundError
from kubevirt.client.protocols import JSON, KubeApi
from kubevirt.client.resources import LEASES
from kubevirt.log import get_logger

__all__ = ["LEASE_DURATION", "RENEW_DEADLINE", "RETRY_PERIOD", "LeaderElector"]

LEASE_DURATION = 15.0
RENEW_DEADLINE = 10.0
RETRY_PERIOD = 2.0
_JITTER = 1.2
# A change in any of these means the holder is alive (or another one took over).
_RECORD_FIELDS = ("holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions")
_log = get_logger()


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _RequestTimeoutError(Exception):
    """An API request did not answer before the deadline of the attempt it belongs to."""


class LeaderElector:
    def __init__(
        self,
        client: KubeApi,
        *,
        namespace: str,
        name: str,
        identity: str,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        lease_duration: float = LEASE_DURATION,
        renew_deadline: float = RENEW_DEADLINE,
        retry_period: float = RETRY_PERIOD,
        release_on_cancel: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period * _JITTER:
            raise ValueError("lease_duration > renew_deadline > 1.2 * retry_period must hold")
        self._client = client
        self._namespace = namespace
        self._name = name
        self.identity = identity
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._lease_duration = lease_duration
        self._lease_seconds = max(1, math.ceil(lease_duration))  # the API wants whole seconds, above 0
        self._renew_deadline = renew_deadline
        self._retry_period = retry_period
        self._release_on_cancel = release_on_cancel
        self._clock = clock
        self._observed: tuple[Any, ...] | None = None
        self._observed_time = 0.0
        self._leading = threading.Event()
        self.leader: str | None = None

    def is_leader(self) -> bool:
        return self._leading.is_set()

    def run(self, stop_event: threading.Event) -> None:
        """Campaigns until leading, leads until the Lease cannot be renewed or ``stop_event`` is set."""
        renewed_at = self._acquire(stop_event)
        if renewed_at is None:
            return
        self._leading.set()
        _log.info("started leading", lease=f"{self._namespace}/{self._name}", identity=self.identity)
        threading.Thread(target=self._on_started, name="leader", daemon=True).start()
        try:
            self._renew(stop_event, renewed_at)
        finally:
            self._leading.clear()
            if stop_event.is_set() and self._release_on_cancel:
                self._release()
            _log.info("stopped leading", lease=f"{self._namespace}/{self._name}", identity=self.identity)
            if self._on_stopped is not None:
                self._on_stopped()

    def _acquire(self, stop_event: threading.Event) -> float | None:
        """When the winning attempt started, or None once ``stop_event`` is set."""
        while not stop_event.is_set():
            started = self._clock()
            if self._try_acquire_or_renew(started + self._renew_deadline):
                return started
            stop_event.wait(self._retry_period * (1 + random.random() * (_JITTER - 1)))
        return None

    def _renew(self, stop_event: threading.Event, renewed_at: float) -> None:
        """Renews until it cannot within ``renew_deadline`` of the last renewal's start, or is stopped."""
        while not stop_event.wait(self._retry_period):
            deadline = renewed_at + self._renew_deadline
            while True:
                started = self._clock()
                if self._try_acquire_or_renew(deadline):
                    renewed_at = started
                    break
                if stop_event.is_set():
                    return
                remaining = deadline - self._clock()
                if remaining <= 0:
                    _log.error("failed to renew the lease in time", identity=self.identity)
                    return
                # One last try right at the deadline rather than a retry period after it.
                stop_event.wait(min(self._retry_period, remaining))

    def _request(self, call: Callable[[], JSON], deadline: float) -> JSON:
        """``call``'s answer, waited for until ``deadline`` (on our clock) at the latest.

        The request runs on a thread of its own, so one the server stalls (or the client retries) is
        left behind rather than waited for: KubeApi calls take no timeout of their own.
        """
        remaining = deadline - self._clock()
        if remaining <= 0:
            raise _RequestTimeoutError("no time left")
        answer: Future[JSON] = Future()

        def send() -> None:
            try:
                answer.set_result(call())
            except Exception as err:
                answer.set_exception(err)

        threading.Thread(target=send, name="lease-request", daemon=True).start()
        done, _ = wait([answer], timeout=remaining)
        if not done:
            raise _RequestTimeoutError(f"no answer within {remaining:.1f}s")
        return answer.result()  # or the request's own error

    def _try_acquire_or_renew(self, deadline: float) -> bool:
        now = _micro_time()
        try:
            lease = self._request(lambda: self._client.get(LEASES, self._namespace, self._name), deadline)
        except NotFoundError:
            return self._create(now, deadline)
        except (ApiError, _RequestTimeoutError) as err:
            _log.warning("cannot read the lease", reason=str(err))
            return False
        spec = lease.get("spec") or {}
        self._observe(spec)
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity and self._observed_time + self._lease_duration > self._clock():
            return False  # held by another candidate, whose lease has not run out yet
        ours = holder == self.identity
        new_spec: JSON = {
            **spec,
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self._lease_seconds,
            "renewTime": now,
            "acquireTime": spec.get("acquireTime") if ours else now,
            "leaseTransitions": int(spec.get("leaseTransitions") or 0) + (0 if ours else 1),
        }
        body = {**lease, "spec": new_spec}
        try:
            updated = self._request(lambda: self._client.update(LEASES, self._namespace, body), deadline)
        except (ConflictError, NotFoundError):
            return False
        except (ApiError, _RequestTimeoutError) as err:
            _log.warning("cannot update the lease", reason=str(err))
            return False
        self._observe(updated.get("spec") or {})
        return True

    def _create(self, now: str, deadline: float) -> bool:
        body: JSON = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self._name, "namespace": self._namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self._lease_seconds,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            created = self._request(lambda: self._client.create(LEASES, self._namespace, body), deadline)
        except _RequestTimeoutError as err:
            _log.warning("cannot create the lease", reason=str(err))
            return False
        except ApiError as err:
            if not isinstance(err, AlreadyExistsError):
                _log.warning("cannot create the lease", reason=str(err))
            return False
        self._observe(created.get("spec") or {})
        return True

    def _observe(self, spec: JSON) -> None:
        record = tuple(spec.get(field) for field in _RECORD_FIELDS)
        if record != self._observed:
            self._observed = record
            self._observed_time = self._clock()
        holder = spec.get("holderIdentity") or None
        if holder != self.leader:
            self.leader = holder
            if holder is not None and self._on_new_leader is not None:
                self._on_new_leader(holder)

    def _release(self) -> None:
        deadline = self._clock() + self._renew_deadline  # a stalled server must not hold up shutdown
        try:
            lease = self._request(lambda: self._client.get(LEASES, self._namespace, self._name), deadline)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = _micro_time()
            released = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1}
            released.update(renewTime=now, acquireTime=now)
            body = {**lease, "spec": released}
            self._request(lambda: self._client.update(LEASES, self._namespace, body), deadline)
        except (ApiError, _RequestTimeoutError) as err:
            _log.warning("cannot release the lease", reason=str(err))
