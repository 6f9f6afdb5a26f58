"""virt-api's metrics: KubeVirt's names, help texts and labels, and the stream gauges as virt-api's own
console, VNC and port-forward handlers move them: counted while the request runs (refused ones too),
the VMI's last-connection time stamped in whole seconds when it ends."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry, generate_latest

from kubevirt.client import JSON, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.monitoring import virt_api as metrics
from kubevirt.monitoring.virt_api import ConnectionKind, active_connection
from kubevirt.virt_api.rest.handler import HandlerLocator
from kubevirt.virt_api.rest.lifecycle import VMLifecycle
from kubevirt.virt_api.rest.portforward import PortForwarder
from kubevirt.virt_api.rest.server import SubresourceAPI
from kubevirt.virt_api.rest.streams import StreamRelay
from kubevirt.virt_api.rest.vmi_operations import VMIOperations
from kubevirt_testing.fake_kube_api import FakeKubeApi
from kubevirt_testing.subresource_api import RecordingTransport

pytestmark = pytest.mark.timeout(120)

CONSOLE = "kubevirt_console_active_connections"
VNC = "kubevirt_vnc_active_connections"
PORTFORWARD = "kubevirt_portforward_active_tunnels"
USBREDIR = "kubevirt_usbredir_active_connections"
LAST = "kubevirt_vmi_last_api_connection_timestamp_seconds"
CREATED = "kubevirt_vm_created_by_pod_total"
NOW = 1_700_000_000.75
BASE = "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}"
Labels = tuple[tuple[str, str], ...]


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> CollectorRegistry:
    monkeypatch.setattr(metrics, "clock", lambda: NOW)
    registry = CollectorRegistry()
    metrics.register(registry)
    return registry


def _series(registry: CollectorRegistry, family: str, namespace: str) -> dict[Labels, float]:
    """The family's samples in ``namespace`` (the gauges are the process's: each test has its own)."""
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for metric in registry.collect()
        if metric.name == family
        for sample in metric.samples
        if sample.labels.get("namespace") == namespace
    }


def _one(namespace: str, vmi: str) -> Labels:
    return (("namespace", namespace), ("vmi", vmi))


def test_the_families_are_kubevirts() -> None:
    assert metrics.metric_descriptions() == [
        (
            PORTFORWARD,
            "Gauge",
            "Amount of active portforward tunnels, broken down by namespace and vmi name.",
        ),
        (VNC, "Gauge", "Amount of active VNC connections, broken down by namespace and vmi name."),
        (CONSOLE, "Gauge", "Amount of active Console connections, broken down by namespace and vmi name."),
        (
            USBREDIR,
            "Gauge",
            "Amount of active USB redirection connections, broken down by namespace and vmi name.",
        ),
        (
            LAST,
            "Gauge",
            "Virtual Machine Instance last API connection timestamp. "
            "Including VNC, console, portforward, SSH and usbredir connections.",
        ),
        (
            CREATED,
            "Counter",
            "The total number of VMs created by namespace and virt-api pod, since install.",
        ),
    ]


def test_registration_exposes_every_family_once(registry: CollectorRegistry) -> None:
    metrics.register(registry)  # a second call is harmless
    text = generate_latest(registry).decode()
    for name, kind, help_text in metrics.metric_descriptions():
        assert f"# HELP {name} {help_text}\n# TYPE {name} {kind.lower()}\n" in text


def test_created_vms_are_counted_per_namespace_without_a_created_series(registry: CollectorRegistry) -> None:
    metrics.vm_created("created-a")
    metrics.vm_created("created-a")
    metrics.vm_created("created-b")
    assert registry.get_sample_value(CREATED, {"namespace": "created-a"}) == 2.0
    assert registry.get_sample_value(CREATED, {"namespace": "created-b"}) == 1.0
    assert "kubevirt_vm_created_by_pod_created" not in generate_latest(registry).decode()


def test_the_context_manager_counts_while_open_and_stamps_when_closed(registry: CollectorRegistry) -> None:
    ns = "cm"
    with active_connection(ConnectionKind.USBREDIR, ns, "guest"):
        assert _series(registry, USBREDIR, ns) == {_one(ns, "guest"): 1.0}
        assert _series(registry, LAST, ns) == {}  # stamped at the end, as KubeVirt's deferred call
        with active_connection(ConnectionKind.USBREDIR, ns, "guest"):
            assert _series(registry, USBREDIR, ns) == {_one(ns, "guest"): 2.0}
    assert _series(registry, USBREDIR, ns) == {_one(ns, "guest"): 0.0}
    assert _series(registry, LAST, ns) == {_one(ns, "guest"): 1_700_000_000.0}


def test_a_failing_stream_is_uncounted_and_stamped_too(registry: CollectorRegistry) -> None:
    ns = "cm-failing"
    with pytest.raises(RuntimeError), active_connection(ConnectionKind.CONSOLE, ns, "guest"):
        raise RuntimeError("gone")
    assert _series(registry, CONSOLE, ns) == {_one(ns, "guest"): 0.0}
    assert _series(registry, LAST, ns) == {_one(ns, "guest"): 1_700_000_000.0}


# -- through virt-api's handlers ---------------------------------------------------------------------


@dataclass
class _LocalHandlers(HandlerLocator):
    """virt-handler's websocket on a local test server instead of the handler pod's address."""

    base: str = ""

    def url_for(self, vmi: JSON, operation: str, *, scheme: str = "https") -> str:
        return f"{self.base}/{operation}"


def _vmi(namespace: str, name: str) -> JSON:
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {},
        "status": {
            "phase": "Running",
            "nodeName": "node01",
            "interfaces": [{"name": "default", "ipAddress": "127.0.0.1"}],
        },
    }


async def _echo(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse(protocols=("plain.kubevirt.io",))
    await ws.prepare(request)
    async for message in ws:
        await ws.send_bytes(bytes(message.data).upper())
    return ws


@asynccontextmanager
async def _virt_api(api: FakeKubeApi) -> AsyncIterator[TestClient[Any, Any]]:
    """virt-api's subresource routes, with console and VNC relayed to a local echoing virt-handler."""
    handler_app = web.Application()
    handler_app.router.add_get("/console", _echo)
    handler_app.router.add_get("/vnc", _echo)
    async with TestServer(handler_app) as handler:
        locator = _LocalHandlers(api, "kubevirt", base=str(handler.make_url("")).rstrip("/"))
        relay = StreamRelay(api, locator, ssl.create_default_context)
        vmis = VMIOperations(api, locator, RecordingTransport())
        subresources = SubresourceAPI(VMLifecycle(api), vmis, streams=relay, portforward=PortForwarder(api))
        app = web.Application()
        subresources.install(app)
        async with TestClient(TestServer(app)) as client:
            yield client


async def _settled(read: Callable[[], Any], wanted: Any) -> Any:
    """``read()`` once it equals ``wanted`` (the handler ends just after the client's side closed)."""
    for _ in range(200):
        if (value := read()) == wanted:
            return value
        await asyncio.sleep(0.01)
    return read()


def _run(api: FakeKubeApi, scenario: Callable[[TestClient[Any, Any]], Awaitable[None]]) -> None:
    async def main() -> None:
        async with _virt_api(api) as client:
            await scenario(client)

    asyncio.run(main())


@pytest.mark.parametrize(("stream", "family"), [("console", CONSOLE), ("vnc", VNC)])
def test_a_relayed_stream_is_counted_while_open(
    registry: CollectorRegistry, stream: str, family: str
) -> None:
    ns = f"relayed-{stream}"
    api = FakeKubeApi()
    api.add(VIRTUAL_MACHINE_INSTANCES, _vmi(ns, "guest"))
    seen: dict[str, Any] = {}

    async def scenario(client: TestClient[Any, Any]) -> None:
        path = BASE.format(namespace=ns) + f"/virtualmachineinstances/guest/{stream}"
        async with client.ws_connect(path, protocols=("plain.kubevirt.io",)) as ws:
            await ws.send_bytes(b"hello")
            seen["reply"] = (await ws.receive(timeout=5)).data
            seen["open"] = _series(registry, family, ns)
            seen["stamp_while_open"] = _series(registry, LAST, ns)
        seen["closed"] = await _settled(lambda: _series(registry, family, ns), {_one(ns, "guest"): 0.0})

    _run(api, scenario)
    assert seen["reply"] == b"HELLO"
    assert seen["open"] == {_one(ns, "guest"): 1.0}
    assert seen["stamp_while_open"] == {}
    assert seen["closed"] == {_one(ns, "guest"): 0.0}
    assert _series(registry, LAST, ns) == {_one(ns, "guest"): 1_700_000_000.0}


def test_a_refused_console_request_is_counted_and_stamped_as_in_kubevirt(registry: CollectorRegistry) -> None:
    ns = "refused"
    codes: list[int] = []

    async def scenario(client: TestClient[Any, Any]) -> None:
        base = BASE.format(namespace=ns) + "/virtualmachineinstances/missing"
        for path in (f"{base}/console", f"{base}/vnc/screenshot"):
            codes.append((await client.get(path)).status)

    _run(FakeKubeApi(), scenario)
    assert codes == [404, 404]
    assert _series(registry, CONSOLE, ns) == {_one(ns, "missing"): 0.0}
    assert _series(registry, VNC, ns) == {_one(ns, "missing"): 0.0}  # the screenshot counts as VNC
    assert _series(registry, LAST, ns) == {_one(ns, "missing"): 1_700_000_000.0}


async def _guest() -> tuple[asyncio.Server, int]:
    """A TCP "guest" on loopback that answers in capitals."""

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data.upper())
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    return server, int(server.sockets[0].getsockname()[1])


@pytest.mark.parametrize("resource", ["virtualmachineinstances", "virtualmachines"])
def test_a_port_forward_tunnel_is_counted_while_open(registry: CollectorRegistry, resource: str) -> None:
    ns = f"forwarded-{resource}"
    api = FakeKubeApi()
    vm = api.add(
        VIRTUAL_MACHINES, {"metadata": {"name": "guest", "namespace": ns}, "status": {"created": True}}
    )
    vmi = _vmi(ns, "guest")
    vmi["metadata"]["ownerReferences"] = [
        {"kind": "VirtualMachine", "name": "guest", "uid": vm["metadata"]["uid"]}
    ]
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi)
    seen: dict[str, Any] = {}

    async def scenario(client: TestClient[Any, Any]) -> None:
        guest, port = await _guest()
        path = BASE.format(namespace=ns) + f"/{resource}/guest/portforward/{port}"
        async with client.ws_connect(path, protocols=("plain.kubevirt.io",)) as ws:
            await ws.send_bytes(b"ping")
            seen["reply"] = (await ws.receive(timeout=5)).data
            seen["open"] = _series(registry, PORTFORWARD, ns)
        seen["closed"] = await _settled(lambda: _series(registry, PORTFORWARD, ns), {_one(ns, "guest"): 0.0})
        guest.close()

    _run(api, scenario)
    assert seen["reply"] == b"PING"
    assert seen["open"] == {_one(ns, "guest"): 1.0}
    assert seen["closed"] == {_one(ns, "guest"): 0.0}
    assert _series(registry, LAST, ns) == {_one(ns, "guest"): 1_700_000_000.0}
