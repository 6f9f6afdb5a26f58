"""Disk images and archives downloaded from a real export server: raw (with ranges and HEAD), gzipped on
the fly, and a directory volume as tar.gz."""

from __future__ import annotations

import email
import errno
import gzip
import http.client
import io
import os
import ssl
import stat
import tarfile
import time
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from kubevirt_testing.export_server import BLOCK, DISK, TOKEN, Exporter, exporter_running

pytestmark = pytest.mark.timeout(60)

RAW = "/volumes/fs-disk/disk.img"
GZ = "/volumes/fs-disk/disk.img.gz"
ARCHIVE = "/volumes/files/disk.tar.gz"
# How http.client reports a response cut short.
TRUNCATED = (http.client.IncompleteRead, http.client.RemoteDisconnected, ConnectionError, ssl.SSLError)


def test_raw_download_is_the_disk_image_inside_the_filesystem_volume(exporter: Exporter) -> None:
    reply = exporter.request(RAW)
    assert reply.status == 200
    assert reply.body == DISK
    assert reply.headers["Content-Length"] == str(len(DISK))
    assert reply.headers["Accept-Ranges"] == "bytes"
    assert reply.headers["Content-Type"] == "application/octet-stream"
    assert "Last-Modified" not in reply.headers  # KubeVirt serves disk.img without a time


def test_a_block_volume_is_served_from_the_device_itself(exporter: Exporter) -> None:
    assert exporter.request("/volumes/block-disk/disk.img").body == BLOCK
    assert gzip.decompress(exporter.request("/volumes/block-disk/disk.img.gz").body) == BLOCK


def test_head_gives_the_headers_without_the_body(exporter: Exporter) -> None:
    reply = exporter.request(RAW, method="HEAD")
    assert reply.status == 200
    assert reply.headers["Content-Length"] == str(len(DISK))
    assert reply.body == b""


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [
        ("bytes=10-19", 10, 19),
        ("bytes=-16", len(DISK) - 16, len(DISK) - 1),
        ("bytes=1048570-", 1048570, len(DISK) - 1),
        ("bytes=5-99999999", 5, len(DISK) - 1),
    ],
)
def test_one_range_answers_206_with_that_slice(exporter: Exporter, header: str, start: int, end: int) -> None:
    reply = exporter.request(RAW, headers={"Range": header})
    assert reply.status == 206
    assert reply.body == DISK[start : end + 1]
    assert reply.headers["Content-Range"] == f"bytes {start}-{end}/{len(DISK)}"
    assert reply.headers["Content-Length"] == str(end - start + 1)


def test_several_ranges_answer_multipart_byteranges(exporter: Exporter) -> None:
    reply = exporter.request(RAW, headers={"Range": "bytes=0-3, 300-309"})
    assert reply.status == 206
    assert reply.headers["Content-Length"] == str(len(reply.body))
    document = email.message_from_bytes(
        f"Content-Type: {reply.headers['Content-Type']}\r\n\r\n".encode() + reply.body
    )
    assert document.get_content_type() == "multipart/byteranges"
    parts = document.get_payload()
    assert isinstance(parts, list)
    assert [_part(p) for p in parts] == [
        (f"bytes 0-3/{len(DISK)}", DISK[0:4]),
        (f"bytes 300-309/{len(DISK)}", DISK[300:310]),
    ]


def _part(part: object) -> tuple[str, bytes]:
    assert isinstance(part, Message)
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return str(part["Content-Range"]), payload


@pytest.mark.parametrize(
    ("header", "message", "content_range"),
    [
        (f"bytes={len(DISK)}-", "invalid range: failed to overlap", f"bytes */{len(DISK)}"),
        ("bytes=9-3", "invalid range", None),
        ("items=0-3", "invalid range", None),
    ],
)
def test_unsatisfiable_ranges_answer_416(
    exporter: Exporter, header: str, message: str, content_range: str | None
) -> None:
    reply = exporter.request(RAW, headers={"Range": header})
    assert reply.status == 416
    assert reply.body == (message + "\n").encode()
    assert reply.headers.get("Content-Range") == content_range


def test_ranges_larger_than_the_file_together_are_ignored(exporter: Exporter) -> None:
    reply = exporter.request(RAW, headers={"Range": "bytes=0-,0-"})
    assert (reply.status, reply.body) == (200, DISK)


def test_conditions_without_an_etag(exporter: Exporter) -> None:
    assert exporter.request(RAW, headers={"If-Match": '"abc"'}).status == 412
    assert exporter.request(RAW, headers={"If-None-Match": "*"}).status == 304
    ranged = exporter.request(RAW, headers={"Range": "bytes=0-3", "If-Range": '"abc"'})
    assert (ranged.status, ranged.body) == (200, DISK)  # an entity tag never matches: the whole file


def test_gzip_download_decompresses_to_the_disk_image(exporter: Exporter) -> None:
    reply = exporter.request(GZ)
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/x-gzip"
    assert reply.headers["Transfer-Encoding"] == "chunked"
    assert gzip.decompress(reply.body) == DISK


@pytest.mark.parametrize("path", [GZ, ARCHIVE])
@pytest.mark.parametrize("method", ["HEAD", "POST", "PUT"])
def test_compressed_downloads_answer_only_get(exporter: Exporter, path: str, method: str) -> None:
    assert exporter.request(path, method=method).status == 400


def test_the_archive_holds_the_directory_volume(exporter: Exporter) -> None:
    reply = exporter.request(ARCHIVE)
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/x-gzip"
    with tarfile.open(fileobj=io.BytesIO(reply.body), mode="r:gz") as archive:
        members = {member.name: member for member in archive.getmembers()}
        alpha = archive.extractfile("./a.txt")
        assert alpha is not None
        assert alpha.read() == b"alpha\n"
        nested = archive.extractfile("./sub/nested.json")
        assert nested is not None
        assert nested.read() == b'{"n": 1}'
    assert "./lost+found" not in members
    # Symlinks are archived as links: what they point to outside the volume is never read.
    assert members["./escape-absolute"].issym()
    assert members["./escape-absolute"].linkname == "/etc/passwd"
    assert stat.S_ISFIFO(members["./pipe"].mode) or members["./pipe"].isfifo()


def test_an_unreadable_entry_fails_the_archive_with_500(
    exporter: Exporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root reads any file, so the refusal a non-root exporter meets is made by the open itself.
    real_open = os.open

    def refusing(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if path == "a.txt" and dir_fd is not None:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", refusing)
    reply = exporter.request(ARCHIVE)
    assert (reply.status, reply.body) == (500, b"")


def test_a_failing_tar_aborts_the_transfer(tmp_path: Path) -> None:
    # Some archive bytes, then a fatal error: the client must not get a complete-looking archive.
    tar = tmp_path / "failing-tar"
    tar.write_text("#!/bin/sh\nhead -c 100000 /dev/urandom\necho 'tar: fatal' >&2\nexit 2\n")
    tar.chmod(0o755)
    served = tmp_path / "served"
    served.mkdir()
    with exporter_running(served, tar=str(tar)) as exporter, pytest.raises(TRUNCATED):
        exporter.request(ARCHIVE)


def test_a_client_that_goes_away_stops_the_archive(exporter: Exporter) -> None:
    (exporter.root / "export-volumes" / "files" / "big.bin").write_bytes(os.urandom(32 << 20))
    conn = http.client.HTTPSConnection("127.0.0.1", exporter.port, context=exporter.context(), timeout=30)
    conn.request("GET", ARCHIVE, headers={"x-kubevirt-export-token": TOKEN})
    reply = conn.getresponse()
    assert reply.read(1 << 16)
    assert _tar_children(), "tar should be running while the archive streams"
    conn.close()
    deadline = time.monotonic() + 20
    while _tar_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _tar_children(), "tar outlived the download it was started for"


def _tar_children() -> list[int]:
    """This process's child processes running tar (the server runs in a thread of this process)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and comm == "tar":
            found.append(int(entry.name))
    return found
