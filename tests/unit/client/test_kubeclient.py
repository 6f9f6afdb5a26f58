"""KubeClient on a scripted connection pool: requests, error mapping, which failures are retried."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY, generate_latest
from urllib3.exceptions import NewConnectionError, ProtocolError

from kubevirt.client import PODS, ConflictError, ConnectionFailedError, KubeClient, NotFoundError
from kubevirt.client import metrics as client_metrics
from kubevirt.client.connection import Connection
from kubevirt.client.resources import CONTROLLER_REVISIONS, KUBEVIRTS, VIRTUAL_MACHINE_INSTANCES
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


def client(pool: FakePool, host: str = "https://api.test:6443") -> KubeClient:
    return KubeClient(Connection(host, pool, FakeConfiguration()))


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


# The metrics accumulate in the process-wide registry: each test below talks to a host of its own.
REQUESTS = "kubevirt_rest_client_requests_total"
LATENCY_COUNT = "kubevirt_rest_client_request_latency_seconds_count"


def requests(host: str, code: str, method: str, resource: str, verb: str) -> float | None:
    labels = {"code": code, "method": method, "host": host, "resource": resource, "verb": verb}
    return REGISTRY.get_sample_value(REQUESTS, labels)


def latency_count(verb: str, url: str) -> float | None:
    return REGISTRY.get_sample_value(LATENCY_COUNT, {"verb": verb, "url": url})


def test_every_try_is_counted_with_the_host_and_port_and_failed_tries_as_errors() -> None:
    refused = NewConnectionError(None, "connection refused")
    pool = FakePool(refused, FakeResponse(201, {"metadata": {"name": "p"}}))
    client(pool, "https://count-tries.test:6443").create(PODS, "ns", {"metadata": {"name": "p"}})
    host = "count-tries.test:6443"
    assert requests(host, "<error>", "POST", "pods", "CREATE") == 1
    assert requests(host, "201", "POST", "pods", "CREATE") == 1


def test_resource_and_verb_are_read_from_the_path_and_method_as_kubevirt_reads_them() -> None:
    ok = FakeResponse(200, {"items": [], "metadata": {}})
    pool = FakePool(*[ok] * 7, FakeResponse(200, chunks=[]), FakeResponse(404, {"kind": "Status"}))
    kube = client(pool, "https://count-verbs.test")
    kube.list(PODS, "ns", label_selector="a=b")
    kube.get(PODS, "ns", "p")
    kube.update_status(PODS, "ns", {"metadata": {"name": "p"}})
    kube.patch(VIRTUAL_MACHINE_INSTANCES, "ns", "vmi", {}, patch_type="merge")
    kube.delete(VIRTUAL_MACHINE_INSTANCES, "ns", "vmi")
    kube.list(KUBEVIRTS)
    kube.request("OPTIONS", "/apis/kubevirt.io/v1/kubevirts/kv")
    kube.watch(PODS, "ns", resource_version="1")
    with pytest.raises(NotFoundError):
        kube.server_version()
    host = "count-verbs.test"  # no port in the server's URL: none in the label
    assert requests(host, "200", "GET", "pods", "LIST") == 1
    assert requests(host, "200", "GET", "pods", "GET") == 1
    assert requests(host, "200", "PUT", "pods", "UPDATE") == 1
    assert requests(host, "200", "PATCH", "virtualmachineinstances", "PATCH") == 1
    assert requests(host, "200", "DELETE", "virtualmachineinstances", "DELETE") == 1
    assert requests(host, "200", "GET", "kubevirts", "LIST") == 1
    assert requests(host, "200", "OPTIONS", "kubevirts", "OPTIONS") == 1  # other methods keep their name
    assert requests(host, "200", "GET", "pods", "WATCH") == 1  # watch=true in the query
    assert requests(host, "404", "GET", "none", "none") == 1  # /version names no resource


def test_latency_is_observed_per_call_under_client_gos_url_template() -> None:
    broken = ProtocolError("connection reset")
    ok = FakeResponse(200, {"items": [], "metadata": {}})
    pool = FakePool(broken, ok, ok, ok, FakeResponse(404, {"kind": "Status"}), FakeResponse(200, chunks=[]))
    kube = client(pool, "https://latency.test:6443")
    kube.get(PODS, "ns", "p")  # two tries, one call
    kube.list(PODS, "ns", label_selector="a=b", field_selector="c=d")
    kube.list(PODS)
    with pytest.raises(NotFoundError):
        kube.get(KUBEVIRTS, None, "kv")
    kube.watch(PODS, "ns", resource_version="1")
    base = "https://latency.test:6443"
    assert latency_count("GET", f"{base}/api/v1/namespaces/%7Bnamespace%7D/pods/%7Bname%7D") == 1
    # KubeVirt's resource patterns do not match a templated namespace: a namespaced list reads as a GET.
    query = "fieldSelector=%7Bvalue%7D&labelSelector=%7Bvalue%7D"
    assert latency_count("GET", f"{base}/api/v1/namespaces/%7Bnamespace%7D/pods?{query}") == 1
    assert latency_count("LIST", f"{base}/api/v1/pods") == 1
    assert latency_count("GET", f"{base}/apis/kubevirt.io/v1/kubevirts/%7Bname%7D") == 1  # failures too
    watch_query = "allowWatchBookmarks=%7Bvalue%7D&resourceVersion=%7Bvalue%7D&timeoutSeconds=%7Bvalue%7D"
    for verb in ("GET", "WATCH"):  # watches are not timed
        assert (
            latency_count(
                verb, f"{base}/api/v1/namespaces/%7Bnamespace%7D/pods?{watch_query}&watch=%7Bvalue%7D"
            )
            is None
        )


def test_the_latency_url_keeps_the_servers_base_path_and_hides_paths_outside_the_api() -> None:
    pool = FakePool(FakeResponse(200, {}), FakeResponse(200, {}), FakeResponse(200, {}))
    kube = client(pool, "https://proxy.test/k8s/clusters/c-1")
    kube.update_status(PODS, "ns", {"metadata": {"name": "p"}})
    kube.server_version()
    kube.request("GET", "/openapi/v2", query={"timeout": "32s"})
    base = "https://proxy.test/k8s/clusters/c-1"
    assert latency_count("UPDATE", f"{base}/api/v1/namespaces/%7Bnamespace%7D/pods/%7Bname%7D/status") == 1
    assert latency_count("none", f"{base}/version") == 1
    assert latency_count("none", "https://proxy.test/%7Bprefix%7D") == 1


def test_the_rest_client_families_are_exposed_as_kubevirts() -> None:
    client(FakePool(FakeResponse(200, {})), "https://exposed.test").get(PODS, "ns", "p")
    text = generate_latest(REGISTRY).decode()
    for name, kind, help_text in client_metrics.metric_descriptions():
        assert f"# HELP {name} {help_text}\n# TYPE {name} {kind.lower()}\n" in text
    assert client_metrics.metric_descriptions() == [
        (
            "kubevirt_rest_client_requests_total",
            "Counter",
            "Number of HTTP requests, partitioned by status code, method, and host.",
        ),
        (
            "kubevirt_rest_client_request_latency_seconds",
            "Histogram",
            "Request latency in seconds. Broken down by verb and URL.",
        ),
        (
            "kubevirt_rest_client_rate_limiter_duration_seconds",
            "Histogram",
            "Client side rate limiter latency in seconds. Broken down by verb and URL.",
        ),
    ]
    assert "kubevirt_rest_client_rate_limiter_duration_seconds_bucket" not in text  # no rate limiter here
    assert "kubevirt_rest_client_requests_created" not in text
    assert "kubevirt_rest_client_request_latency_seconds_created" not in text
    url = "https://exposed.test/api/v1/namespaces/%7Bnamespace%7D/pods/%7Bname%7D"
    bounds = [
        line.split('le="')[1].split('"')[0]
        for line in text.splitlines()
        if line.startswith("kubevirt_rest_client_request_latency_seconds_bucket") and url in line
    ]
    assert bounds == [
        *("0.005", "0.025", "0.05", "0.1", "0.2", "0.4", "0.6", "0.8", "1", "1.25", "1.5", "2"),
        *("3", "4", "5", "6", "8", "10", "15", "20", "30", "45", "60", "+Inf"),
    ]
