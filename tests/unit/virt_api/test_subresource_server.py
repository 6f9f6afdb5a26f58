"""The subresource API over HTTP, as virt-api serves it beside the webhooks: option bodies are bounded and
decoded without holding up the event loop, and a path is read the same way by the router and by the
access check."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from yarl import URL

from kubevirt.client import VIRTUAL_MACHINES
from kubevirt_testing.fake_kube_api import FakeKubeApi
from kubevirt_testing.subresource_api import (
    BASE,
    NAMESPACE,
    USER_HEADERS,
    Reviews,
    fake_api,
    subresource_application,
)

pytestmark = pytest.mark.timeout(120)

JSON = dict[str, Any]
START = f"{BASE}/virtualmachines/vm/start"
TOO_LARGE = "Can not unmarshal Request body to struct, error: request body is larger than 65536 bytes"


def _run(
    api: FakeKubeApi, reviews: Reviews, scenario: Callable[[TestClient[Any, Any]], Awaitable[None]]
) -> None:
    async def main() -> None:
        async with TestClient(TestServer(subresource_application(api, reviews))) as client:
            await scenario(client)

    asyncio.run(main())


async def _put(client: TestClient[Any, Any], path: str, body: Any = b"") -> tuple[int, Any]:
    response = await client.put(URL(path, encoded=True), data=body, headers=USER_HEADERS)
    if response.content_type == "application/json":
        return response.status, await response.json()
    return response.status, await response.text()


# -- option bodies ------------------------------------------------------------------------------------


def test_a_large_body_is_refused_at_once_while_health_checks_keep_being_answered() -> None:
    api, reviews = fake_api(), Reviews()
    # 1.4 MiB of YAML: the pure-Python parser spent seconds on the event loop with such a body.
    body = b"dryRun:\n" + b"- All\n" * (1400 * 1024 // 6)
    answers: dict[str, Any] = {}

    async def scenario(client: TestClient[Any, Any]) -> None:
        started = time.monotonic()
        put = asyncio.ensure_future(_put(client, START, body))
        await asyncio.sleep(0.05)
        health = await client.get("/healthz")
        answers["health"] = (health.status, time.monotonic() - started)
        answers["put"] = await put
        answers["put_seconds"] = time.monotonic() - started

    _run(api, reviews, scenario)
    assert answers["health"][0] == 200
    assert answers["health"][1] < 2.0
    code, status = answers["put"]
    assert (code, status["kind"], status["reason"], status["message"]) == (
        400,
        "Status",
        "BadRequest",
        TOO_LARGE,
    )
    assert answers["put_seconds"] < 2.0
    assert api.writes == []


def test_a_large_body_without_a_declared_length_is_refused_after_the_limit() -> None:
    api, reviews = fake_api(), Reviews()
    sent: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"dryRun": ["All"], "padding": "'
        for _ in range(64):
            sent.append(4096)
            yield b"x" * 4096
        yield b'"}'

    async def scenario(client: TestClient[Any, Any]) -> None:
        code, status = await _put(client, START, chunks())
        assert (code, status["message"]) == (400, TOO_LARGE)

    _run(api, reviews, scenario)
    assert api.writes == []


def test_a_body_within_the_limit_is_read() -> None:
    api, reviews = fake_api(), Reviews()
    body = b'{"dryRun": []}' + b" " * (64 * 1024 - 14)

    async def scenario(client: TestClient[Any, Any]) -> None:
        assert await _put(client, START, body) == (202, "")

    _run(api, reviews, scenario)
    assert api.get(VIRTUAL_MACHINES, NAMESPACE, "vm")["spec"]["runStrategy"] == "Always"


@pytest.mark.parametrize(
    "body",
    [
        b'{"dryRun": ' + b"[" * 20000 + b"]" * 20000 + b"}",  # the json module's recursion
        b"dryRun: " + b"[" * 500 + b"]" * 500,  # libyaml's parser nests as deep as 1000
        b"dryRun:\n" + b"- " * 500 + b"x\n",
    ],
)
def test_a_deeply_nested_body_is_a_bad_request(body: bytes) -> None:
    api, reviews = fake_api(), Reviews()

    async def scenario(client: TestClient[Any, Any]) -> None:
        code, status = await _put(client, START, body)
        assert (code, status["reason"]) == (400, "BadRequest")
        assert "nested deeper than 100 levels" in status["message"]

    _run(api, reviews, scenario)
    assert api.writes == []


# -- paths ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "segment"),
    [
        (f"{BASE}/virtualmachines/a%2F..%2Fvm/start", "a/../vm"),
        (f"{BASE}/virtualmachines/vm%2fstop/start", "vm/stop"),
        (f"{BASE}/virtualmachines/%2E%2E/start", ".."),
        (f"{BASE}/virtualmachineinstances/vmi/%2e/pause", "."),
        (
            "/apis/subresources.kubevirt.io/v1/namespaces/ns%2Fvirtualmachines%2Fvm/virtualmachines/x/start",
            "ns/virtualmachines/vm",
        ),
    ],
)
def test_a_segment_that_decodes_to_more_than_one_is_refused_before_any_review(
    path: str, segment: str
) -> None:
    api, reviews = fake_api(), Reviews()

    async def scenario(client: TestClient[Any, Any]) -> None:
        code, status = await _put(client, path)
        assert (code, status["kind"], status["reason"]) == (400, "Status", "BadRequest")
        assert status["message"].startswith(f'invalid path segment "{segment}": ')

    _run(api, reviews, scenario)
    assert reviews.seen == []
    assert api.writes == []


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (f"{BASE}/virtualmachines/Not_A_Name/start", 'virtualmachine.kubevirt.io "Not_A_Name" not found'),
        (f"{BASE}/virtualmachines/a%252Fb/start", 'virtualmachine.kubevirt.io "a%2Fb" not found'),
        (
            f"{BASE}/virtualmachineinstances/x{'y' * 253}/pause",
            f'virtualmachineinstance.kubevirt.io "x{"y" * 253}" not found',
        ),
        (
            "/apis/subresources.kubevirt.io/v1/namespaces/NS/virtualmachines/vm/start",
            'namespaces "NS" not found',
        ),
    ],
)
def test_a_name_no_object_can_have_is_not_found_without_a_review(path: str, message: str) -> None:
    api, reviews = fake_api(), Reviews()

    async def scenario(client: TestClient[Any, Any]) -> None:
        code, status = await _put(client, path)
        assert (code, status["reason"], status["message"]) == (404, "NotFound", message)

    _run(api, reviews, scenario)
    assert reviews.seen == []


def test_the_review_names_what_the_router_routed() -> None:
    api, reviews = fake_api(), Reviews()

    async def scenario(client: TestClient[Any, Any]) -> None:
        assert await _put(client, START.replace("/vm/", "/%76m/")) == (202, "")  # %76 is "v"

    _run(api, reviews, scenario)
    [attributes] = reviews.attributes()
    assert (attributes["namespace"], attributes["name"], attributes["subresource"]) == (
        NAMESPACE,
        "vm",
        "start",
    )
    assert api.get(VIRTUAL_MACHINES, NAMESPACE, "vm")["spec"]["runStrategy"] == "Always"
