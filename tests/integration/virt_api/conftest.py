"""A real virt-api process serving HTTPS with a certificate the test made."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubevirt_testing.certificates import self_signed
from kubevirt_testing.process import start_virt_api, terminate


def make_certificate(cert_file: Path, key_file: Path, common_name: str) -> bytes:
    """A self-signed certificate for 127.0.0.1 written to the files; returns its DER bytes."""
    pair = self_signed(common_name)
    # Key first, then the certificate: a reader in between sees a mismatched pair and must cope.
    key_file.write_bytes(pair.key_pem)
    cert_file.write_bytes(pair.cert_pem)
    return pair.cert_der


@dataclass
class VirtApi:
    port: int
    cert_file: Path
    key_file: Path
    process: subprocess.Popen[bytes]
    log_file: Path

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context

    def connection(self, timeout: float = 10.0) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context(), timeout=timeout)

    def request(
        self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json"
    ) -> tuple[int, bytes]:
        conn = self.connection()
        try:
            headers = {"Content-Type": content_type} if body is not None else {}
            conn.request(method, path, body=body, headers=headers)
            reply = conn.getresponse()
            return reply.status, reply.read()
        finally:
            conn.close()

    def review(self, path: str, request: dict[str, Any]) -> dict[str, Any]:
        document = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        status, body = self.request("POST", path, json.dumps(document).encode())
        assert status == 200, body
        answer: dict[str, Any] = json.loads(body)
        assert answer["apiVersion"] == "admission.k8s.io/v1"
        assert answer["kind"] == "AdmissionReview"
        assert answer["response"]["uid"] == request["uid"]
        return dict(answer["response"])

    def peer_certificate(self) -> bytes:
        with (
            socket.create_connection(("127.0.0.1", self.port), timeout=5) as raw,
            self.context().wrap_socket(raw) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
            assert der is not None
            return der

    def stop(self) -> None:
        stop(self)

    def alive(self) -> bool:
        status, _ = self.request("GET", "/healthz")
        return status == 200 and self.process.poll() is None


def launch(workdir: Path, extra_args: list[str] | None = None, *, expect_healthy: bool = True) -> VirtApi:
    """Start virt-api with a fresh certificate in ``workdir``; returns once /healthz answers (200, or any
    answer when ``expect_healthy`` is false)."""
    cert_file, key_file = workdir / "tls.crt", workdir / "tls.key"
    make_certificate(cert_file, key_file, "virt-api-1")
    log_file = workdir / "virt-api.log"
    limits = ["--cert-reload-interval=0.2", "--request-timeout=1.5", f"--max-request-bytes={2 * 1024 * 1024}"]
    process, port = start_virt_api(cert_file, key_file, log_file, [*limits, *(extra_args or [])])
    api = VirtApi(port, cert_file, key_file, process, log_file)
    deadline = time.monotonic() + 30
    while True:
        try:
            if api.alive() if expect_healthy else api.request("GET", "/healthz")[0] > 0:
                return api
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"virt-api did not come up:\n{log_file.read_text()}")
        time.sleep(0.1)


def stop(api: VirtApi) -> None:
    terminate(api.process)


@pytest.fixture(scope="module")
def virt_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VirtApi]:
    api = launch(tmp_path_factory.mktemp("virt-api"))
    yield api
    stop(api)


@pytest.fixture(scope="session")
def launch_virt_api() -> Any:
    """``launch(workdir, extra_args)`` for tests that need their own virt-api; stop it with ``.stop()``."""
    return launch


@pytest.fixture(scope="session")
def write_certificate() -> Any:
    """Writes a fresh self-signed certificate and key; returns the certificate's DER bytes."""
    return make_certificate
