"""The proxy's HTTP side (KubeVirt's ``cmd/virt-exportproxy``): routes, export lookup, backend trust and the
streaming relay.

Answers as KubeVirt's does, with empty bodies: 400 for a path that names no export, 404 for an export
that does not exist, 503 for one that is not ``Ready``, 500 when the export CA cannot be read, and 502 when
the export's server cannot be reached or its certificate does not verify. Everything else is the export
server's own answer. The request and the answer pass on as Go's ``httputil.ReverseProxy`` passes them
(:mod:`kubevirt.service.relay`).
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from aiohttp.abc import AbstractResolver
from prometheus_client import REGISTRY, CollectorRegistry
from yarl import URL

from kubevirt.log import get_logger
from kubevirt.service import relay
from kubevirt.service.certs import EXPORT_CA_CONFIG_MAP
from kubevirt.service.metrics_endpoint import metrics_handler
from kubevirt.service.tls import CA_BUNDLE_KEY, client_context
from kubevirt_api.export.v1beta1.types import PHASE_READY, VirtualMachineExport
from kubevirt_api.view import JSON

BACKEND_PORT = 443
# Reaching an export's server; a transfer itself may take as long as the disk needs.
CONNECT_TIMEOUT = 30.0

# Both API versions KubeVirt serves exports under; the rest of the path goes to the export's server.
PROXY_PATH = re.compile(
    r"^/api/export\.kubevirt\.io/(?:v1alpha1|v1beta1)/namespaces/([^/]+)/virtualmachineexports/([^/]+)/(.*)$"
)
# Looks an export up by ``namespace/name`` (None when there is none): the informer's store.
ExportLookup = Callable[[str], VirtualMachineExport | None]
# The ``kubevirt-export-ca`` ConfigMap, or None when it does not exist.
ConfigMapLookup = Callable[[], JSON | None]


@dataclass(frozen=True)
class ProxyTarget:
    namespace: str
    name: str
    path: str  # on the export's server, from "/"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def match_path(path: str) -> ProxyTarget | None:
    """The export and the path on its server a proxy path names (None when it names none)."""
    match = PROXY_PATH.match(path)
    if match is None:
        return None
    namespace, name, rest = match.groups()
    return ProxyTarget(namespace, name, "/" + rest)


class TrustUnavailableError(Exception):
    """The export CA cannot be read: no bundle was ever seen, or the current one is unusable."""


def backend_url(host: str, port: int, path: str, raw_query: str) -> URL:
    """The export server's URL: ``path`` (decoded, as matched) encoded again, the query exactly as the
    client sent it (Go's proxy leaves RawQuery alone: a token's ``%2B`` must not turn into ``+``)."""
    base = URL.build(scheme="https", host=host, port=port, path=path)
    return URL(f"{base}?{raw_query}" if raw_query else str(base), encoded=True)


def backend_context(bundle: str) -> ssl.SSLContext:
    """Trusts only ``bundle`` and checks that the certificate names the host dialled (Go's default)."""
    context = client_context(bundle)
    context.check_hostname = True
    return context


class BackendTrust:
    """The client context for export servers, rebuilt when the CA bundle changes (KubeVirt's CA manager:
    a ConfigMap that went missing keeps the last bundle; one without a bundle, or with a broken one, is
    an error)."""

    def __init__(self, config_map: ConfigMapLookup, name: str = EXPORT_CA_CONFIG_MAP) -> None:
        self._config_map = config_map
        self._name = name
        self._current: tuple[str, ssl.SSLContext] | None = None
        self._log = get_logger(config_map=name)

    def context(self) -> ssl.SSLContext:
        config_map = self._config_map()
        if config_map is None:
            if self._current is not None:
                return self._current[1]
            raise TrustUnavailableError(f"configmap {self._name} not found")
        bundle = (config_map.get("data") or {}).get(CA_BUNDLE_KEY)
        if not bundle:
            raise TrustUnavailableError(f"{CA_BUNDLE_KEY} not found in configmap {self._name}")
        if self._current is not None and self._current[0] == bundle:
            return self._current[1]
        try:
            context = backend_context(bundle)
        except (ssl.SSLError, ValueError) as err:
            raise TrustUnavailableError(f"configmap {self._name}: unusable {CA_BUNDLE_KEY}: {err}") from None
        self._log.info("CA update detected, trusting the new export CA bundle")
        self._current = (bundle, context)
        return context


class ExportProxy:
    """The aiohttp application: ``/healthz``, ``/metrics`` and the proxy for every other path.

    ``backend_port`` and ``resolver`` say how export services are reached (443 through the cluster's DNS;
    tests point them elsewhere)."""

    def __init__(
        self,
        exports: ExportLookup,
        trust: BackendTrust,
        *,
        backend_port: int = BACKEND_PORT,
        resolver: AbstractResolver | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        registry: CollectorRegistry = REGISTRY,
    ) -> None:
        self._exports = exports
        self._trust = trust
        self._backend_port = backend_port
        self._registry = registry
        self._sessions = relay.SessionSlot(
            resolver, aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout)
        )
        self._log = get_logger()

    def application(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/healthz", self._healthz)
        app.router.add_route("*", "/metrics", metrics_handler(self._registry))
        app.router.add_route("*", "/{tail:.*}", self._proxy)
        app.cleanup_ctx.append(self._sessions.open_while_running)
        return app

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="OK")

    async def _proxy(self, request: web.Request) -> web.StreamResponse:
        target = match_path(request.path)
        if target is None:
            return web.Response(status=400)
        try:
            export = self._exports(target.key)
        except Exception as err:  # a lookup that fails is the proxy's fault, as KubeVirt's 500 says
            self._log.error("cannot look the export up", export=target.key, reason=str(err))
            return web.Response(status=500)
        if export is None:
            return web.Response(status=404)
        status = export.status
        if status is None or status.phase != PHASE_READY:
            return web.Response(status=503)
        try:
            context = self._trust.context()
        except TrustUnavailableError as err:
            self._log.error("cannot verify export servers", reason=str(err))
            return web.Response(status=500)
        if not status.service_name:
            self._log.error("http: proxy error", export=target.key, reason="the export names no service")
            return web.Response(status=502)
        host = f"{status.service_name}.{target.namespace}.svc"
        return await self._relay(request, host, target.path, context)

    async def _relay(
        self, request: web.Request, host: str, path: str, context: ssl.SSLContext
    ) -> web.StreamResponse:
        try:
            url = backend_url(host, self._backend_port, path, request.rel_url.raw_query_string)
        except ValueError as err:
            self._log.error("http: proxy error", host=host, reason=str(err))
            return web.Response(status=502)
        self._log.info("Proxying to " + str(url))
        try:
            upstream = await relay.send(self._sessions.session, request, url, context)
        except relay.RELAY_ERRORS as err:
            self._log.error("http: proxy error", url=str(url), reason=str(err) or type(err).__name__)
            return web.Response(status=502)
        return await relay.answer(
            request, upstream, url, read_error="http: proxy read error during body copy"
        )
