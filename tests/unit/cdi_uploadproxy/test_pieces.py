"""The proxy's pieces on their own: CDI's Service names, the Authorization header, CORS header lists, Go's
HTML escaping, the claim checks and the client context towards upload servers."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from kubevirt.cdi import token
from kubevirt.cdi_uploadproxy import upload_server_url, upload_service_name
from kubevirt.cdi_uploadproxy.auth import RejectedError, authorize, bearer_token
from kubevirt.cdi_uploadproxy.backend import TrustUnavailableError, UploadServerTrust, read_bundle
from kubevirt.cdi_uploadproxy.claims import (
    UploadNotPossibleError,
    look_at_claim,
    upload_url,
    wait_until_ready,
)
from kubevirt.cdi_uploadproxy.cors import actual_headers, header_list, preflight_headers
from kubevirt.cdi_uploadproxy.proxy import go_html_escape
from kubevirt.client import CONFIG_MAPS, PERSISTENT_VOLUME_CLAIMS, ForbiddenError
from kubevirt_api.cdi.constants import Upload
from kubevirt_testing.certificates import write_pair
from kubevirt_testing.fake_kube_api import FakeKubeApi

from .harness import INSTALL_NS, NS, bundle_config_map, claim, client_pair, new_ca

# Names.


@pytest.mark.parametrize(
    ("claim_name", "service"),
    [
        ("disk", "cdi-upload-disk"),
        ("my.disk.v1", "cdi-upload-my-disk-v1"),  # a Service name has no dots
        # Longer than a DNS label: shortened with the hash of the whole name (values from CDI's Go code).
        ("a" * 60, "cdi-upload-" + "a" * 39 + "-be77fd4c-cdi"),
        ("b" * 250, "cdi-upload-45b39824"),
    ],
)
def test_upload_services_are_named_as_cdi_names_them(claim_name: str, service: str) -> None:
    assert upload_service_name(claim_name) == service
    assert len(service) <= 63
    assert (
        upload_server_url("ns", claim_name, "/v1beta1/upload") == f"https://{service}.ns.svc/v1beta1/upload"
    )


# The Authorization header.


@pytest.mark.parametrize(
    ("header", "raw"),
    [
        ("Bearer abc.DEF-_~+/x", "abc.DEF-_~+/x"),
        ("bearer\tabc", "abc"),
        ("BEARER   abc", "abc"),
        ("Bearer abc\n", None),
        ("Bearer abc def", None),
        ("Bearer", None),
        ("Bearer a=b", None),
        ("Token abc", None),
    ],
)
def test_the_bearer_token_is_read_as_cdi_reads_it(header: str, raw: str | None) -> None:
    assert bearer_token(header) == raw


def test_authorize_grants_the_tokens_claim_only() -> None:
    key = token.new_signing_key()
    raw = token.generate(token.upload_payload(NS, "disk"), key)
    grant = authorize(f"Bearer {raw}", key.public_key())
    assert (grant.namespace, grant.name) == (NS, "disk")
    with pytest.raises(RejectedError) as rejected:
        authorize(f"Bearer {raw}", token.new_signing_key().public_key())
    assert rejected.value.status == 401
    with pytest.raises(RejectedError) as rejected:
        authorize(None, key.public_key())
    assert rejected.value.status == 400


# CORS.


def test_requested_headers_are_listed_in_canonical_case() -> None:
    assert header_list("content-type,AUTHORIZATION  x-a_b, é-x,,") == [
        "Content-Type",
        "Authorization",
        "X-A_b",
        "-X",
    ]
    assert header_list("") == []


def test_cors_headers_need_an_origin() -> None:
    assert list(preflight_headers({"Access-Control-Request-Method": "PUT"}).items()) == [
        ("Vary", "Origin"),
        ("Vary", "Access-Control-Request-Method"),
        ("Vary", "Access-Control-Request-Headers"),
    ]
    assert dict(actual_headers("POST", {})) == {"Vary": "Origin"}
    assert dict(actual_headers("OPTIONS", {"Origin": "x"}))["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Origin" not in actual_headers("PROPFIND", {"Origin": "x"})


def test_errors_are_escaped_as_go_escapes_html() -> None:
    assert go_html_escape("""<a href="x">it's & that</a>""") == (
        "&lt;a href=&#34;x&#34;&gt;it&#39;s &amp; that&lt;/a&gt;"
    )


# The claim.


def test_an_api_failure_is_returned_with_its_message() -> None:
    api = FakeKubeApi()
    api.fail_with = ForbiddenError(403, "Forbidden", 'persistentvolumeclaims "disk" is forbidden')
    with pytest.raises(UploadNotPossibleError, match=r'^persistentvolumeclaims "disk" is forbidden$'):
        look_at_claim(api, NS, "disk")


@pytest.mark.parametrize(
    ("ready", "taken"), [("true", True), ("1", True), ("T", True), ("yes", False), ("", False)]
)
def test_the_server_is_ready_when_the_annotation_parses_as_true(ready: str, taken: bool) -> None:
    api = FakeKubeApi()
    api.add(PERSISTENT_VOLUME_CLAIMS, claim(ready=ready))
    assert (look_at_claim(api, NS, "disk") is not None) == taken


def test_the_claim_is_looked_at_until_the_timeout() -> None:
    calls: list[float] = []

    def never() -> None:
        calls.append(time.monotonic())

    started = time.monotonic()
    with pytest.raises(UploadNotPossibleError, match=r"^context deadline exceeded$"):
        asyncio.run(wait_until_ready(never, interval=0.05, timeout=0.3))
    assert 0.25 < time.monotonic() - started < 1.0
    assert 3 <= len(calls) <= 8


def test_the_content_type_decides_the_path() -> None:
    url = upload_url(claim(content_type="kubevirt"), NS, "disk", "/v1beta1/upload-form")
    assert url == f"https://cdi-upload-disk.{NS}.svc/v1beta1/upload-form"
    archive = upload_url(claim(content_type="archive"), NS, "disk", "/v1alpha1/upload-async")
    assert archive.endswith(Upload.PATH_ARCHIVE_ALPHA)


# The client context towards upload servers.


def test_the_client_context_is_rebuilt_when_the_bundle_changes(tmp_path: Path) -> None:
    api = FakeKubeApi()
    api.add(CONFIG_MAPS, bundle_config_map(new_ca("one")))
    files = write_pair(client_pair(new_ca("client")), tmp_path, "client")
    trust = UploadServerTrust(*files, lambda: read_bundle(api, INSTALL_NS, Upload.SERVER_SIGNER_BUNDLE))
    first = trust.context()
    assert trust.context() is first
    api.delete(CONFIG_MAPS, INSTALL_NS, Upload.SERVER_SIGNER_BUNDLE)
    api.add(CONFIG_MAPS, bundle_config_map(new_ca("two")))
    second = trust.context()
    assert second is not first
    assert second.check_hostname
    assert [ca["subject"] for ca in second.get_ca_certs()] == [((("commonName", "two"),),)]


def test_a_bundle_without_certificates_trusts_nothing(tmp_path: Path) -> None:
    files = write_pair(client_pair(new_ca("client")), tmp_path, "client")
    context = UploadServerTrust(*files, lambda: "").context()
    assert context.get_ca_certs() == []


def test_a_missing_config_map_or_key_file_is_no_trust(tmp_path: Path) -> None:
    files = write_pair(client_pair(new_ca("client")), tmp_path, "client")
    with pytest.raises(TrustUnavailableError):
        UploadServerTrust(*files, lambda: read_bundle(FakeKubeApi(), INSTALL_NS, "none")).context()
    files[1].unlink()
    with pytest.raises(TrustUnavailableError):
        UploadServerTrust(*files, lambda: "").context()
