"""The pieces of Go's net/http the export server reproduces, and the environment it is configured by."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from kubevirt.virt_exportserver.config import ConfigError, ServerConfig, parse_deadline, parse_listen_addr
from kubevirt.virt_exportserver.httpcompat import escape_path, go_join, parse_query
from kubevirt.virt_exportserver.mux import clean_path
from kubevirt.virt_exportserver.ranges import ByteRange, NoOverlapError, RangeError, parse_range
from kubevirt.virt_exportserver.sniff import content_type

BASE_ENV = {"CERT_FILE": "/cert/tls.crt", "KEY_FILE": "/cert/tls.key", "TOKEN_FILE": "/token/token"}


@pytest.mark.parametrize(
    ("header", "ranges"),
    [
        ("", []),
        ("bytes=0-0", [ByteRange(0, 1)]),
        ("bytes= 2 - 4 ,", [ByteRange(2, 3)]),
        ("bytes=+2-4", [ByteRange(2, 3)]),  # strconv.ParseInt takes a sign
        ("bytes=-0", [ByteRange(100, 0)]),
        ("bytes=-500", [ByteRange(0, 100)]),
        ("bytes=98-,200-", [ByteRange(98, 2)]),  # past the end: skipped when another range overlaps
    ],
)
def test_ranges_are_read_as_go_reads_them(header: str, ranges: list[ByteRange]) -> None:
    assert parse_range(header, 100) == ranges


@pytest.mark.parametrize(
    "header",
    ["bytes=5", "bytes=a-b", "bytes=--5", "bytes=5-4", "bytes=1_0-20", "bytes=0-99999999999999999999"],
)
def test_malformed_ranges_are_refused(header: str) -> None:
    with pytest.raises(RangeError, match=r"^invalid range$"):
        parse_range(header, 100)


def test_ranges_all_past_the_end_do_not_overlap() -> None:
    with pytest.raises(NoOverlapError):
        parse_range("bytes=100-,200-300", 100)


@pytest.mark.parametrize(
    ("path", "clean"),
    [
        ("", "/"),
        ("a/b", "/a/b"),
        ("/a/./b/", "/a/b/"),
        ("/a/../../b", "/b"),
        ("//a//b//", "/a/b/"),
        ("/..", "/"),
    ],
)
def test_serve_mux_cleans_paths_as_go(path: str, clean: str) -> None:
    assert clean_path(path) == clean


def test_joins_and_escapes_as_go() -> None:
    assert go_join("svc.ns.svc", "/volumes/a/disk.img.gz") == "svc.ns.svc/volumes/a/disk.img.gz"
    assert go_join("host/x/", "../y") == "host/y"
    assert escape_path("/a b/c?d#e") == "/a%20b/c%3Fd%23e"
    assert escape_path("x:y") == "./x:y"


def test_queries_are_parsed_as_go_parses_them() -> None:
    assert parse_query("a=1&b&c=%zz&d;e=2&f=x+y") == [("a", "1"), ("b", ""), ("f", "x y")]


@pytest.mark.parametrize(
    ("name", "head", "kind"),
    [
        ("disk.img", b"\x00" * 512, "application/octet-stream"),
        ("disk.img", b"QFI\xfb\x00\x00\x00\x03", "application/octet-stream"),
        ("disk.img", b"", "text/plain; charset=utf-8"),
        ("notes", b"plain words\n", "text/plain; charset=utf-8"),
        ("page", b"  <!DOCTYPE html><html>", "text/html; charset=utf-8"),
        ("archive", b"\x1f\x8b\x08\x00", "application/x-gzip"),
        ("data.JSON", b"\x00", "application/json"),
    ],
)
def test_content_types(name: str, head: bytes, kind: str) -> None:
    assert content_type(name, head) == kind


def test_the_environment_of_an_exporter_pod() -> None:
    config = ServerConfig.from_env(
        {
            **BASE_ENV,
            "DEADLINE": "2030-01-02T03:04:05Z",
            "VOLUME0_EXPORT_PATH": "/export-volumes/disk",
            "VOLUME0_EXPORT_RAW_URI": "/volumes/disk/disk.img",
            "EXPORT_VM_DEF_URI": "/manifests/all",
        }
    )
    assert (config.host, config.port) == (None, 8443)
    assert config.deadline == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert config.paths.volumes[0].raw_uri == "/volumes/disk/disk.img"
    assert config.paths.vm_uri == "/manifests/all"
    assert ServerConfig.from_env(BASE_ENV).deadline is None


@pytest.mark.parametrize("missing", sorted(BASE_ENV))
def test_each_file_is_required(missing: str) -> None:
    env = {key: value for key, value in BASE_ENV.items() if key != missing}
    with pytest.raises(ConfigError, match=missing):
        ServerConfig.from_env(env)


def test_deadlines_are_rfc_3339() -> None:
    assert parse_deadline("2024-05-01T10:00:00.123456789+02:00") == datetime(
        2024, 5, 1, 10, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2))
    )
    for bad in ("2024-05-01", "2024-05-01 10:00:00Z", "2024-13-01T10:00:00Z", "tomorrow"):
        with pytest.raises(ConfigError, match="DEADLINE"):
            parse_deadline(bad)


def test_listen_addresses_are_go_s() -> None:
    assert parse_listen_addr(":8443") == (None, 8443)
    assert parse_listen_addr("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_listen_addr("[::1]:9000") == ("::1", 9000)
    for bad in ("8443", "host:", "host:99999", "host:x"):
        with pytest.raises(ConfigError, match="LISTEN_ADDR"):
            parse_listen_addr(bad)
