"""cdi-uploadproxy between a client and a real upload server over mutual TLS: CDI's status codes and
messages, the upload server chosen by the token's claim, archives sent to the archive endpoint, CORS, and
an image streamed through intact without being held."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubevirt.cdi import token
from kubevirt.cdi_uploadproxy import upload_service_name
from kubevirt.cdi_uploadproxy.claims import PVC_PRIME_ANNOTATION, UPLOAD_SOURCE_KIND
from kubevirt.client import CONFIG_MAPS, PERSISTENT_VOLUME_CLAIMS
from kubevirt_api.cdi.constants import GROUP, Upload

from .harness import (
    CHUNK,
    CHUNKS,
    CLAIM,
    INSTALL_NS,
    NS,
    Harness,
    bundle_config_map,
    chunk,
    claim,
    new_ca,
    run,
)


async def status_and_text(harness: Harness, path: str = Upload.PATH_SYNC, **kwargs: Any) -> tuple[int, str]:
    async with harness.client.post(harness.url(path), **kwargs) as response:
        return response.status, await response.text()


# The checks before an upload.


def test_healthz_says_ok(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        async with harness.client.get(harness.url("/healthz")) as response:
            assert (response.status, await response.text()) == (200, "OK")

    run(tmp_path, scenario)


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": ""}, {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": "Bearer a b"}],
)
def test_no_bearer_token_is_a_bad_request(tmp_path: Path, headers: dict[str, str]) -> None:
    async def scenario(harness: Harness) -> None:
        assert await status_and_text(harness, headers=headers, data=b"x") == (400, "")
        assert harness.server.requests == []

    run(tmp_path, scenario)


def test_a_token_that_does_not_verify_is_unauthorized(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        foreign = token.generate(token.upload_payload(NS, CLAIM), token.new_signing_key())
        expired = token.generate(token.upload_payload(NS, CLAIM), harness.signing_key, now=0)
        for raw in (foreign, expired, "not.a.jwt"):
            status = await status_and_text(harness, headers={"Authorization": f"bearer {raw}"})
            assert status == (401, "")
        assert harness.server.requests == []

    run(tmp_path, scenario)


@pytest.mark.parametrize(
    "fields",
    [
        {"operation": Upload.CLONE_TOKEN_OPERATION},
        {"name": ""},
        {"namespace": ""},
        {"resource": {"group": "", "version": "v1", "resource": "pods"}},
    ],
)
def test_a_token_granting_no_claim_upload_is_a_bad_request(tmp_path: Path, fields: dict[str, Any]) -> None:
    async def scenario(harness: Harness) -> None:
        name, namespace = fields.pop("name", CLAIM), fields.pop("namespace", NS)
        raw = harness.token(name, namespace, **fields)
        assert await status_and_text(harness, headers={"Authorization": f"Bearer {raw}"}) == (400, "")

    run(tmp_path, scenario)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (None, "rejecting Upload Request for PVC disk that doesn&#39;t exist"),
        (claim(target=False), "PVC disk is not an upload target"),
        (claim(phase="Succeeded"), "rejecting Upload Request for PVC disk that already finished uploading"),
        (claim(ready="false"), "context deadline exceeded"),
        (claim(ready=None), "context deadline exceeded"),
        (
            claim(content_type="<b>odd</b>"),
            "rejecting upload request for PVC disk - upload content-type &lt;b&gt;odd&lt;/b&gt; is invalid",
        ),
    ],
)
def test_a_claim_that_cannot_take_the_upload_is_unavailable_with_cdis_reason(
    tmp_path: Path, obj: dict[str, Any] | None, message: str
) -> None:
    async def scenario(harness: Harness) -> None:
        if obj is None:
            harness.api.delete(PERSISTENT_VOLUME_CLAIMS, NS, CLAIM)
        else:
            harness.put_claim(obj)
        assert await status_and_text(harness, headers=harness.auth(), data=b"x") == (503, message)
        assert harness.server.requests == []

    run(tmp_path, scenario)


def test_the_upload_waits_for_the_server_to_become_ready(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        harness.put_claim(claim(ready="false"))

        async def becomes_ready() -> None:
            await asyncio.sleep(0.2)
            harness.put_claim(claim(ready="true"))

        ready = asyncio.create_task(becomes_ready())
        assert await status_and_text(harness, headers=harness.auth(), data=b"image") == (200, "")
        await ready
        assert harness.server.requests[0]["size"] == 5

    run(tmp_path, scenario)


# The relay.


def test_an_image_streams_through_intact_to_the_claims_upload_server(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        async def body() -> AsyncIterator[bytes]:
            yield chunk(0)
            # Only once the upload server saw the first chunk does the rest follow: a proxy that held
            # the body back would wait forever.
            await asyncio.wait_for(harness.server.first_chunk.wait(), timeout=10)
            for index in range(1, CHUNKS):
                yield chunk(index)

        headers = {**harness.auth(), "Content-Type": "application/octet-stream"}
        async with harness.client.post(
            harness.url(Upload.PATH_ASYNC + "?ignored=1"),
            data=body(),
            headers=headers,
            skip_auto_headers=["User-Agent"],
        ) as response:
            assert response.status == 200
            assert response.headers["X-Upload-Server"] == "yes"
        [received] = harness.server.requests
        expected = hashlib.sha256(b"".join(chunk(i) for i in range(CHUNKS))).hexdigest()
        assert (received["size"], received["sha256"]) == (CHUNK * CHUNKS, expected)
        assert (received["method"], received["path"], received["query"]) == ("POST", Upload.PATH_ASYNC, "")
        assert harness.resolver.asked == [f"cdi-upload-{CLAIM}.{NS}.svc"]
        assert received["client"] == Upload.CLIENT_NAME
        sent = received["headers"]
        assert sent["Authorization"] == headers["Authorization"]
        assert sent["Content-Type"] == "application/octet-stream"
        assert sent["X-Forwarded-For"] == "127.0.0.1"
        assert "User-Agent" not in sent

    run(tmp_path, scenario)


@pytest.mark.parametrize("path", Upload.PROXY_PATHS)
def test_every_upload_path_reaches_the_same_path_of_the_upload_server(tmp_path: Path, path: str) -> None:
    async def scenario(harness: Harness) -> None:
        headers = {**harness.auth(), "User-Agent": "virtctl"}
        assert await status_and_text(harness, path, headers=headers, data=b"img") == (200, "")
        [received] = harness.server.requests
        assert (received["path"], received["headers"]["User-Agent"]) == (path, "virtctl")

    run(tmp_path, scenario)


@pytest.mark.parametrize(
    ("path", "target"),
    [
        (Upload.PATH_SYNC, Upload.PATH_ARCHIVE),
        (Upload.PATH_FORM_ASYNC, Upload.PATH_ARCHIVE),
        ("/v1alpha1/upload", Upload.PATH_ARCHIVE_ALPHA),
        ("/v1alpha1/upload-form-async", Upload.PATH_ARCHIVE_ALPHA),
    ],
)
def test_an_archive_claim_is_uploaded_to_the_archive_endpoint(tmp_path: Path, path: str, target: str) -> None:
    async def scenario(harness: Harness) -> None:
        harness.put_claim(claim(content_type="archive"))
        assert await status_and_text(harness, path, headers=harness.auth(), data=b"tar") == (200, "")
        assert harness.server.requests[0]["path"] == target

    run(tmp_path, scenario)


def test_the_upload_servers_answer_is_passed_back(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        harness.server.answer = (400, "not a disk image")
        assert await status_and_text(harness, headers=harness.auth(), data=b"x") == (400, "not a disk image")

    run(tmp_path, scenario)


def test_a_populated_claim_uploads_through_its_pvc_prime(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        source = {"apiGroup": GROUP, "kind": UPLOAD_SOURCE_KIND, "name": "src"}
        harness.put_claim(claim(target=False, ready=None, spec={"dataSourceRef": source}))
        harness.put_claim(claim("prime-1234", content_type="kubevirt"))
        # Without the annotation naming PVC' yet, the proxy waits.
        assert await status_and_text(harness, headers=harness.auth(), data=b"x") == (
            503,
            "context deadline exceeded",
        )
        harness.put_claim(
            claim(
                target=False,
                ready=None,
                spec={"dataSourceRef": source},
                extra={PVC_PRIME_ANNOTATION: "prime-1234"},
            )
        )
        # The upload server answers for PVC': its name, not the claim's, makes the URL.
        await status_and_text(harness, headers=harness.auth(), data=b"x")
        assert harness.resolver.asked == [f"{upload_service_name('prime-1234')}.{NS}.svc"]

    run(tmp_path, scenario)


def test_a_missing_pvc_prime_is_unavailable(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        source = {"apiGroup": GROUP, "kind": UPLOAD_SOURCE_KIND, "name": "src"}
        harness.put_claim(claim(spec={"dataSourceRef": source}, extra={PVC_PRIME_ANNOTATION: "gone"}))
        assert await status_and_text(harness, headers=harness.auth()) == (
            503,
            "rejecting Upload Request for PVC disk, PVC&#39; wasn&#39;t created yet",
        )

    run(tmp_path, scenario)


def test_an_unreachable_upload_server_is_a_bad_gateway_with_the_reason(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        harness.resolver.gone.add(f"cdi-upload-{CLAIM}.{NS}.svc")
        status, text = await status_and_text(harness, headers=harness.auth(), data=b"x")
        assert status == 502
        assert text.startswith("error in upload-proxy: http: proxy error: ")
        assert text.endswith("\n")

    run(tmp_path, scenario)


def test_an_upload_server_outside_the_bundle_is_a_bad_gateway(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        harness.api.objects[(CONFIG_MAPS.plural, INSTALL_NS, Upload.SERVER_SIGNER_BUNDLE)] = (
            bundle_config_map(new_ca("another"))
        )
        status, text = await status_and_text(harness, headers=harness.auth(), data=b"x")
        assert status == 502
        assert "certificate verify failed" in text
        assert harness.server.requests == []

    run(tmp_path, scenario)


def test_a_certificate_for_another_service_is_a_bad_gateway(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        # The server is certified by the trusted CA, but for another claim's Service.
        status, text = await status_and_text(harness, headers=harness.auth(), data=b"x")
        assert status == 502
        assert "Hostname mismatch" in text

    run(tmp_path, scenario, certified_for="other")


def test_without_a_ca_bundle_or_a_client_certificate_the_proxy_fails(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        config_map = harness.api.get(CONFIG_MAPS, INSTALL_NS, Upload.SERVER_SIGNER_BUNDLE)
        harness.api.delete(CONFIG_MAPS, INSTALL_NS, Upload.SERVER_SIGNER_BUNDLE)
        assert await status_and_text(harness, headers=harness.auth()) == (500, "")
        harness.api.add(CONFIG_MAPS, {"metadata": config_map["metadata"], "data": {"ca-bundle": "x"}})
        assert await status_and_text(harness, headers=harness.auth()) == (500, "")
        harness.api.delete(CONFIG_MAPS, INSTALL_NS, Upload.SERVER_SIGNER_BUNDLE)
        harness.api.add(CONFIG_MAPS, config_map)
        harness.client_files[1].unlink()
        assert await status_and_text(harness, headers=harness.auth()) == (500, "")
        assert harness.server.requests == []

    run(tmp_path, scenario)


# The rest.


def test_other_paths_are_not_found(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        for path in ("/", "/v1beta1/upload/", "/v1beta1/upload-archive", "/metrics"):
            assert await status_and_text(harness, path, headers=harness.auth()) == (
                404,
                "404 page not found\n",
            )

    run(tmp_path, scenario)


def test_preflights_are_answered_for_any_origin(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        headers = {
            "Origin": "https://console.example",
            "Access-Control-Request-Method": "post",
            "Access-Control-Request-Headers": "authorization, content-type,x-custom_thing",
        }
        async with harness.client.options(harness.url(), headers=headers) as response:
            assert response.status == 200
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            assert response.headers["Access-Control-Allow-Methods"] == "POST"
            assert response.headers["Access-Control-Allow-Headers"] == (
                "Authorization, Content-Type, X-Custom_thing"
            )
            assert response.headers.getall("Vary") == [
                "Origin",
                "Access-Control-Request-Method",
                "Access-Control-Request-Headers",
            ]
        headers["Access-Control-Request-Method"] = "CONNECT"
        async with harness.client.options(harness.url(), headers=headers) as response:
            assert response.status == 200
            assert "Access-Control-Allow-Origin" not in response.headers
        assert harness.server.requests == []

    run(tmp_path, scenario)


def test_answers_to_a_cross_origin_request_allow_any_origin(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        origin = {"Origin": "https://console.example"}
        async with harness.client.post(harness.url(), headers=origin) as response:
            assert response.status == 400
            assert response.headers["Access-Control-Allow-Origin"] == "*"
        async with harness.client.post(harness.url(), headers={**origin, **harness.auth()}) as response:
            assert response.status == 200
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            assert response.headers.getall("Vary") == ["Origin"]
        async with harness.client.get(harness.url("/healthz")) as response:
            assert "Access-Control-Allow-Origin" not in response.headers
            assert response.headers["Vary"] == "Origin"

    run(tmp_path, scenario)
