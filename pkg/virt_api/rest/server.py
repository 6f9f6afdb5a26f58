"""The subresource API's HTTP surface on virt-api's TLS port, beside the admission webhooks.

Routes are added to the webhook server's aiohttp application. The shared authorising middleware
(:mod:`kubevirt.service.aggregation.middleware`) runs for every path except the webhooks', with virt-api's
path rules: a path that cannot be read unambiguously is refused first (400, or 404 for a name no object
can have), then an authorizer's refusal is 401 with the reason as plain text, a review that could not be
made a 500 with no body. Handlers run in threads (they block on the API server).

The application's body limit is the webhooks' (megabytes); option bodies are held to their own, far
smaller limit (:data:`~kubevirt.virt_api.rest.bodies.MAX_BODY_BYTES`) while they are read, and decoded
in a worker thread, so no caller can keep the event loop (health checks, admission reviews) busy.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubevirt.client import JSON
from kubevirt.monitoring.virt_api import ConnectionKind, active_connection
from kubevirt.service.aggregation.front_proxy import FrontProxyTrust
from kubevirt.service.aggregation.middleware import authorizing_middleware
from kubevirt.service.aggregation.status import status_response
from kubevirt.version import version_info
from kubevirt.virt_api.rest import discovery
from kubevirt.virt_api.rest.authorizer import Authorizer, path_refusal
from kubevirt.virt_api.rest.bodies import MAX_BODY_BYTES, Options, decode_options, too_large
from kubevirt.virt_api.rest.expand import VMExpander
from kubevirt.virt_api.rest.gated import GATED_ROUTES, GatedRoute, refusal
from kubevirt.virt_api.rest.lifecycle import VMLifecycle
from kubevirt.virt_api.rest.portforward import PortForwarder
from kubevirt.virt_api.rest.status import StatusError
from kubevirt.virt_api.rest.streams import StreamRelay, check_console, check_vnc, preserve_session
from kubevirt.virt_api.rest.vmi_operations import (
    GUEST_AGENT_READS,
    LAUNCHER_STATE,
    PUT_CHECKS,
    GuestAgentReadError,
    VMIOperations,
)
from kubevirt.virt_api.rest.volumes import VolumeHotplug
from kubevirt.virt_config import ClusterConfig

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

VM_OPTIONS = {
    "start": "StartOptions",
    "stop": "StopOptions",
    "restart": "RestartOptions",
    "migrate": "MigrateOptions",
}
VMI_OPTIONS = {"pause": "PauseOptions", "unpause": "UnpauseOptions"}
# The hotplug subresources; True for the VMI's (ephemeral hotplug).
VOLUME_RESOURCES = {"virtualmachines": False, "virtualmachineinstances": True}


def refusal_response(request: web.Request, err: StatusError) -> web.Response:
    """A refusal; a body left unread ends the connection rather than being read to the end."""
    response = status_response(err)
    if not request.content.at_eof():
        response.force_close()
    return response


async def read_options_body(request: web.Request) -> bytes:
    """The request body, refused (400) as soon as it is known to exceed ``MAX_BODY_BYTES``: by its
    declared length before any of it is read, or after one byte more than the limit."""
    declared = request.content_length
    if declared is not None and declared > MAX_BODY_BYTES:
        raise too_large()
    body = bytearray()
    while chunk := await request.content.read(MAX_BODY_BYTES + 1 - len(body)):
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise too_large()
    return bytes(body)


async def read_options(request: web.Request, kind: str | None) -> tuple[bytes, Options]:
    """The body and the ``kind`` options it carries (none without a kind), decoded off the loop."""
    body = await read_options_body(request)
    if kind is None:
        return body, Options()
    return body, await asyncio.to_thread(decode_options, kind, body)


@dataclass
class SubresourceAPI:
    lifecycle: VMLifecycle
    vmis: VMIOperations
    config: Callable[[], ClusterConfig] = ClusterConfig
    streams: StreamRelay | None = None
    expander: VMExpander | None = None
    portforward: PortForwarder | None = None
    volumes: VolumeHotplug | None = None  # by default on the lifecycle's API, with this config

    def install(self, app: web.Application) -> None:
        volumes = self.volumes or VolumeHotplug(self.lifecycle.api, self.config)
        app.router.add_get("/", self._json(discovery.root_paths))
        app.router.add_get("/apis", self._json(discovery.api_group_list))
        app.router.add_get(discovery.group_path(), self._json(discovery.api_group))
        app.router.add_get("/openapi/v2", self._json(discovery.openapi_v2))
        for version in discovery.VERSIONS:
            base = discovery.version_path(version)
            app.router.add_get(base, self._json(functools.partial(discovery.api_resource_list, version)))
            app.router.add_get(f"{base}/version", self._json(version_info))
            namespaced = f"{base}/namespaces/{{namespace}}"
            vm_path = f"{namespaced}/virtualmachines/{{name}}"
            vmi_path = f"{namespaced}/virtualmachineinstances/{{name}}"
            for operation in VM_OPTIONS:
                app.router.add_put(f"{vm_path}/{operation}", self._vm_operation(operation))
            for resource, ephemeral in VOLUME_RESOURCES.items():
                volume_path = f"{namespaced}/{resource}/{{name}}"
                app.router.add_put(f"{volume_path}/addvolume", self._volume(volumes.add, volumes, ephemeral))
                app.router.add_put(
                    f"{volume_path}/removevolume", self._volume(volumes.remove, volumes, ephemeral)
                )
            for route in GATED_ROUTES:
                path = f"{namespaced}/{route.resource}/{{name}}/{route.subresource}"
                app.router.add_route(route.method, path, self._gated(route))
            for operation in PUT_CHECKS:
                app.router.add_put(f"{vmi_path}/{operation}", self._vmi_operation(operation))
            if self.streams is not None:
                app.router.add_get(f"{vmi_path}/console", self._stream("console", check_console))
                app.router.add_get(f"{vmi_path}/vnc", self._stream("vnc", check_vnc))
                app.router.add_get(f"{vmi_path}/vnc/screenshot", self._screenshot)
            if self.portforward is not None:
                self._install_portforward(app, vm_path, self.portforward.vmi_of_vm)
                self._install_portforward(app, vmi_path, self.portforward.vmi)
            for operation in GUEST_AGENT_READS:
                app.router.add_get(f"{vmi_path}/{operation}", self._guest_agent_read(operation))
            app.router.add_get(f"{vmi_path}/{LAUNCHER_STATE}", self._launcher_state)
            if self.expander is not None:
                app.router.add_put(f"{namespaced}/expand-vm-spec", self._expand_given(self.expander))
                app.router.add_get(f"{vm_path}/expand-spec", self._expand_stored(self.expander))

    def _install_portforward(
        self, app: web.Application, path: str, fetch: Callable[[str, str], JSON]
    ) -> None:
        forwarder = self.portforward
        assert forwarder is not None

        async def handle(request: web.Request) -> web.StreamResponse:
            return await forwarder.handle(request, fetch)

        app.router.add_get(f"{path}/portforward/{{port}}", handle)
        app.router.add_get(f"{path}/portforward/{{port}}/{{protocol}}", handle)

    @staticmethod
    def _json(produce: Callable[[], Any]) -> Handler:
        async def handle(_request: web.Request) -> web.Response:
            return web.json_response(produce())

        return handle

    def _vm_operation(self, operation: str) -> Handler:
        call = getattr(self.lifecycle, operation)

        async def handle(request: web.Request) -> web.StreamResponse:
            namespace, name = request.match_info["namespace"], request.match_info["name"]
            try:
                _, options = await read_options(request, VM_OPTIONS[operation])
                code = await asyncio.to_thread(call, namespace, name, options)
            except StatusError as err:
                return refusal_response(request, err)
            return web.Response(status=code)

        return handle

    def _vmi_operation(self, operation: str) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            namespace, name = request.match_info["namespace"], request.match_info["name"]
            try:
                body, options = await read_options(request, VMI_OPTIONS.get(operation))
                code = await asyncio.to_thread(self.vmis.put, operation, namespace, name, options, body)
            except StatusError as err:
                return refusal_response(request, err)
            return web.Response(status=code)

        return handle

    @staticmethod
    def _volume(call: Callable[..., int], volumes: VolumeHotplug, ephemeral: bool) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            namespace, name = request.match_info["namespace"], request.match_info["name"]
            try:
                volumes.check_enabled()  # refused with the gates off before the body is read, as KubeVirt
                body = await read_options_body(request)
                code = await asyncio.to_thread(call, namespace, name, body, ephemeral=ephemeral)
            except StatusError as err:
                return refusal_response(request, err)
            return web.Response(status=code)

        return handle

    def _stream(self, stream: str, check: Callable[[JSON], None]) -> Handler:
        relay = self.streams
        assert relay is not None

        async def handle(request: web.Request) -> web.StreamResponse:
            namespace, name = request.match_info["namespace"], request.match_info["name"]
            target = stream
            if stream == "vnc":
                keep = preserve_session(request.query.get("preserveSession"))
                target = f"vnc?preserveSession={'true' if keep else 'false'}"
            with active_connection(ConnectionKind(stream), namespace, name):
                try:
                    url = await asyncio.to_thread(relay.handler_url, namespace, name, target, check)
                    return await relay.relay(request, url)
                except StatusError as err:
                    return status_response(err)

        return handle

    async def _screenshot(self, request: web.Request) -> web.StreamResponse:
        relay = self.streams
        assert relay is not None
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        move_cursor = request.query.get("moveCursor") == "true"  # KubeVirt compares the text exactly
        # KubeVirt counts a screenshot as a VNC connection while it is taken.
        with active_connection(ConnectionKind.VNC, namespace, name):
            try:
                # A screenshot never takes over a viewer's session.
                url = await asyncio.to_thread(
                    relay.handler_url, namespace, name, "vnc?preserveSession=true", check_vnc
                )
                png = await relay.screenshot(url, move_cursor=move_cursor)
            except StatusError as err:
                return status_response(err)
        return web.Response(body=png, content_type="image/png")

    @staticmethod
    def _expand_given(expander: VMExpander) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            namespace = request.match_info["namespace"]
            try:
                body = await request.read()
                return web.json_response(await asyncio.to_thread(expander.expand_given, namespace, body))
            except StatusError as err:
                return status_response(err)

        return handle

    @staticmethod
    def _expand_stored(expander: VMExpander) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            namespace, name = request.match_info["namespace"], request.match_info["name"]
            try:
                return web.json_response(await asyncio.to_thread(expander.expand_stored, namespace, name))
            except StatusError as err:
                return status_response(err)

        return handle

    def _gated(self, route: GatedRoute) -> Handler:
        async def handle(_request: web.Request) -> web.StreamResponse:
            return status_response(refusal(route, self.config))

        return handle

    async def _launcher_state(self, request: web.Request) -> web.StreamResponse:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        try:
            return web.json_response(await asyncio.to_thread(self.vmis.launcher_state, namespace, name))
        except StatusError as err:
            return status_response(err)

    def _guest_agent_read(self, operation: str) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            namespace, name = request.match_info["namespace"], request.match_info["name"]
            try:
                answer = await asyncio.to_thread(self.vmis.read_guest_agent, operation, namespace, name)
            except GuestAgentReadError as err:
                return web.Response(status=500, text=str(err))
            return web.json_response(answer)

        return handle


def subresource_middleware(
    authorizer: Authorizer,
    trust: Callable[[], FrontProxyTrust | None],
    exempt: Collection[str],
    peer: Callable[[web.Request], str | None] | None = None,
) -> Any:
    """The shared authorising middleware with virt-api's path rules; ``exempt`` paths (the webhooks)
    pass untouched."""
    return authorizing_middleware(authorizer, trust, exempt, peer=peer, refusal=path_refusal)
