"""A real upload server on loopback over mutual TLS, writing into a temporary "claim": certificates
made now (a CA for the server, another for the upload proxy's client certificates), a data directory,
a scratch directory and a termination log."""

from __future__ import annotations

import asyncio
import dataclasses
import http.client
import ssl
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from kubevirt.cdi_importer.config import Paths
from kubevirt.cdi_uploadserver.config import ServerConfig
from kubevirt.cdi_uploadserver.processing import Uploads
from kubevirt.cdi_uploadserver.server import RunResult, UploadServer
from kubevirt_api.cdi.constants import Upload
from kubevirt_testing.certificates import CertificateAuthority, KeyPair, write_pair


@dataclasses.dataclass
class Reply:
    status: int
    body: bytes


@dataclasses.dataclass(frozen=True)
class Pki:
    root: Path
    server_ca: CertificateAuthority
    client_ca: CertificateAuthority
    server_cert: Path
    server_key: Path
    client_ca_file: Path

    def client_files(self, pair: KeyPair, name: str) -> tuple[Path, Path]:
        return write_pair(pair, self.root, name)

    def context(self, client: KeyPair | None = None, name: str = "client") -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=None)
        context.load_verify_locations(cadata=self.server_ca.pair.cert_pem.decode())
        context.check_hostname = False
        if client is not None:
            context.load_cert_chain(*self.client_files(client, name))
        return context


@dataclasses.dataclass(frozen=True)
class Claim:
    data: Path
    scratch: Path
    termination_log: Path

    @property
    def disk(self) -> Path:
        return self.data / "disk.img"

    def paths(self) -> Paths:
        return Paths(data_dir=self.data, scratch_dir=self.scratch, termination_log=self.termination_log)


def base_env(pki: Pki, claim: Claim) -> dict[str, str]:
    return {
        "TLS_CERT_FILE": str(pki.server_cert),
        "TLS_KEY_FILE": str(pki.server_key),
        "CLIENT_CERT_FILE": str(pki.client_ca_file),
        "CLIENT_NAME": Upload.CLIENT_NAME,
        "FILESYSTEM_OVERHEAD": "0",
        "PREALLOCATION": "false",
        "DESTINATION": str(claim.disk),
        "LISTEN_ADDRESS": "127.0.0.1",
        "LISTEN_PORT": "0",
    }


class Running:
    """An UploadServer serving from its own thread and event loop."""

    def __init__(self, config: ServerConfig, paths: Paths, pki: Pki, client: KeyPair) -> None:
        self.server = UploadServer(config, Uploads(config, paths))
        self.pki = pki
        self.client = client
        self.result: RunResult | None = None
        self.error: BaseException | None = None
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop
        self._task: asyncio.Task[RunResult] | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()
        assert self._started.wait(30)
        if self.error is not None:
            raise self.error

    def _main(self) -> None:
        async def serve() -> RunResult:
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
            await self.server.start()
            self._started.set()
            try:
                return await self.server.wait()
            finally:
                await self.server.stop()

        try:
            self.result = asyncio.run(serve())
        except BaseException as err:
            self.error = err
            self._started.set()

    def cancel(self) -> None:
        """Stop a server no upload finished."""
        if self._thread.is_alive() and self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)

    def join(self, timeout: float = 60) -> RunResult | None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the upload server did not stop"
        return self.result

    def connect(self, client: KeyPair | bool | None = True) -> http.client.HTTPSConnection:
        pair = self.client if client is True else (client or None)
        context = self.pki.context(pair if isinstance(pair, KeyPair) else None)
        return http.client.HTTPSConnection("127.0.0.1", self.server.port, context=context, timeout=60)

    def request(
        self,
        path: str,
        body: bytes | Iterable[bytes] | None = None,
        *,
        method: str = "POST",
        headers: dict[str, str] | None = None,
        client: KeyPair | bool | None = True,
    ) -> Reply:
        conn = self.connect(client)
        try:
            chunked = body is not None and not isinstance(body, bytes)
            conn.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
            response = conn.getresponse()
            return Reply(response.status, response.read())
        finally:
            conn.close()


class ServeFactory(Protocol):
    def __call__(self, **env: str) -> Running: ...
