"""KubeClient on a scripted connection pool: requests, error mapping, which failures are retried."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from urllib3.exceptions import NewConnectionError, ProtocolError

from kubevirt.client import PODS, ConflictError, ConnectionFailedError, KubeClient, NotFoundError
from kubevirt.client.connection import Connection
from kubevirt.client.resources import CONTROLLER_REVISIONS
from kubevirt.client.watch import WatchStream


class FakeResponse:
    def __init__(self, status: int, body: Any = None, chunks: list[bytes] | None = None) -> None:
        self.status = status
        self.data = json.dumps(body).encode() if body is not None else b""
        self._chunks = chunks or []
        self.released = False

    def read(self) -> bytes:
        return self.data

    def stream(self, amount: int) -> Iterator[bytes]:
        yield from self._chunks

    def release_conn(self) -> None:
        self.released = True

    def shutdown(self) -> None:
        pass


class FakePool:
    """Answers each request with the next scripted response or raises the next scripted error."""

    def __init__(self, *script: FakeResponse | Exception) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []

    def request(self, method: str, url: str, **kwargs: Any) -> FakeResponse:
        self.requests.append({"method": method, "url": url, **kwargs})
        outcome = self.script.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


class FakeConfiguration:
    def auth_settings(self) -> dict[str, Any]:
        return {"BearerToken": {"in": "header", "key": "authorization", "value": "Bearer t0ken"}}

    def get_basic_auth_token(self) -> None:
        return None


def client(pool: FakePool) -> KubeClient:
    return KubeClient(Connection("https://api.test:6443", pool, FakeConfiguration()))


def test_requests_carry_auth_json_and_the_patch_content_type() -> None:
    pool = FakePool(FakeResponse(200, {"metadata": {"name": "p"}}))
    patched = client(pool).patch(PODS, "ns", "p", [{"op": "remove", "path": "/metadata/labels/a"}])
    assert patched == {"metadata": {"name": "p"}}
    [sent] = pool.requests
    assert (sent["method"], sent["url"]) == ("PATCH", "https://api.test:6443/api/v1/namespaces/ns/pods/p")
    assert sent["headers"]["authorization"] == "Bearer t0ken"
    assert sent["headers"]["Content-Type"] == "application/json-patch+json"
    assert json.loads(sent["body"]) == [{"op": "remove", "path": "/metadata/labels/a"}]


def test_bodies_are_the_bytes_go_writes_so_raw_data_survives_the_servers_patch_round_trip() -> None:
    """A ControllerRevision's ``data`` is kept as sent; a later merge patch re-encodes it Go's way."""
    pool = FakePool(FakeResponse(201, {}))
    revision = {
        "kind": "ControllerRevision",
        "data": {"spec": {"z": 1, "a": "#!/bin/sh\necho a && b <x> \u00e9\u2028", "m": [True, None]}},
        "revision": 2,
    }
    client(pool).create(CONTROLLER_REVISIONS, "ns", revision)
    [sent] = pool.requests
    # Go's encoding/json: keys sorted, no spaces, HTML characters and line separators escaped, UTF-8 text.
    assert (
        sent["body"]
        == (
            '{"data":{"spec":{"a":"#!/bin/sh\\necho a \\u0026\\u0026 b \\u003cx\\u003e \u00e9\\u2028",'
            '"m":[true,null],"z":1}},"kind":"ControllerRevision","revision":2}'
        ).encode()
    )


def test_delete_sends_a_uid_precondition() -> None:
    pool = FakePool(FakeResponse(200, {"kind": "Status"}))
    client(pool).delete(PODS, "ns", "p", uid="u-1", grace_period_seconds=0)
    body = json.loads(pool.requests[0]["body"])
    assert body["preconditions"] == {"uid": "u-1"}
    assert body["gracePeriodSeconds"] == 0


def test_failures_become_typed_errors_and_conflicts_are_not_retried() -> None:
    pool = FakePool(
        FakeResponse(409, {"kind": "Status", "reason": "Conflict", "message": "modified"}),
        FakeResponse(404, {"kind": "Status", "reason": "NotFound", "message": "gone"}),
    )
    kube = client(pool)
    with pytest.raises(ConflictError, match="modified"):
        kube.update(PODS, "ns", {"metadata": {"name": "p", "resourceVersion": "1"}})
    with pytest.raises(NotFoundError):
        kube.get(PODS, "ns", "p")
    assert len(pool.requests) == 2


def test_a_connection_that_never_opened_is_retried_for_any_verb() -> None:
    refused = NewConnectionError(None, "connection refused")
    pool = FakePool(refused, refused, FakeResponse(201, {"metadata": {"name": "p"}}))
    assert client(pool).create(PODS, "ns", {"metadata": {"name": "p"}})["metadata"]["name"] == "p"
    assert [request["method"] for request in pool.requests] == ["POST"] * 3


def test_a_write_cut_off_midway_is_not_repeated_and_reads_give_up_after_five_tries() -> None:
    broken = ProtocolError("connection reset")
    pool = FakePool(broken)
    with pytest.raises(ConnectionFailedError):
        client(pool).create(PODS, "ns", {"metadata": {"name": "p"}})
    assert len(pool.requests) == 1
    pool = FakePool(*[broken] * 5)
    with pytest.raises(ConnectionFailedError):
        client(pool).get(PODS, "ns", "p")
    assert len(pool.requests) == 5


def test_a_request_that_must_not_wait_is_sent_once_with_its_own_timeout() -> None:
    refused = NewConnectionError(None, "connection refused")
    pool = FakePool(refused, FakeResponse(200, {"items": []}))
    with pytest.raises(ConnectionFailedError, match="connection refused"):
        client(pool).request("GET", PODS.path("ns"), timeout=3.0, retry=False)
    assert len(pool.requests) == 1
    assert pool.requests[0]["timeout"].read_timeout == 3.0


def test_watch_events_are_read_across_chunk_boundaries() -> None:
    lines = b'{"type":"ADDED","object":{"a":1}}\n{"type":"BOOK' + b'MARK","object":{"b":2}}\n'
    response = FakeResponse(200, chunks=[lines[:20], lines[20:45], lines[45:]])
    events = list(WatchStream(response))
    assert events == [{"type": "ADDED", "object": {"a": 1}}, {"type": "BOOKMARK", "object": {"b": 2}}]
    assert response.released
