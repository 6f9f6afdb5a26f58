"""http(s) imports end to end: what lands in the claim, the termination message and the exit code."""

from __future__ import annotations

import base64
import json
import re
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubevirt_testing.certificates import self_signed, serving_context

from .conftest import MIB, FileServer, Images, Pod

pytestmark = pytest.mark.integration

SUCCESS = {"scratchSpaceRequired": False, "preallocationApplied": False, "message": "Import Complete"}
# A 64 MiB claim: the image grows to what it holds once CDI's 6 % overhead is set aside.
CLAIM = 64 * MIB
GROWN = 60 * MIB  # round_down(64 MiB / 1.06, 1 MiB)


def _http(url: str, **extra: str) -> dict[str, str]:
    return {"IMPORTER_SOURCE": "http", "IMPORTER_ENDPOINT": url, "IMPORTER_IMAGE_SIZE": str(CLAIM), **extra}


def _same_content(disk: Path, source: Path) -> bool:
    result = subprocess.run(
        ["qemu-img", "compare", "-f", "raw", "-F", "raw", str(source), str(disk)], capture_output=True
    )
    return result.returncode == 0  # a larger image still matches: compare checks the rest reads zero


def _virtual_size(disk: Path) -> int:
    out = subprocess.run(["qemu-img", "info", "--output=json", str(disk)], capture_output=True, check=True)
    return int(json.loads(out.stdout)["virtual-size"])


@pytest.mark.parametrize("name", ["disk.raw", "disk.qcow2", "disk.raw.gz", "disk.raw.xz"])
def test_every_served_form_of_the_disk_lands_as_the_same_raw_image(
    pod: Pod, http_server: FileServer, images: Images, name: str
) -> None:
    result = pod.run(_http(f"{http_server.url}/{name}"))
    assert (result.returncode, json.loads(result.message)) == (0, SUCCESS), result.output
    assert _same_content(pod.disk, images.raw)
    assert _virtual_size(pod.disk) == GROWN
    assert pod.disk.stat().st_mode & 0o777 == 0o660
    assert pod.disk.stat().st_blocks * 512 < 4 * MIB  # the zeros stayed holes
    assert list(pod.scratch.iterdir()) == []  # the staged image is gone
    assert http_server.requests[0]["user-agent"] == "cdi-golang-importer"


def test_raw_data_needs_no_scratch_space(pod: Pod, http_server: FileServer, images: Images) -> None:
    pod.scratch.rmdir()
    result = pod.run(_http(f"{http_server.url}/disk.raw.gz"))
    assert result.returncode == 0, result.output
    assert _same_content(pod.disk, images.raw)


def test_an_image_to_convert_without_scratch_space_asks_for_it(pod: Pod, http_server: FileServer) -> None:
    pod.scratch.rmdir()
    result = pod.run(_http(f"{http_server.url}/disk.qcow2"))
    assert result.returncode == 0, result.output
    assert json.loads(result.message) == {
        "scratchSpaceRequired": True,
        "preallocationApplied": False,
        "message": "Import Complete",
    }
    assert not pod.disk.exists()


def test_a_truncated_qcow2_fails_instead_of_importing_zeros(pod: Pod, http_server: FileServer) -> None:
    result = pod.run(_http(f"{http_server.url}/truncated.qcow2"))
    assert result.returncode == 1
    assert result.message.startswith(
        "Unable to process data: Unable to convert source data to target format: image "
    ), result.message
    assert "is corrupt: qemu-img check found" in result.message
    assert not pod.disk.exists()


def test_text_is_imported_as_raw_data_as_cdi_does(pod: Pod, http_server: FileServer, images: Images) -> None:
    result = pod.run(_http(f"{http_server.url}/notes.txt"))
    assert result.returncode == 0, result.output
    assert pod.disk.read_bytes()[: 41 * 40] == images["notes.txt"].read_bytes()
    assert _virtual_size(pod.disk) == GROWN


def test_an_image_larger_than_the_claim_is_refused_before_download(pod: Pod, http_server: FileServer) -> None:
    result = pod.run(_http(f"{http_server.url}/big.qcow2"))
    assert result.returncode == 1
    assert result.message == (
        f"Unable to process data: virtual image size {10 << 30} is larger than the reported available "
        f"storage {CLAIM}. A larger PVC is required"
    )


def test_raw_data_larger_than_the_claim_is_refused(pod: Pod, http_server: FileServer) -> None:
    result = pod.run(_http(f"{http_server.url}/disk.raw", IMPORTER_IMAGE_SIZE=str(8 * MIB)))
    assert result.returncode == 1
    assert result.message == (
        "Unable to process data: Unable to resize disk image to requested size: virtual image size "
        f"{16 * MIB} is larger than the reported available storage {8 * MIB}. A larger PVC is required"
    )


def test_a_missing_file_is_cdis_status_error(pod: Pod, http_server: FileServer) -> None:
    result = pod.run(_http(f"{http_server.url}/nothing.img"))
    assert result.returncode == 1
    assert result.message == (
        "Unable to connect to http data source: expected status code 200, got 404. Status: 404 Not Found"
    )


def test_an_unreachable_server_is_a_connection_error(pod: Pod) -> None:
    result = pod.run(_http("http://127.0.0.1:1/disk.img"))
    assert result.returncode == 1
    assert result.message.startswith("Unable to connect to http data source: HTTP request errored: ")


def test_credentials_and_extra_headers_are_sent(pod: Pod, http_server: FileServer, images: Images) -> None:
    expected = "Basic " + base64.b64encode(b"user:secret").decode()
    http_server.required_auth.append(expected)
    secret = pod.base / "extraheaders" / "0"
    (secret / "..2024_01_01").mkdir(parents=True)
    (secret / "..2024_01_01" / "token").write_text("x-kubevirt-export-token:hidden")
    (secret / "token").symlink_to(secret / "..2024_01_01" / "token")
    result = pod.run(
        _http(
            f"{http_server.url}/disk.raw.gz",
            IMPORTER_ACCESS_KEY_ID="user",
            IMPORTER_SECRET_KEY="secret",
            IMPORTER_EXTRA_HEADER_0="X-Custom: one",
        )
    )
    assert result.returncode == 0, result.output
    sent = http_server.requests[-1]
    assert sent["authorization"] == expected
    assert sent["x-custom"] == "one"
    assert sent["x-kubevirt-export-token"] == "hidden"
    assert _same_content(pod.disk, images.raw)


@pytest.fixture
def tls_server(
    serve_tls: Callable[[ssl.SSLContext], Iterator[FileServer]], tmp_path: Path
) -> Iterator[FileServer]:
    pair = self_signed("127.0.0.1")
    (tmp_path / "ca").mkdir()
    (tmp_path / "ca" / "ca.pem").write_bytes(pair.cert_pem)
    yield from serve_tls(serving_context(pair, tmp_path / "ca", name="serving"))


def test_https_is_trusted_through_the_cert_config_map(
    pod: Pod, tls_server: FileServer, tmp_path: Path
) -> None:
    untrusted = pod.run(_http(f"{tls_server.url}/disk.raw.gz"))
    assert untrusted.returncode == 1
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.message
    certs = tmp_path / "certs"
    certs.mkdir()
    (certs / "ca.pem").write_bytes((tmp_path / "ca" / "ca.pem").read_bytes())
    (certs / "..data").mkdir()  # a mounted ConfigMap's bookkeeping is skipped
    trusted = pod.run(_http(f"{tls_server.url}/disk.raw.gz", IMPORTER_CERT_DIR=str(certs)))
    assert trusted.returncode == 0, trusted.output


def test_an_archive_is_unpacked_into_the_volume(pod: Pod, http_server: FileServer) -> None:
    result = pod.run(_http(f"{http_server.url}/files.tar", IMPORTER_CONTENTTYPE="archive"))
    assert result.returncode == 0, result.output
    assert (pod.data / "a.txt").read_text() == "first"
    assert (pod.data / "dir" / "b.txt").read_text() == "second"
    assert not pod.disk.exists()


def test_progress_is_served_over_https_while_the_download_runs(pod: Pod, http_server: FileServer) -> None:
    process = pod.start(_http(f"{http_server.url}/slow/disk.raw.xz"))
    try:
        value = _scrape_progress(pod.metrics_port)
    finally:
        http_server.hold.set()
        result = pod.finish(process)
    assert 40.0 <= value <= 60.0  # half the bytes were sent
    assert result.returncode == 0, result.output


def _scrape_progress(port: int) -> float:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # self-signed, as CDI's controller accepts it
    pattern = re.compile(r'kubevirt_cdi_import_progress_total\{ownerUID="owner-uid-1"\} (\d{1,3}\.?\d*)')
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}/metrics", context=context, timeout=2
            ) as response:
                match = pattern.search(response.read().decode())
            if match and float(match.group(1)) > 0:
                return float(match.group(1))
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("no progress was served")


def test_a_blank_image_fills_the_usable_space(pod: Pod) -> None:
    result = pod.run({"IMPORTER_SOURCE": "none", "IMPORTER_IMAGE_SIZE": str(CLAIM)})
    assert result.returncode == 0, result.output
    assert json.loads(result.message) == {"preallocationApplied": False, "message": "Import Complete"}
    assert _virtual_size(pod.disk) == GROWN
    assert pod.disk.stat().st_mode & 0o777 == 0o660


def test_a_blank_archive_is_refused(pod: Pod) -> None:
    result = pod.run(
        {"IMPORTER_SOURCE": "none", "IMPORTER_IMAGE_SIZE": str(CLAIM), "IMPORTER_CONTENTTYPE": "archive"}
    )
    assert (result.returncode, result.message) == (1, "Cannot create empty disk with content type archive")


def test_an_unknown_source_and_bad_configuration_are_reported(pod: Pod) -> None:
    assert pod.run({"IMPORTER_SOURCE": "ftp"}).message == "Unknown data source: ftp"
    bad = pod.run({"IMPORTER_SOURCE": "http", "PREALLOCATION": "maybe"})
    assert bad.returncode == 1
    assert "PREALLOCATION environment variable is with a wrong value" in bad.message
