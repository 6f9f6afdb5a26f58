"""cdi-uploadproxy between a test client and a fake upload server, both over TLS on loopback.

The upload server's certificate is issued by an upload-server CA for ``cdi-upload-<claim>.<ns>.svc`` (a
resolver sends every name to loopback), and it requires a client certificate from a client CA, as CDI's
upload server does. Claims and the CA bundle ConfigMap live in an in-memory API the test changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from kubevirt.cdi import token
from kubevirt.cdi_uploadproxy import upload_service_name
from kubevirt.cdi_uploadproxy.backend import CA_BUNDLE_KEY, UploadServerTrust, read_bundle
from kubevirt.cdi_uploadproxy.proxy import UploadProxy
from kubevirt.client import CONFIG_MAPS, PERSISTENT_VOLUME_CLAIMS, NotFoundError
from kubevirt.service import certs
from kubevirt.service.serving import listen
from kubevirt.service.tls import ReloadingCertificate
from kubevirt_api.cdi.constants import Annotation, Upload
from kubevirt_testing.certificates import self_signed, write_pair
from kubevirt_testing.export_proxy import ToLoopback, proxy_client
from kubevirt_testing.fake_kube_api import FakeKubeApi

JSON = dict[str, Any]
NS = "images"
INSTALL_NS = "cdi"
CLAIM = "disk"
DAY = datetime.timedelta(days=1)
CHUNK = 64 * 1024
CHUNKS = 64  # 4 MiB


def chunk(index: int) -> bytes:
    return bytes([index % 251]) * CHUNK


def new_ca(name: str) -> certs.KeyPair:
    return certs.new_ca(name, datetime.datetime.now(datetime.UTC), DAY)


def server_pair(ca: certs.KeyPair, claim: str = CLAIM) -> certs.KeyPair:
    """An upload server's certificate, named for its Service as CDI's upload controller names it."""
    service = upload_service_name(claim)
    spec = certs.CertificateSpec("cert", "server", service, service)
    return certs.new_certificate(spec, ca, NS, datetime.datetime.now(datetime.UTC), DAY)


def client_pair(ca: certs.KeyPair) -> certs.KeyPair:
    spec = certs.CertificateSpec("cert", "client", Upload.CLIENT_NAME)
    return certs.new_certificate(spec, ca, INSTALL_NS, datetime.datetime.now(datetime.UTC), DAY)


def claim(
    name: str = CLAIM,
    *,
    target: bool = True,
    ready: str | None = "true",
    phase: str | None = "Running",
    content_type: str | None = None,
    extra: dict[str, str] | None = None,
    spec: JSON | None = None,
) -> JSON:
    annotations: dict[str, str] = dict(extra or {})
    if target:
        annotations[Annotation.UPLOAD_TARGET] = ""
    if ready is not None:
        annotations[Annotation.POD_READY] = ready
    if phase is not None:
        annotations[Annotation.POD_PHASE] = phase
    if content_type is not None:
        annotations[Annotation.CONTENT_TYPE] = content_type
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NS, "annotations": annotations},
        "spec": spec or {},
    }


def bundle_config_map(*cas: certs.KeyPair) -> JSON:
    return {
        "metadata": {"name": Upload.SERVER_SIGNER_BUNDLE, "namespace": INSTALL_NS},
        "data": {CA_BUNDLE_KEY: b"".join(ca.cert_pem for ca in cas).decode()},
    }


@dataclass
class UploadServer:
    """Stands in for cdi-uploadserver: records each request (path, query, headers, the client
    certificate's common name, the body's size and digest) and answers 200 (or ``answer``). ``first_chunk``
    is set once the first bytes of a body arrived."""

    requests: list[JSON] = field(default_factory=list)
    first_chunk: asyncio.Event = field(default_factory=asyncio.Event)
    answer: tuple[int, str] = (200, "")

    def application(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._upload)
        return app

    async def _upload(self, request: web.Request) -> web.Response:
        digest, size = hashlib.sha256(), 0
        async for data in request.content.iter_any():
            if size == 0:
                self.first_chunk.set()
            digest.update(data)
            size += len(data)
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(item[0] for item in (peer or {}).get("subject", ()))
        self.requests.append(
            {
                "method": request.method,
                "path": request.path,
                "query": request.rel_url.raw_query_string,
                "headers": request.headers.copy(),
                "client": subject.get("commonName"),
                "size": size,
                "sha256": digest.hexdigest(),
            }
        )
        status, text = self.answer
        return web.Response(status=status, text=text, headers={"X-Upload-Server": "yes"})


@dataclass
class Harness:
    client: aiohttp.ClientSession
    port: int
    server: UploadServer
    resolver: ToLoopback
    api: FakeKubeApi
    signing_key: Any
    client_files: tuple[Path, Path]

    def url(self, path: str = Upload.PATH_SYNC) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def token(self, name: str = CLAIM, namespace: str = NS, **fields: Any) -> str:
        payload = token.Payload(
            operation=fields.pop("operation", Upload.TOKEN_OPERATION),
            name=name,
            namespace=namespace,
            **fields,
        )
        return token.generate(payload, self.signing_key)

    def auth(self, name: str = CLAIM) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token(name)}"}

    def put_claim(self, obj: JSON) -> None:
        """Creates or replaces a claim."""
        with contextlib.suppress(NotFoundError):
            self.api.delete(PERSISTENT_VOLUME_CLAIMS, NS, obj["metadata"]["name"])
        self.api.add(PERSISTENT_VOLUME_CLAIMS, obj)


@contextlib.asynccontextmanager
async def upload_server(
    tmp_path: Path, pair: certs.KeyPair, client_ca: certs.KeyPair
) -> AsyncIterator[tuple[UploadServer, int]]:
    server = UploadServer()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*write_pair(pair, tmp_path, "uploadserver"))
    context.load_verify_locations(cadata=client_ca.cert_pem.decode())
    context.verify_mode = ssl.CERT_REQUIRED
    runner = web.AppRunner(server.application(), handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    try:
        yield server, int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, *, certified_for: str = CLAIM) -> AsyncIterator[Harness]:
    """The upload server (its certificate naming ``certified_for``'s Service), the proxy in front of it
    (claim ``disk`` ready, the CA bundle published) and a client of the proxy."""
    server_ca, client_ca = new_ca("cdi-uploadserver-signer"), new_ca("cdi-uploadserver-client-signer")
    api = FakeKubeApi()
    api.add(CONFIG_MAPS, bundle_config_map(server_ca))
    api.add(PERSISTENT_VOLUME_CLAIMS, claim())
    client_files = write_pair(client_pair(client_ca), tmp_path, "client")
    signing_key = token.new_signing_key()
    async with upload_server(tmp_path, server_pair(server_ca, certified_for), client_ca) as (server, port):
        resolver = ToLoopback()
        trust = UploadServerTrust(
            *client_files, lambda: read_bundle(api, INSTALL_NS, Upload.SERVER_SIGNER_BUNDLE)
        )
        proxy = UploadProxy(
            api,
            signing_key.public_key(),
            trust,
            backend_port=port,
            resolver=resolver,
            poll_interval=0.05,
            poll_timeout=0.5,
        )
        proxy_pair = self_signed("cdi-uploadproxy")
        certificate = ReloadingCertificate(*write_pair(proxy_pair, tmp_path, "proxy"))
        listening = await listen(proxy.application(), certificate, "127.0.0.1", 0)
        try:
            async with proxy_client(proxy_pair) as client:
                yield Harness(client, listening.port, server, resolver, api, signing_key, client_files)
        finally:
            await listening.close()


Scenario = Callable[[Harness], Awaitable[None]]


def run(tmp_path: Path, scenario: Scenario, *, certified_for: str = CLAIM) -> None:
    """Runs ``scenario`` against a fresh harness."""

    async def main() -> None:
        async with serving(tmp_path, certified_for=certified_for) as harness:
            await asyncio.wait_for(scenario(harness), timeout=30)

    asyncio.run(main())
