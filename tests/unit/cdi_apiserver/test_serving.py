"""The process's server over real TLS: the front proxy's certificate, checked against the CA from
``extension-apiserver-authentication``, is what authenticates a request."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubevirt.cdi import token
from kubevirt.cdi_apiserver import app
from kubevirt.client import CONFIG_MAPS
from kubevirt.client.resources import Resource
from kubevirt.service.serving import until_signalled
from kubevirt_testing.certificates import CertificateAuthority, write_pair
from kubevirt_testing.fake_kube_api import FakeKubeApi

from .harness import NAMESPACE, SIGNING_KEY, TOKENS, USER_HEADERS

pytestmark = pytest.mark.timeout(60)


class _Cluster(FakeKubeApi):
    """Answers SubjectAccessReviews (allowed for alice only) and records them."""

    def __init__(self) -> None:
        super().__init__()
        self.reviews: list[dict[str, Any]] = []

    def create(
        self, resource: Resource, namespace: str | None, body: Mapping[str, Any], *, dry_run: bool = False
    ) -> dict[str, Any]:
        if resource.plural == "subjectaccessreviews":
            self.reviews.append(dict(body))
            return {**body, "status": {"allowed": body["spec"]["user"] == "alice"}}
        return super().create(resource, namespace, body, dry_run=dry_run)


def _setup(tmp_path: Path) -> tuple[_Cluster, app.Options, ssl.SSLContext, ssl.SSLContext, ssl.SSLContext]:
    server_ca, front_proxy_ca = (
        CertificateAuthority.create("cdi-apiserver-signer"),
        CertificateAuthority.create(),
    )
    cert_file, key_file = write_pair(server_ca.issue("cdi-api.cdi.svc"), tmp_path)
    client_cert, client_key = write_pair(
        front_proxy_ca.issue("front-proxy-client", client=True), tmp_path, "fp"
    )
    stranger_cert, stranger_key = write_pair(
        server_ca.issue("front-proxy-client", client=True), tmp_path, "x"
    )
    cluster = _Cluster()
    data = {
        "requestheader-client-ca-file": front_proxy_ca.pair.cert_pem.decode(),
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    }
    cluster.add(
        CONFIG_MAPS,
        {
            "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
            "data": data,
        },
    )
    options = app.Options(listen="127.0.0.1", port=0, tls_cert_file=cert_file, tls_key_file=key_file)

    def client(cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=server_ca.pair.cert_pem.decode())
        context.check_hostname = False
        if cert is not None and key is not None:
            context.load_cert_chain(cert, key)
        return context

    return cluster, options, client(), client(client_cert, client_key), client(stranger_cert, stranger_key)


def test_a_token_over_tls_for_the_front_proxy_only(tmp_path: Path) -> None:
    cluster, options, anonymous, front_proxy, stranger = _setup(tmp_path)
    answers: dict[str, Any] = {}

    async def main() -> None:
        serving = await app.serve(options, cluster, SIGNING_KEY)  # type: ignore[arg-type]
        base = f"https://127.0.0.1:{serving.port}"
        body = json.dumps({"spec": {"pvcName": "disk"}})
        try:
            async with aiohttp.ClientSession() as session:
                async with session.get(f"{base}/healthz", ssl=anonymous) as response:
                    answers["health"] = response.status, await response.text()
                async with session.post(
                    f"{base}{TOKENS}", data=body, headers=USER_HEADERS, ssl=anonymous
                ) as r:
                    answers["anonymous"] = r.status, await r.text()
                async with session.post(
                    f"{base}{TOKENS}", data=body, headers=USER_HEADERS, ssl=front_proxy
                ) as r:
                    answers["token"] = r.status, await r.json()
                bob = {**USER_HEADERS, "X-Remote-User": "bob"}
                async with session.post(f"{base}{TOKENS}", data=body, headers=bob, ssl=front_proxy) as r:
                    answers["bob"] = r.status
                # A certificate the front proxy's CA did not sign fails the handshake (Go's
                # VerifyClientCertIfGiven), whatever the path.
                with pytest.raises(aiohttp.ClientError):
                    async with session.post(
                        f"{base}{TOKENS}", data=body, headers=USER_HEADERS, ssl=stranger
                    ) as r:
                        answers["stranger"] = r.status
        finally:
            await serving.close()

    asyncio.run(main())
    assert answers["health"] == (200, "OK")
    assert answers["anonymous"] == (401, "request is not authenticated")
    assert "stranger" not in answers
    status, document = answers["token"]
    assert status == 200
    assert token.validate(document["status"]["token"], SIGNING_KEY.public_key()) == token.upload_payload(
        NAMESPACE, "disk"
    )
    assert answers["bob"] == 401
    assert [review["spec"]["user"] for review in cluster.reviews] == ["alice", "bob"]


def test_without_the_front_proxy_configuration_nobody_is_authenticated(tmp_path: Path) -> None:
    cluster, options, _, front_proxy, _ = _setup(tmp_path)
    cluster.objects.clear()
    answers: dict[str, Any] = {}

    async def main() -> None:
        serving = await app.serve(options, cluster, SIGNING_KEY)  # type: ignore[arg-type]
        try:
            async with aiohttp.ClientSession() as session:
                url = f"https://127.0.0.1:{serving.port}{TOKENS}"
                async with session.post(url, data=b"{}", headers=USER_HEADERS, ssl=front_proxy) as r:
                    answers["token"] = r.status, await r.text()
        finally:
            await serving.close()

    asyncio.run(main())
    assert answers["token"] == (401, "request is not authenticated")
    assert cluster.reviews == []


def test_sigterm_stops_serving_cleanly(tmp_path: Path) -> None:
    cluster, options, *_ = _setup(tmp_path)

    async def main() -> None:
        # The handlers are in place before serving starts; the signal comes once it is serving.
        asyncio.get_running_loop().call_later(0.5, os.kill, os.getpid(), signal.SIGTERM)
        await until_signalled(lambda stop: app.serve_until(stop, options, cluster, SIGNING_KEY))  # type: ignore[arg-type]

    asyncio.run(asyncio.wait_for(main(), timeout=20))
