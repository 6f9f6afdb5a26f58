"""virt-api behind a real API server's aggregator, with a stand-in for virt-handler.

An ExternalName Service and the two APIServices point the aggregator at a virt-api process on loopback,
which trusts the API server's front-proxy certificate. The stand-in answers virt-handler's VMI calls on
HTTPS (``2xx`` by default), echoes console and VNC websockets, and records every call; a pod labelled
as virt-handler on the node ``node01``, with ``podIP`` 127.0.0.1, makes virt-api find it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from kubevirt.apiservices import subresource_api_services
from kubevirt.client import (
    PODS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    AlreadyExistsError,
    ApiError,
    KubeClient,
    NotFoundError,
)
from kubevirt.client.resources import API_SERVICES, NAMESPACES, SERVICE_ACCOUNTS, SERVICES
from kubevirt.service.tls import HANDLER_SERVER_NAME
from kubevirt_testing.certificates import self_signed, write_pair
from kubevirt_testing.process import start_virt_api, terminate

KUBEVIRT_NAMESPACE = "kubevirt"
HANDLER_NODE = "node01"


@dataclass
class HandlerStandIn:
    """Answers virt-handler's ``/v1/namespaces/<ns>/virtualmachineinstances/<name>/<op>`` calls."""

    port: int
    calls: list[tuple[str, str]] = field(default_factory=list)
    answer: tuple[int, bytes] = (202, b"")


@dataclass(frozen=True)
class HandlerEndpoint:
    """A real virt-handler console server on loopback, and what virt-api needs to call it."""

    port: int
    ca_file: Path
    client_cert_file: Path
    client_key_file: Path


@dataclass
class AggregatedVirtApi:
    port: int
    process: subprocess.Popen[bytes]
    log_file: Path
    pki_dir: Path
    ca_file: Path
    handler: HandlerStandIn

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")


class _HandlerServer:
    """The stand-in's aiohttp server, on a loop in its own thread."""

    def __init__(self, workdir: Path, stand_in: HandlerStandIn) -> None:
        self._stand_in = stand_in
        self._vnc_sessions = 0
        self._loop = asyncio.new_event_loop()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(workdir / "handler.crt"), str(workdir / "handler.key"))
        app = web.Application()
        app.router.add_get("/v1/namespaces/{ns}/virtualmachineinstances/{name}/console", self._stream)
        app.router.add_get("/v1/namespaces/{ns}/virtualmachineinstances/{name}/vnc", self._stream)
        app.router.add_route("*", "/v1/{tail:.*}", self._call)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        self._loop.run_until_complete(site.start())
        stand_in.port = int(self._runner.addresses[0][1])
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    async def _call(self, request: web.Request) -> web.Response:
        await request.read()
        self._stand_in.calls.append((request.method, request.path_qs))
        code, body = self._stand_in.answer
        return web.Response(status=code, body=body)

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        """Echoes every message; a second VNC session asking to preserve the first is refused."""
        self._stand_in.calls.append((request.method, request.path_qs))
        vnc = request.path.endswith("/vnc")
        if vnc and self._vnc_sessions and request.query.get("preserveSession") == "true":
            return web.Response(status=503, text="Active VNC connection. Request denied.")
        socket = web.WebSocketResponse(protocols=("plain.kubevirt.io",))
        await socket.prepare(request)
        self._vnc_sessions += vnc
        try:
            async for message in socket:
                if message.type == WSMsgType.BINARY:
                    await socket.send_bytes(message.data)
        finally:
            self._vnc_sessions -= vnc
        return socket

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def _serve_handler(workdir: Path) -> tuple[_HandlerServer, HandlerStandIn]:
    write_pair(self_signed(HANDLER_SERVER_NAME), workdir, "handler")  # virt-api checks this identity
    stand_in = HandlerStandIn(0)
    return _HandlerServer(workdir, stand_in), stand_in


def _available(kube: KubeClient, name: str) -> bool:
    try:
        service = kube.get(API_SERVICES, None, name)
    except ApiError:
        return False
    conditions = (service.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions)


def _reachable(kube: KubeClient) -> bool:
    try:
        kube.request("GET", "/apis/subresources.kubevirt.io/v1")
    except ApiError:
        return False
    return True


def _register_handler_pod(kube: KubeClient) -> None:
    # No controller-manager makes the service account a pod needs.
    with contextlib.suppress(AlreadyExistsError):
        kube.create(SERVICE_ACCOUNTS, KUBEVIRT_NAMESPACE, {"metadata": {"name": "default"}})
    pod = {
        "metadata": {"name": "virt-handler-standin", "labels": {"kubevirt.io": "virt-handler"}},
        "spec": {"nodeName": HANDLER_NODE, "containers": [{"name": "virt-handler", "image": "none"}]},
    }
    created = kube.create(PODS, KUBEVIRT_NAMESPACE, pod)
    created["status"] = {"podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}
    kube.update_status(PODS, KUBEVIRT_NAMESPACE, created)


@contextlib.contextmanager
def running_aggregated_virt_api(
    kubeconfig: Path, pki_dir: Path, workdir: Path, real_handler: HandlerEndpoint | None = None
) -> Iterator[AggregatedVirtApi]:
    """Starts virt-api and its stand-in handler (or points it at ``real_handler``), registers them, and
    waits for the APIServices."""
    kube = KubeClient.from_kubeconfig(str(kubeconfig))
    handler_server: _HandlerServer | None = None
    pair = self_signed("virt-api", dns_names=(f"virt-api.{KUBEVIRT_NAMESPACE}.svc", "localhost"))
    cert_file, key_file = write_pair(pair, workdir)
    if real_handler is None:
        handler_server, handler = _serve_handler(workdir)
        handler_tls = (cert_file, key_file, workdir / "handler.crt")
    else:
        handler = HandlerStandIn(real_handler.port)  # records nothing: the real one answers
        handler_tls = (real_handler.client_cert_file, real_handler.client_key_file, real_handler.ca_file)
    log_file = workdir / "virt-api.log"
    handler_args = [
        f"--kubeconfig={kubeconfig}",
        f"--handler-namespace={KUBEVIRT_NAMESPACE}",
        f"--console-server-port={handler.port}",
        f"--handler-cert-file={handler_tls[0]}",
        f"--handler-key-file={handler_tls[1]}",
        f"--handler-ca-file={handler_tls[2]}",
        "--config-refresh-interval=1",
    ]
    process, port = start_virt_api(cert_file, key_file, log_file, handler_args)
    api = AggregatedVirtApi(port, process, log_file, pki_dir, cert_file, handler)
    try:
        with contextlib.suppress(AlreadyExistsError):
            kube.create(NAMESPACES, None, {"metadata": {"name": KUBEVIRT_NAMESPACE}})
        service = {
            "metadata": {"name": "virt-api"},
            "spec": {"type": "ExternalName", "externalName": "localhost"},
        }
        kube.create(SERVICES, KUBEVIRT_NAMESPACE, service)
        _register_handler_pod(kube)
        for api_service in subresource_api_services(KUBEVIRT_NAMESPACE, pair.cert_pem, port=port):
            kube.create(API_SERVICES, None, api_service)
        deadline = time.monotonic() + 60
        while not all(_available(kube, f"{v}.subresources.kubevirt.io") for v in ("v1", "v1alpha3")):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the subresource API did not become available:\n{api.log()}")
            time.sleep(0.2)
        # Available can precede the aggregator's proxy being ready (503 for a moment).
        while not _reachable(kube):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the subresource API answers 503 through the aggregator:\n{api.log()}")
            time.sleep(0.2)
        yield api
    finally:
        terminate(process)
        if handler_server is not None:
            handler_server.stop()
        _unregister(kube)


def _unregister(kube: KubeClient) -> None:
    """Removes what registration made, so that a later virt-api of the same session can register."""
    for resource, namespace, name in (
        (API_SERVICES, None, "v1.subresources.kubevirt.io"),
        (API_SERVICES, None, "v1alpha3.subresources.kubevirt.io"),
        (SERVICES, KUBEVIRT_NAMESPACE, "virt-api"),
        (PODS, KUBEVIRT_NAMESPACE, "virt-handler-standin"),
    ):
        with contextlib.suppress(NotFoundError):
            # No kubelet confirms a graceful pod deletion here: delete at once.
            kube.delete(resource, namespace, name, grace_period_seconds=0)


def create_vm(kube: KubeClient, namespace: str, name: str, run_strategy: str) -> dict[str, Any]:
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"runStrategy": run_strategy, "template": {"spec": {"domain": {"devices": {}}}}},
    }
    return kube.create(VIRTUAL_MACHINES, namespace, vm)


def create_vmi(
    kube: KubeClient, namespace: str, name: str, status: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    """A VMI as if virt-handler ran it: ``status`` is written after the create (VMIs have no status
    subresource, so it goes in with an update)."""
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"domain": {"devices": {}}, **spec},
    }
    created = kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi)
    if status is None:
        return created
    created["status"] = status
    return kube.update(VIRTUAL_MACHINE_INSTANCES, namespace, created)
