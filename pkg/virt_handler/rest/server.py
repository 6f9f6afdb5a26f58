"""virt-handler's console server: HTTPS with mutual TLS on ``--console-server-port`` (8186).

Routes are KubeVirt's (``/v1/namespaces/{namespace}/virtualmachineinstances/{name}/<operation>``). Only a
client whose certificate the KubeVirt CA signed (the TLS handshake checks that) and which names
virt-handler's client identity (checked before any route) gets an answer. The CA comes from the
``kubevirt-ca`` ConfigMap and is re-read while serving; until it is known, every handshake fails.

virt-handler is threaded; the server runs its own asyncio loop in a thread of its own, and the blocking
launcher calls run in worker threads from there.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from kubevirt.client import JSON, EventSink, KubeApi
from kubevirt.log import get_logger
from kubevirt.service.tls import CA_CONFIG_MAP, ReloadingCertificate, read_ca_bundle
from kubevirt.virt_config.tls import TLSConfiguration
from kubevirt.virt_handler.domain_events import DomainEventLog
from kubevirt.virt_handler.rest.console import ConsoleHandler
from kubevirt.virt_handler.rest.launcher_state import LauncherStateReader
from kubevirt.virt_handler.rest.lifecycle import (
    GUEST_AGENT_READS,
    PUT_COMMANDS,
    LauncherLocator,
    LifecycleHandler,
    RouteError,
    VMIStore,
    lookup_vmi,
)
from kubevirt.virt_handler.rest.peer import PeerRefusedError, check_client_certificate

VMI_PATH = "/v1/namespaces/{namespace}/virtualmachineinstances/{name}"
LAUNCHER_STATE = "launcherstate"  # read-only, for virtctl diagnose (not a KubeVirt route)
UNAUTHORIZED = 401
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _refusal(err: RouteError) -> web.Response:
    return web.Response(status=err.code, text=err.message)


@dataclass
class ConsoleServer:
    vmis: VMIStore
    launchers: LauncherLocator
    events: EventSink
    externally_managed: bool = False
    domain_events: DomainEventLog = field(default_factory=DomainEventLog)
    domain_changed: Callable[[str], None] | None = None
    console: ConsoleHandler = field(init=False)
    lifecycle: LifecycleHandler = field(init=False)
    launcher_state: LauncherStateReader = field(init=False)

    def __post_init__(self) -> None:
        self.console = ConsoleHandler(self.launchers)
        self.lifecycle = LifecycleHandler(self.vmis, self.launchers, self.events, self.domain_changed)
        self.launcher_state = LauncherStateReader(self.vmis, self.launchers, self.domain_events)

    def application(self) -> web.Application:
        app = web.Application(middlewares=[self._peer_check], client_max_size=64 * 1024)
        app.router.add_get(f"{VMI_PATH}/console", self._stream(self.console.serial))
        app.router.add_get(f"{VMI_PATH}/vnc", self._stream(self.console.vnc))
        app.router.add_get(f"{VMI_PATH}/usbredir", self._stream(self.console.usbredir))
        for operation in (*PUT_COMMANDS, "freeze"):
            app.router.add_put(f"{VMI_PATH}/{operation}", self._put(operation))
        for operation in GUEST_AGENT_READS:
            app.router.add_get(
                f"{VMI_PATH}/{operation}", self._read(functools.partial(self.lifecycle.read, operation))
            )
        app.router.add_get(f"{VMI_PATH}/{LAUNCHER_STATE}", self._read(self.launcher_state.read))
        return app

    @web.middleware
    async def _peer_check(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        try:
            check_client_certificate(der, externally_managed=self.externally_managed)
        except PeerRefusedError as err:
            get_logger().warning("refusing a console server client", reason=str(err))
            return web.Response(status=UNAUTHORIZED, text=str(err))
        return await handler(request)

    def _stream(self, stream: Callable[[web.Request, JSON], Awaitable[web.StreamResponse]]) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            try:
                vmi = lookup_vmi(self.vmis, request.match_info["namespace"], request.match_info["name"])
            except RouteError as err:
                return _refusal(err)
            return await stream(request, vmi)

        return handle

    def _put(self, operation: str) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            namespace, name = request.match_info["namespace"], request.match_info["name"]
            try:
                body = await request.read()
                code = await asyncio.to_thread(self.lifecycle.put, operation, namespace, name, body)
            except RouteError as err:
                return _refusal(err)
            return web.Response(status=code)

        return handle

    @staticmethod
    def _read(read: Callable[[str, str], JSON]) -> Handler:
        """A GET answering with what ``read(namespace, name)`` returns, read off the event loop."""

        async def handle(request: web.Request) -> web.StreamResponse:
            namespace, name = request.match_info["namespace"], request.match_info["name"]
            try:
                answer = await asyncio.to_thread(read, namespace, name)
            except RouteError as err:
                return _refusal(err)
            return web.json_response(answer)

        return handle


@dataclass
class ClientCAFollower:
    """Keeps the listener trusting the CA bundle of the ``kubevirt-ca`` ConfigMap."""

    api: KubeApi
    namespace: str
    certificate: ReloadingCertificate
    name: str = CA_CONFIG_MAP

    def refresh(self) -> bool:
        """Reads the ConfigMap; returns whether a CA is now trusted."""
        bundle = read_ca_bundle(self.api, self.namespace, self.name)
        if not bundle:
            return False
        self.certificate.trust_client_ca(bundle)
        return True

    async def follow(self, interval: float) -> None:
        while True:
            await asyncio.to_thread(self.refresh)
            await asyncio.sleep(interval)


@dataclass
class ServerThread:
    """Runs the console server on ``listen:port`` in a thread with its own event loop."""

    server: ConsoleServer
    certificate: ReloadingCertificate
    listen: str
    port: int
    ca_follower: ClientCAFollower | None = None
    ca_refresh_interval: float = 10.0
    _loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _ready: threading.Event = field(default_factory=threading.Event, init=False)
    _stopped: asyncio.Event | None = field(default=None, init=False)
    bound_port: int = field(default=0, init=False)
    error: BaseException | None = field(default=None, init=False)

    def start(self, timeout: float = 10.0) -> int:
        """Starts serving and returns the bound port; raises what made the start fail."""
        self._thread = threading.Thread(target=self._run, name="console-server", daemon=True)
        self._thread.start()
        self._ready.wait(timeout)
        if self.error is not None:
            raise self.error
        return self.bound_port

    def stop(self) -> None:
        if self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as err:  # reported to start(); the thread ends
            self.error = err
            self._ready.set()
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stopped = asyncio.Event()
        runner = web.AppRunner(self.server.application(), handle_signals=False)
        await runner.setup()
        tasks: list[asyncio.Task[None]] = []
        try:
            site = web.TCPSite(runner, self.listen, self.port, ssl_context=self.certificate.server_context)
            await site.start()
            self.bound_port = int(runner.addresses[0][1])
            self.certificate.start()
            if self.ca_follower is not None:
                tasks.append(asyncio.create_task(self.ca_follower.follow(self.ca_refresh_interval)))
            get_logger().info("console server listening", port=self.bound_port)
            self._ready.set()
            await self._stopped.wait()
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self.certificate.stop()
            await runner.cleanup()


def console_server_thread(
    *,
    api: KubeApi,
    vmis: VMIStore,
    events: EventSink,
    pods_dir: Path,
    node: str,
    namespace: str,
    cert_file: Path,
    key_file: Path,
    listen: str,
    port: int,
    ca_config_map: str = CA_CONFIG_MAP,
    externally_managed: bool = False,
    domain_events: DomainEventLog | None = None,
    domain_changed: Callable[[str], None] | None = None,
    tls_config: Callable[[], TLSConfiguration] = TLSConfiguration,
) -> ServerThread:
    certificate = ReloadingCertificate(cert_file, key_file, require_client_cert=True, tls_config=tls_config)
    server = ConsoleServer(
        vmis,
        LauncherLocator(pods_dir, node),
        events,
        externally_managed,
        domain_events or DomainEventLog(),
        domain_changed,
    )
    follower = ClientCAFollower(api, namespace, certificate, ca_config_map)
    return ServerThread(server, certificate, listen, port, follower)
