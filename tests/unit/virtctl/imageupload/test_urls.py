"""The upload proxy's URL: when ``https://`` is put in front, and the upload paths (KubeVirt's table)."""

from __future__ import annotations

import pytest

from kubevirt.virtctl.imageupload.flags import UploadError
from kubevirt.virtctl.imageupload.urls import (
    UPLOAD_PATH,
    UPLOAD_PATH_ASYNC,
    async_upload_url,
    go_path_join,
    upload_url,
    with_scheme,
)

SERVER = "http://localhost:12345"


@pytest.mark.parametrize(
    "url",
    [SERVER + "/", SERVER + UPLOAD_PATH, SERVER],  # KubeVirt's "Server URL validations"
)
def test_the_upload_path_is_added_once(url: str) -> None:
    assert upload_url(url) == SERVER + UPLOAD_PATH


def test_the_async_path_keeps_a_base_path_and_the_query() -> None:
    assert async_upload_url("https://proxy/base/?x=1") == "https://proxy/base" + UPLOAD_PATH_ASYNC + "?x=1"
    assert async_upload_url(SERVER + UPLOAD_PATH_ASYNC) == SERVER + UPLOAD_PATH_ASYNC
    # The async URL holds the sync path already: it is used as it is.
    assert upload_url(SERVER + UPLOAD_PATH_ASYNC) == SERVER + UPLOAD_PATH_ASYNC


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("cdi-uploadproxy.example.com", "https://cdi-uploadproxy.example.com"),
        ("cdi-uploadproxy.example.com/x", "https://cdi-uploadproxy.example.com/x"),
        ("http://proxy:31001", "http://proxy:31001"),
        ("HTTPS://proxy", "HTTPS://proxy"),
        # Go reads "proxy" as the scheme here, so no prefix is added.
        ("proxy:31001", "proxy:31001"),
    ],
)
def test_https_is_assumed_without_a_scheme(given: str, used: str) -> None:
    assert with_scheme(given) == used


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("10.0.0.1:8443", "first path segment in URL cannot contain colon"),
        (":8443", "missing protocol scheme"),
        ("https://proxy\n", "net/url: invalid control character in URL"),
    ],
)
def test_urls_go_refuses_are_refused(given: str, why: str) -> None:
    with pytest.raises(UploadError) as raised:
        with_scheme(given)
    assert str(raised.value) == f'parse "{given}": {why}'


def test_path_join_cleans_as_go_does() -> None:
    assert go_path_join("", UPLOAD_PATH) == UPLOAD_PATH
    assert go_path_join("//a/../b/", "c") == "/b/c"
