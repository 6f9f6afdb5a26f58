"""The export token on every data route (header or query parameter, as KubeVirt takes it), the readiness
probe without it, and Go's ServeMux answers: 404 for unknown paths, 301 to the clean path before any
token is asked for."""

from __future__ import annotations

import pytest

from kubevirt_testing.export_server import DISK, TOKEN, Exporter

pytestmark = pytest.mark.timeout(60)

DATA_ROUTES = [
    "/volumes/fs-disk/disk.img",
    "/volumes/fs-disk/disk.img.gz",
    "/volumes/files/disk.tar.gz",
    "/volumes/files/dir/",
    "/volumes/files/dir/a.txt",
    "/internal/manifests/all",
    "/external/manifests/all",
    "/internal/manifests/secret",
    "/external/manifests/secret",
]


@pytest.mark.parametrize("path", DATA_ROUTES)
@pytest.mark.parametrize("token", [None, "", "wrong", TOKEN[:-1], TOKEN + "x", TOKEN.upper()])
def test_data_routes_answer_401_without_the_exact_token(
    exporter: Exporter, path: str, token: str | None
) -> None:
    reply = exporter.request(path, token=token)
    assert (reply.status, reply.body) == (401, b"")
    assert "Content-Type" not in reply.headers


def test_the_token_is_taken_from_the_query_parameter(exporter: Exporter) -> None:
    reply = exporter.request(f"/volumes/fs-disk/disk.img?x-kubevirt-export-token={TOKEN}", token=None)
    assert (reply.status, reply.body) == (200, DISK)


def test_either_the_header_or_the_parameter_may_carry_it(exporter: Exporter) -> None:
    path = f"/volumes/files/dir/a.txt?x-kubevirt-export-token={TOKEN}"
    assert exporter.request(path, token="wrong").status == 200
    assert exporter.request("/volumes/files/dir/a.txt?x-kubevirt-export-token=wrong").status == 200


def test_the_query_token_is_not_repeated_in_a_redirect(exporter: Exporter) -> None:
    reply = exporter.request(f"/volumes/files/dir/sub?a=1&x-kubevirt-export-token={TOKEN}&b=2", token=None)
    assert reply.status == 301
    assert reply.headers["Location"] == "sub/?a=1&b=2"


def test_the_token_file_is_read_for_every_request(exporter: Exporter) -> None:
    exporter.token_file.write_text("rotated")
    assert exporter.request("/volumes/files/dir/a.txt").status == 401
    assert exporter.request("/volumes/files/dir/a.txt", token="rotated").status == 200


def test_an_unreadable_token_file_answers_500(exporter: Exporter) -> None:
    exporter.token_file.unlink()
    assert exporter.request("/volumes/files/dir/a.txt").status == 500


def test_an_empty_token_file_lets_nothing_through(exporter: Exporter) -> None:
    exporter.token_file.write_text("")
    assert exporter.request("/volumes/files/dir/a.txt", token=None).status == 401
    assert exporter.request("/volumes/files/dir/a.txt", token="").status == 401


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST"])
def test_readiness_needs_no_token(exporter: Exporter, method: str) -> None:
    reply = exporter.request("/exportready", token=None, method=method)
    assert reply.status == 200
    assert reply.body == (b"OK" if method != "HEAD" else b"")


@pytest.mark.parametrize("path", ["/", "/volumes/", "/volumes/fs-disk/disk.raw", "/internal/manifests"])
def test_unknown_paths_answer_go_s_404(exporter: Exporter, path: str) -> None:
    reply = exporter.request(path)
    assert (reply.status, reply.body) == (404, b"404 page not found\n")
    assert reply.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("/volumes/files/dir", "/volumes/files/dir/"),
        ("/volumes/files/dir/../../fs-disk/disk.img", "/volumes/fs-disk/disk.img"),
        ("/volumes/files/dir/%2e%2e/%2E%2E/%2e%2e/token", "/token"),
        ("//volumes/./fs-disk//disk.img?keep=1", "/volumes/fs-disk/disk.img?keep=1"),
    ],
)
def test_unclean_paths_are_redirected_before_the_token_is_checked(
    exporter: Exporter, path: str, location: str
) -> None:
    reply = exporter.request(path, token=None)
    assert reply.status == 301
    assert reply.headers["Location"] == location
    assert reply.body == f'<a href="{location.replace("&", "&amp;")}">Moved Permanently</a>.\n\n'.encode()


def test_a_bad_escape_is_a_bad_request(exporter: Exporter) -> None:
    assert exporter.request("/volumes/files/dir/%zz").status == 400
