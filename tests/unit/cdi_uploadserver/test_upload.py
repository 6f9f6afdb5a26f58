"""Uploads through a real upload server over mutual TLS into a temporary claim."""

from __future__ import annotations

import gzip
import http.client
import io
import json
import ssl
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.cdi_uploadserver.processing import NO_CAPACITY
from kubevirt.cdi_uploadserver.server import RunResult, ServerError
from kubevirt_api.cdi.constants import Upload
from kubevirt_testing.certificates import CertificateAuthority

from .harness import Claim, Pki, Running, ServeFactory

MIB = 1 << 20
pytestmark = pytest.mark.timeout(120)


def pattern(size: int, seed: int = 7) -> bytes:
    """Data with no zero block, so that every byte lands on disk as it is written."""
    block = bytes((seed + i * 31) % 251 + 1 for i in range(4096))
    return (block * (size // len(block) + 1))[:size]


def chunks(data: bytes, size: int = 256 << 10) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def qemu_info(path: Path) -> dict[str, object]:
    out = subprocess.run(["qemu-img", "info", "--output=json", str(path)], check=True, capture_output=True)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def make_qcow2(tmp_path: Path, data: bytes, virtual_size: int | None = None) -> bytes:
    raw, qcow2 = tmp_path / "src.raw", tmp_path / "src.qcow2"
    raw.write_bytes(data)
    if virtual_size is not None:
        subprocess.run(["qemu-img", "resize", "-f", "raw", str(raw), str(virtual_size)], check=True)
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(qcow2)], check=True)
    return qcow2.read_bytes()


def start_upload(running: Running, data: bytes, sent: int) -> http.client.HTTPSConnection:
    """A sync upload of ``data`` whose first ``sent`` bytes are sent; the caller sends the rest."""
    conn = running.connect()
    conn.putrequest("POST", Upload.PATH_SYNC)
    conn.putheader("Content-Length", str(len(data)))
    conn.endheaders()
    conn.send(data[:sent])
    return conn


def test_healthz_answers_without_a_client_certificate(serve: ServeFactory) -> None:
    running = serve()
    reply = running.request(Upload.HEALTHZ, method="GET", client=None)
    assert (reply.status, reply.body) == (200, b"OK")


def test_raw_upload_streams_into_the_claim_and_completes(serve: ServeFactory, claim: Claim) -> None:
    data = pattern(6 * MIB)
    running = serve()
    conn = start_upload(running, data, 3 * MIB)
    # The first half is on disk before the second is sent: the body is streamed, not buffered whole.
    deadline = time.monotonic() + 30
    while not (claim.disk.exists() and claim.disk.stat().st_blocks * 512 >= 2 * MIB):
        assert time.monotonic() < deadline, "nothing written while the body was still coming"
        time.sleep(0.05)
    for chunk in chunks(data[3 * MIB :]):
        conn.send(chunk)
    response = conn.getresponse()
    assert (response.status, response.read()) == (200, b"")
    conn.close()
    assert running.join() == RunResult(preallocation_applied=False)
    assert claim.disk.read_bytes() == data
    assert qemu_info(claim.disk)["format"] == "raw"
    assert claim.disk.stat().st_mode & 0o777 == 0o660


def test_raw_upload_is_grown_to_the_requested_size(serve: ServeFactory, claim: Claim) -> None:
    data = pattern(MIB)
    running = serve(UPLOAD_IMAGE_SIZE="4Mi")
    reply = running.request(Upload.PATH_SYNC, chunks(data, 64 << 10))
    assert reply.status == 200
    running.join()
    assert qemu_info(claim.disk)["virtual-size"] == 4 * MIB
    assert claim.disk.read_bytes() == data + bytes(3 * MIB)


def test_qcow2_upload_is_converted_to_raw(serve: ServeFactory, claim: Claim, tmp_path: Path) -> None:
    data = pattern(3 * MIB)
    image = make_qcow2(tmp_path, data)
    running = serve(UPLOAD_IMAGE_SIZE="8Mi")
    reply = running.request("/v1alpha1/upload", chunks(image))
    assert reply.status == 200, reply.body
    assert running.join() == RunResult(preallocation_applied=False)
    assert qemu_info(claim.disk)["format"] == "raw"
    assert qemu_info(claim.disk)["virtual-size"] == 8 * MIB
    assert claim.disk.read_bytes()[: len(data)] == data
    assert not (claim.scratch / "tmpimage").exists()


def test_compressed_upload_is_decompressed(serve: ServeFactory, claim: Claim) -> None:
    data = pattern(2 * MIB)
    running = serve()
    assert running.request(Upload.PATH_SYNC, gzip.compress(data, 1)).status == 200
    running.join()
    assert claim.disk.read_bytes() == data


def test_image_larger_than_the_claim_is_refused_with_400(
    serve: ServeFactory, claim: Claim, tmp_path: Path
) -> None:
    image = make_qcow2(tmp_path, pattern(MIB), virtual_size=64 * MIB)
    running = serve(UPLOAD_IMAGE_SIZE="16Mi")
    reply = running.request(Upload.PATH_SYNC, image)
    assert reply.status == 400
    assert reply.body.decode() == f"Saving stream failed: {NO_CAPACITY}"


def test_failed_upload_can_be_retried(serve: ServeFactory, claim: Claim) -> None:
    running = serve()
    reply = running.request(Upload.PATH_SYNC, b"too short for a header")
    assert reply.status == 500
    assert reply.body.decode().startswith(
        "Saving stream failed: Unable to obtain information about data source"
    )
    data = pattern(MIB)
    assert running.request(Upload.PATH_SYNC, data).status == 200
    running.join()
    assert claim.disk.read_bytes() == data


def test_form_upload_takes_the_file_field(serve: ServeFactory, claim: Claim) -> None:
    data = pattern(2 * MIB)
    boundary = "upload-boundary-1234"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\nignored\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="disk.img"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    running = serve()
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    reply = running.request(Upload.PATH_FORM_SYNC, chunks(body), headers=headers)
    assert reply.status == 200, reply.body
    running.join()
    assert claim.disk.read_bytes() == data


def test_form_upload_without_a_form_is_a_bad_request(serve: ServeFactory) -> None:
    running = serve()
    reply = running.request(Upload.PATH_FORM_SYNC, pattern(MIB))
    assert reply.status == 400


def test_async_upload_answers_and_converts_in_the_background(
    serve: ServeFactory, claim: Claim, tmp_path: Path
) -> None:
    data = pattern(2 * MIB)
    image = make_qcow2(tmp_path, data)
    running = serve()
    assert running.request(Upload.PATH_ASYNC, method="HEAD", client=None).status == 200
    reply = running.request(Upload.PATH_ASYNC, chunks(image))
    assert (reply.status, reply.body) == (200, b"")
    assert running.join() == RunResult(preallocation_applied=False)
    assert claim.disk.read_bytes()[: len(data)] == data


def test_archive_upload_is_unpacked_into_the_claim(serve: ServeFactory, claim: Claim) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content in (("a.txt", b"first"), ("dir/b.bin", pattern(MIB))):
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    running = serve()
    assert running.request(Upload.PATH_ARCHIVE, buffer.getvalue()).status == 200
    running.join()
    assert (claim.data / "a.txt").read_bytes() == b"first"
    assert (claim.data / "dir" / "b.bin").read_bytes() == pattern(MIB)


@pytest.mark.parametrize("client", [None, "wrong-name"])
def test_upload_without_the_client_name_is_unauthorized(
    serve: ServeFactory, pki: Pki, client: str | None, claim: Claim
) -> None:
    pair = pki.client_ca.issue(client, client=True) if client else None
    running = serve()
    reply = running.request(Upload.PATH_SYNC, pattern(MIB), client=pair)
    assert reply.status == 401
    assert not claim.disk.exists()


def test_client_certificate_from_another_ca_fails_the_handshake(serve: ServeFactory) -> None:
    stranger = CertificateAuthority.create("someone-else").issue(Upload.CLIENT_NAME, client=True)
    running = serve()
    with pytest.raises((ssl.SSLError, ConnectionError)):
        running.request(Upload.PATH_SYNC, pattern(MIB), client=stranger)


def test_only_post_uploads(serve: ServeFactory) -> None:
    running = serve()
    assert running.request(Upload.PATH_SYNC, method="GET").status == 404
    assert running.request("/v1beta1/elsewhere", method="GET").status == 404


def test_concurrent_upload_is_refused_while_one_is_in_flight(serve: ServeFactory, claim: Claim) -> None:
    data = pattern(2 * MIB)
    running = serve()
    first = start_upload(running, data, MIB)
    deadline = time.monotonic() + 30
    while not claim.disk.exists():  # the first upload is being written
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second = running.request(Upload.PATH_SYNC, pattern(MIB))
    assert second.status == 503
    first.send(data[MIB:])
    assert first.getresponse().status == 200
    first.close()
    running.join()
    assert claim.disk.read_bytes() == data


def test_deadline_without_an_upload_ends_the_server(serve: ServeFactory) -> None:
    running = serve(DEADLINE=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1)))
    assert running.join() == RunResult(deadline_passed=True)


def test_deadline_waits_for_the_upload_in_flight(serve: ServeFactory, claim: Claim) -> None:
    data = pattern(2 * MIB)
    running = serve(DEADLINE=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2)))
    conn = start_upload(running, data, MIB)
    time.sleep(3)  # past the deadline, the upload still coming
    conn.send(data[MIB:])
    assert conn.getresponse().status == 200
    conn.close()
    assert running.join() == RunResult(preallocation_applied=False)


def test_server_keeps_serving_health_while_an_upload_runs(serve: ServeFactory, claim: Claim) -> None:
    data = pattern(2 * MIB)
    running = serve()
    upload = start_upload(running, data, MIB)
    assert running.request(Upload.HEALTHZ, method="GET", client=None).status == 200
    upload.send(data[MIB:])
    assert upload.getresponse().status == 200
    upload.close()
    running.join()


def test_failed_background_conversion_ends_the_server_with_an_error(
    serve: ServeFactory, claim: Claim, tmp_path: Path
) -> None:
    image = make_qcow2(tmp_path, pattern(4 * MIB))
    truncated = image[: len(image) // 2]  # its header still reads: the damage shows when converting
    running = serve()
    assert running.request(Upload.PATH_ASYNC, truncated).status == 200
    assert running.join() is None
    assert isinstance(running.error, ServerError)
    assert "Unable to convert source data to target format" in str(running.error)
