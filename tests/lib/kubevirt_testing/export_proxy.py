"""A virt-exportproxy between a test client and a real export server: both over TLS on loopback, the export
server's certificate issued by an export CA for ``<service>.<namespace>.svc`` (which a resolver sends to
loopback), exports and the CA ConfigMap looked up in dicts the test changes."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import gzip
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from kubevirt.service import certs
from kubevirt.service.tls import ReloadingCertificate
from kubevirt.virt_exportproxy.app import listen
from kubevirt.virt_exportproxy.proxy import BackendTrust, ExportProxy
from kubevirt_api.export.v1beta1.types import VirtualMachineExport
from kubevirt_testing.certificates import PemPair, self_signed, serving_context, write_pair
from kubevirt_testing.process import free_port

JSON = dict[str, Any]
NS = "ns"
SERVICE = "virt-export-vm1"
DAY = datetime.timedelta(days=1)
CHUNK = 64 * 1024
DISK_CHUNKS = 64  # 4 MiB
GZIPPED = gzip.compress(b"compressed on the server, and so it stays" * 100)


def disk_chunk(index: int) -> bytes:
    return bytes([index % 251]) * CHUNK


def export(
    name: str = "vm1", phase: str | None = "Ready", service: str | None = SERVICE
) -> VirtualMachineExport:
    status: JSON = {}
    if phase is not None:
        status["phase"] = phase
    if service is not None:
        status["serviceName"] = service
    return VirtualMachineExport.model_validate(
        {
            "apiVersion": "export.kubevirt.io/v1beta1",
            "kind": "VirtualMachineExport",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": name}},
            "status": status,
        }
    )


def ca_config_map(*cas: certs.KeyPair) -> JSON:
    bundle = b"".join(ca.cert_pem for ca in cas).decode()
    return {
        "metadata": {"name": "kubevirt-export-ca", "namespace": "kubevirt"},
        "data": {"ca-bundle": bundle},
    }


def new_export_ca() -> certs.KeyPair:
    return certs.new_ca("export.kubevirt.io", datetime.datetime.now(datetime.UTC), DAY)


def server_pair(ca: certs.KeyPair, service: str = SERVICE) -> certs.KeyPair:
    """An export server's certificate, named for its Service as the export controller names it."""
    spec = certs.CertificateSpec("cert", "server", service, service)
    return certs.new_certificate(spec, ca, NS, datetime.datetime.now(datetime.UTC), DAY)


class ToLoopback(AbstractResolver):
    """Cluster DNS for the test: every name is 127.0.0.1; remembers the names asked for. Names in
    ``gone`` lead to a port nothing listens on."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.gone: set[str] = set()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        result: ResolveResult = {
            "hostname": host,
            "host": "127.0.0.1",
            "port": free_port() if host in self.gone else port,  # nothing listens there
            "family": socket.AF_INET,
            "proto": 0,
            "flags": socket.AI_NUMERICHOST,
        }
        return [result]

    async def close(self) -> None:
        pass


@dataclass
class ExportServer:
    """Stands in for virt-exportserver: records each request, serves a disk image in chunks (holding back
    all but the first until ``release`` is set), an echo, a redirect, gzip content and a cut-off body."""

    requests: list[JSON] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def application(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/volumes/vm1/disk.img", self._disk)
        app.router.add_route("*", "/echo", self._echo)
        app.router.add_get("/redirect", self._redirect)
        app.router.add_get("/gzip", self._gzip)
        app.router.add_get("/cut", self._cut)
        return app

    def _record(self, request: web.Request, body: bytes = b"") -> None:
        self.requests.append(
            {
                "method": request.method,
                "path": request.path,
                "query": request.rel_url.raw_query_string,
                "headers": list(request.headers.items()),
                "body": body,
            }
        )

    async def _disk(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        response.content_length = CHUNK * DISK_CHUNKS
        await response.prepare(request)
        await response.write(disk_chunk(0))
        await self.release.wait()
        for index in range(1, DISK_CHUNKS):
            await response.write(disk_chunk(index))
        await response.write_eof()
        return response

    async def _echo(self, request: web.Request) -> web.Response:
        self._record(request, await request.read())
        return web.Response(text="echoed", headers={"X-Export": "yes", "Keep-Alive": "timeout=5"})

    async def _redirect(self, request: web.Request) -> web.Response:
        self._record(request)
        raise web.HTTPFound("/elsewhere")

    async def _gzip(self, request: web.Request) -> web.Response:
        self._record(request)
        return web.Response(body=GZIPPED, headers={"Content-Encoding": "gzip"})

    async def _cut(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        response = web.StreamResponse()
        response.content_length = 1000
        await response.prepare(request)
        await response.write(b"x" * 10)
        await asyncio.sleep(0.05)
        assert request.transport is not None
        request.transport.close()
        return response


@dataclass
class Harness:
    client: aiohttp.ClientSession
    proxy_port: int
    server: ExportServer
    resolver: ToLoopback
    exports: dict[str, VirtualMachineExport]
    config_maps: dict[str, JSON]

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.proxy_port}{path}"

    def export_url(self, rest: str, name: str = "vm1", version: str = "v1beta1") -> str:
        return self.url(
            f"/api/export.kubevirt.io/{version}/namespaces/{NS}/virtualmachineexports/{name}/{rest}"
        )


@contextlib.asynccontextmanager
async def export_server(
    tmp_path: Path, ca: certs.KeyPair, server_cert: certs.KeyPair | None = None
) -> AsyncIterator[tuple[ExportServer, int]]:
    """An export server over TLS on loopback (certified by ``ca`` unless ``server_cert`` says otherwise)
    and its port."""
    server = ExportServer()
    context = serving_context(server_cert or server_pair(ca), tmp_path, "server")
    runner = web.AppRunner(server.application(), handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    try:
        yield server, int(runner.addresses[0][1])
    finally:
        server.release.set()
        await runner.cleanup()


def proxy_client(proxy_pair: PemPair) -> aiohttp.ClientSession:
    """A client trusting the proxy's serving certificate, taking bodies as they come."""
    context = ssl.create_default_context(cadata=proxy_pair.cert_pem.decode())
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context), auto_decompress=False)


@contextlib.asynccontextmanager
async def serving(
    tmp_path: Path, *, ca: certs.KeyPair | None = None, server_cert: certs.KeyPair | None = None
) -> AsyncIterator[Harness]:
    """The export server, the proxy in front of it (export ``vm1`` Ready, the CA published) and a client
    of the proxy; the test may change ``exports`` and ``config_maps`` while it runs."""
    ca = ca or new_export_ca()
    async with export_server(tmp_path, ca, server_cert) as (server, backend_port):
        exports = {f"{NS}/vm1": export()}
        config_maps = {"ca": ca_config_map(ca)}
        resolver = ToLoopback()
        trust = BackendTrust(lambda: config_maps.get("ca"))
        proxy = ExportProxy(exports.get, trust, backend_port=backend_port, resolver=resolver)
        proxy_pair = self_signed("virt-exportproxy")
        certificate = ReloadingCertificate(*write_pair(proxy_pair, tmp_path, "proxy"))
        listening = await listen(proxy, certificate, "127.0.0.1", 0)
        try:
            async with proxy_client(proxy_pair) as client:
                yield Harness(client, listening.port, server, resolver, exports, config_maps)
        finally:
            await listening.close()
