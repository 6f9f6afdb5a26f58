"""virt-exportproxy between a client and a real export server over TLS: KubeVirt's path mapping, status
codes and header handling, the export CA as the only trust, and bodies streamed rather than buffered."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubevirt.service.certs import KeyPair
from kubevirt.virt_exportproxy.proxy import (
    BackendTrust,
    ProxyTarget,
    TrustUnavailableError,
    backend_url,
    match_path,
)
from kubevirt_testing.export_proxy import (
    CHUNK,
    DISK_CHUNKS,
    GZIPPED,
    NS,
    SERVICE,
    Harness,
    ca_config_map,
    disk_chunk,
    export,
    new_export_ca,
    server_pair,
    serving,
)

Scenario = Callable[[Harness], Awaitable[None]]


def run(
    tmp_path: Path, scenario: Scenario, *, ca: KeyPair | None = None, server_cert: KeyPair | None = None
) -> None:
    async def main() -> None:
        async with serving(tmp_path, ca=ca, server_cert=server_cert) as harness:
            await asyncio.wait_for(scenario(harness), timeout=30)

    asyncio.run(main())


# The path.


@pytest.mark.parametrize(
    ("path", "target"),
    [
        (
            "/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/vm1/volumes/d/disk.img",
            ProxyTarget("ns", "vm1", "/volumes/d/disk.img"),
        ),
        (
            "/api/export.kubevirt.io/v1alpha1/namespaces/ns/virtualmachineexports/vm1/manifests/all",
            ProxyTarget("ns", "vm1", "/manifests/all"),
        ),
        (
            "/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/vm1/",
            ProxyTarget("ns", "vm1", "/"),
        ),
        ("/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/vm1", None),
        ("/api/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/vm1/x", None),
        ("/api/kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/vm1/x", None),
        ("/apis/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/vm1/x", None),
        ("/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachines/vm1/x", None),
    ],
)
def test_the_path_names_the_export_and_the_path_on_its_server(path: str, target: ProxyTarget | None) -> None:
    assert match_path(path) == target


# What the client gets.


def test_a_disk_image_streams_through_without_being_held(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        async with harness.client.get(harness.export_url("volumes/vm1/disk.img")) as response:
            assert response.status == 200
            assert response.headers["Content-Length"] == str(CHUNK * DISK_CHUNKS)
            # The server holds the rest back until the first chunk reached the client: a proxy that
            # buffered the body would never pass it on.
            first = await response.content.readexactly(CHUNK)
            assert first == disk_chunk(0)
            harness.server.release.set()
            digest = hashlib.sha256(first)
            async for chunk in response.content.iter_any():
                digest.update(chunk)
        expected = hashlib.sha256(b"".join(disk_chunk(i) for i in range(DISK_CHUNKS)))
        assert digest.hexdigest() == expected.hexdigest()
        assert harness.resolver.asked == [f"{SERVICE}.{NS}.svc"]
        assert harness.server.requests[0]["path"] == "/volumes/vm1/disk.img"

    run(tmp_path, scenario)


def test_both_api_versions_reach_the_export_with_the_query_kept_as_sent(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        for version in ("v1beta1", "v1alpha1"):
            async with harness.client.get(
                harness.export_url("echo?x-kubevirt-export-token=t%2Bk+v&a=%20", version=version)
            ) as response:
                assert (response.status, await response.text()) == (200, "echoed")
        assert [(r["path"], r["query"]) for r in harness.server.requests] == [
            ("/echo", "x-kubevirt-export-token=t%2Bk+v&a=%20"),
            ("/echo", "x-kubevirt-export-token=t%2Bk+v&a=%20"),
        ]

    run(tmp_path, scenario)


def test_headers_pass_as_gos_reverse_proxy_passes_them(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        headers = {
            "x-kubevirt-export-token": "secret-token",
            "X-Forwarded-For": "10.0.0.7",
            "Connection": "keep-alive, X-Per-Hop",
            "X-Per-Hop": "dropped",
            "Proxy-Authorization": "Basic dropped",
        }
        async with harness.client.get(
            harness.export_url("echo"), headers=headers, skip_auto_headers=["User-Agent", "Accept-Encoding"]
        ) as response:
            assert response.status == 200
            assert response.headers["X-Export"] == "yes"
            assert "Keep-Alive" not in response.headers  # hop-by-hop on the way back too
        seen = {name.lower(): value for name, value in harness.server.requests[0]["headers"]}
        assert seen["x-kubevirt-export-token"] == "secret-token"
        assert seen["x-forwarded-for"] == "10.0.0.7, 127.0.0.1"
        assert seen["host"] == f"127.0.0.1:{harness.proxy_port}"  # the client's Host, as Go's proxy leaves it
        for absent in ("x-per-hop", "proxy-authorization", "user-agent", "accept-encoding"):
            assert absent not in seen, absent

    run(tmp_path, scenario)


def test_the_clients_user_agent_is_passed_on(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        async with harness.client.get(harness.export_url("echo"), headers={"User-Agent": "virtctl/v1.6.6"}):
            pass
        seen = dict(harness.server.requests[0]["headers"])
        assert seen["User-Agent"] == "virtctl/v1.6.6"

    run(tmp_path, scenario)


def test_an_upload_body_reaches_the_export_server(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        body = b"uploaded" * 50_000
        async with harness.client.put(harness.export_url("echo"), data=body) as response:
            assert response.status == 200
        assert harness.server.requests[0]["method"] == "PUT"
        assert harness.server.requests[0]["body"] == body

    run(tmp_path, scenario)


def test_redirects_and_compressed_bodies_are_the_clients_to_handle(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        async with harness.client.get(harness.export_url("redirect"), allow_redirects=False) as response:
            assert response.status == 302
            assert response.headers["Location"] == "/elsewhere"
        async with harness.client.get(harness.export_url("gzip")) as response:
            assert response.headers["Content-Encoding"] == "gzip"
            assert await response.read() == GZIPPED

    run(tmp_path, scenario)


def test_a_body_cut_off_by_the_export_server_is_cut_off_for_the_client(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        async with harness.client.get(harness.export_url("cut")) as response:
            assert response.status == 200
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.read()

    run(tmp_path, scenario)


async def _status(harness: Harness, url: str, method: str = "GET") -> tuple[int, bytes]:
    async with harness.client.request(method, url) as response:
        return response.status, await response.read()


def test_kubevirts_refusals_with_empty_bodies(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        assert await _status(harness, harness.url("/api/export.kubevirt.io/v1beta1/namespaces/ns")) == (
            400,
            b"",
        )
        assert await _status(harness, harness.url("/")) == (400, b"")
        assert await _status(harness, harness.export_url("echo", name="nope")) == (404, b"")
        harness.exports[f"{NS}/vm1"] = export(phase="Pending")
        assert await _status(harness, harness.export_url("echo")) == (503, b"")
        harness.exports[f"{NS}/vm1"] = export(phase=None, service=None)
        assert await _status(harness, harness.export_url("echo")) == (503, b"")
        assert harness.server.requests == []

    run(tmp_path, scenario)


def test_health_and_metrics(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        assert await _status(harness, harness.url("/healthz")) == (200, b"OK")
        assert await _status(harness, harness.url("/healthz"), "POST") == (200, b"OK")
        status, body = await _status(harness, harness.url("/metrics"))
        assert status == 200
        assert b"# TYPE" in body

    run(tmp_path, scenario)


# Trusting the export server.


def test_an_export_server_certified_by_another_ca_is_refused(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        assert await _status(harness, harness.export_url("echo")) == (502, b"")
        assert harness.server.requests == []

    run(tmp_path, scenario, server_cert=server_pair(new_export_ca()))


def test_a_certificate_for_another_service_is_refused(tmp_path: Path) -> None:
    ca = new_export_ca()

    async def scenario(harness: Harness) -> None:
        assert await _status(harness, harness.export_url("echo")) == (502, b"")
        assert harness.server.requests == []

    run(tmp_path, scenario, ca=ca, server_cert=server_pair(ca, "virt-export-other"))


def test_an_unreachable_export_server_is_a_bad_gateway(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        harness.resolver.gone.add(f"{SERVICE}.{NS}.svc")
        assert await _status(harness, harness.export_url("echo")) == (502, b"")
        harness.exports[f"{NS}/vm1"] = export(service="")  # a Ready export always names one; still
        assert await _status(harness, harness.export_url("echo")) == (502, b"")

    run(tmp_path, scenario)


def test_without_the_export_ca_nothing_is_proxied(tmp_path: Path) -> None:
    async def scenario(harness: Harness) -> None:
        harness.config_maps["ca"] = {"metadata": {"name": "kubevirt-export-ca"}, "data": {}}
        assert await _status(harness, harness.export_url("echo")) == (500, b"")
        del harness.config_maps["ca"]
        assert await _status(harness, harness.export_url("echo")) == (500, b"")
        assert harness.server.requests == []

    run(tmp_path, scenario)


def test_a_rotated_export_ca_is_trusted_from_the_next_request(tmp_path: Path) -> None:
    old, new = new_export_ca(), new_export_ca()

    async def scenario(harness: Harness) -> None:
        assert await _status(harness, harness.export_url("echo")) == (502, b"")
        harness.config_maps["ca"] = ca_config_map(new, old)
        assert await _status(harness, harness.export_url("echo")) == (200, b"echoed")

    run(tmp_path, scenario, ca=old, server_cert=server_pair(new))


def test_backend_trust_keeps_the_last_bundle_when_the_config_map_goes_missing() -> None:
    ca = new_export_ca()
    current: dict[str, dict[str, Any]] = {"cm": ca_config_map(ca)}
    trust = BackendTrust(lambda: current.get("cm"))
    first = trust.context()
    assert trust.context() is first  # unchanged bundle, same context
    del current["cm"]
    assert trust.context() is first
    current["cm"] = {"data": {"ca-bundle": "not a certificate"}}
    with pytest.raises(TrustUnavailableError, match="unusable ca-bundle"):
        trust.context()
    with pytest.raises(TrustUnavailableError, match="not found"):
        BackendTrust(lambda: None).context()


@pytest.mark.parametrize(
    ("path", "query", "url"),
    [
        ("/volumes/d/disk.img", "", "https://svc.ns.svc/volumes/d/disk.img"),
        ("/dir/a b/", "x=%2B+1", "https://svc.ns.svc/dir/a%20b/?x=%2B+1"),
    ],
)
def test_the_backend_url_encodes_the_path_and_keeps_the_raw_query(path: str, query: str, url: str) -> None:
    assert str(backend_url("svc.ns.svc", 443, path, query)) == url
