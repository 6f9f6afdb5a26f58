"""Host-assisted clones end to end, in process: cdi-cloner's run streams a source claim (a folder
holding disk.img, or a file standing for a block device) to a real upload server over mutual TLS."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import cramjam
import pytest

from kubevirt.cdi_cloner.app import run as run_cloner
from kubevirt.cdi_uploadserver import clone
from kubevirt.cdi_uploadserver.processing import CONTENT_TYPE_HEADER
from kubevirt.cdi_uploadserver.server import RunResult
from kubevirt_api.cdi.constants import Upload
from kubevirt_testing.certificates import KeyPair

from .harness import Claim, Pki, Running, ServeFactory

MIB = 1 << 20
CLONE_CLIENT = "srcns/src-tgtns/tgt"  # what the controller names a clone's client
pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def clone_client(pki: Pki) -> KeyPair:
    return pki.client_ca.issue(CLONE_CLIENT, client=True)


def pattern(size: int) -> bytes:
    block = bytes((7 + i * 31) % 251 + 1 for i in range(4096))
    return (block * (size // len(block) + 1))[:size]


def sparse_image(path: Path, size: int = 32 * MIB) -> bytes:
    """Data here and there, holes between: what a raw disk image mostly is."""
    with path.open("wb") as handle:
        handle.write(pattern(MIB))
        handle.seek(20 * MIB)
        handle.write(pattern(MIB + 123))
        handle.truncate(size)
    return path.read_bytes()


def cloner_env(running: Running, pki: Pki, client: KeyPair, mode: str, mount: Path) -> dict[str, str]:
    return {
        "VOLUME_MODE": mode,
        "MOUNT_POINT": str(mount),
        "OWNER_UID": "dv-uid",
        "CLIENT_KEY": client.key_pem.decode(),
        "CLIENT_CERT": client.cert_pem.decode(),
        "SERVER_CA_CERT": pki.server_ca.pair.cert_pem.decode(),
        "UPLOAD_URL": f"https://127.0.0.1:{running.server.port}{Upload.PATH_SYNC}",
        "PREALLOCATION": "false",
    }


def clone_once(env: dict[str, str], log: Path) -> tuple[int, str]:
    code = run_cloner(env, termination_log=log, metrics_port=None)
    return code, log.read_text()


def test_filesystem_source_arrives_file_for_file(
    serve: ServeFactory, claim: Claim, pki: Pki, clone_client: KeyPair, tmp_path: Path
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    image = sparse_image(source / "disk.img")
    (source / "lost+found").mkdir()
    (source / "notes").mkdir()
    (source / "notes" / "readme").write_bytes(b"kept")
    running = serve(CLIENT_NAME=CLONE_CLIENT)
    env = cloner_env(running, pki, clone_client, "filesystem", source)
    assert clone_once(env, tmp_path / "cloner-log") == (0, "Clone Complete")
    assert running.join() == RunResult(clone_target=True, preallocation_applied=True)
    assert claim.disk.read_bytes() == image
    assert claim.disk.stat().st_blocks * 512 < 4 * MIB  # the holes came across as holes
    assert (claim.data / "notes" / "readme").read_bytes() == b"kept"
    assert not (claim.data / "lost+found").exists()


def test_preallocated_filesystem_source_is_written_in_full(
    serve: ServeFactory, claim: Claim, pki: Pki, clone_client: KeyPair, tmp_path: Path
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    image = sparse_image(source / "disk.img", 8 * MIB)
    running = serve(CLIENT_NAME=CLONE_CLIENT, PREALLOCATION="true")
    env = {**cloner_env(running, pki, clone_client, "filesystem", source), "PREALLOCATION": "true"}
    assert clone_once(env, tmp_path / "cloner-log") == (0, "Clone Complete, Preallocation applied")
    assert running.join() == RunResult(clone_target=True, preallocation_applied=True)
    assert claim.disk.read_bytes() == image
    assert claim.disk.stat().st_blocks * 512 >= 8 * MIB


def test_block_source_arrives_byte_for_byte(
    serve: ServeFactory, claim: Claim, pki: Pki, clone_client: KeyPair, tmp_path: Path
) -> None:
    device = tmp_path / "cdi-block-volume"  # a file standing for the source device
    data = sparse_image(device, 24 * MIB)
    running = serve(CLIENT_NAME=CLONE_CLIENT)
    env = cloner_env(running, pki, clone_client, "block", device)
    assert clone_once(env, tmp_path / "cloner-log") == (0, "Clone Complete")
    assert running.join() == RunResult(clone_target=True, preallocation_applied=False)
    assert claim.disk.read_bytes() == data
    assert claim.disk.stat().st_blocks * 512 < 4 * MIB  # zeros written as holes without preallocation


def test_filesystem_source_into_a_block_target_takes_the_disk_image(
    serve: ServeFactory,
    claim: Claim,
    pki: Pki,
    clone_client: KeyPair,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "a-first-file").write_bytes(b"not the image")
    image = sparse_image(source / "disk.img", 6 * MIB)
    target = tmp_path / "target-device"  # no device here: the target is taken for one
    monkeypatch.setattr(clone, "is_block_target", lambda destination: destination == target)
    running = serve(CLIENT_NAME=CLONE_CLIENT, DESTINATION=str(target))
    env = cloner_env(running, pki, clone_client, "filesystem", source)
    assert clone_once(env, tmp_path / "cloner-log") == (0, "Clone Complete")
    assert running.join() == RunResult(clone_target=True, preallocation_applied=False)
    assert target.read_bytes() == image
    assert not (tmp_path / "a-first-file").exists()


def test_a_client_with_another_name_is_refused(
    serve: ServeFactory, claim: Claim, pki: Pki, tmp_path: Path
) -> None:
    device = tmp_path / "device"
    sparse_image(device, MIB)
    running = serve(CLIENT_NAME=CLONE_CLIENT)
    stranger = pki.client_ca.issue("srcns/other-tgtns/tgt", client=True)
    env = cloner_env(running, pki, stranger, "block", device)
    assert clone_once(env, tmp_path / "cloner-log") == (255, "Unexpected status code 401")
    assert not claim.disk.exists()
    # The rightful client still gets through afterwards.
    rightful = pki.client_ca.issue(CLONE_CLIENT, client=True)
    assert clone_once(cloner_env(running, pki, rightful, "block", device), tmp_path / "log2")[0] == 0
    assert running.join() == RunResult(clone_target=True, preallocation_applied=False)


def test_the_upload_clients_name_is_no_clone_client(
    serve: ServeFactory, pki: Pki, client_pair: KeyPair, tmp_path: Path
) -> None:
    device = tmp_path / "device"
    sparse_image(device, MIB)
    running = serve(CLIENT_NAME=CLONE_CLIENT)
    env = cloner_env(running, pki, client_pair, "block", device)
    assert clone_once(env, tmp_path / "cloner-log") == (255, "Unexpected status code 401")
    running.cancel()


def test_a_corrupt_clone_body_fails_with_500_and_can_be_retried(
    serve: ServeFactory, claim: Claim, clone_client: KeyPair
) -> None:
    running = serve(CLIENT_NAME=CLONE_CLIENT)
    headers = {CONTENT_TYPE_HEADER: clone.BLOCKDEVICE_CLONE}
    reply = running.request(Upload.PATH_SYNC, b"plainly not snappy", headers=headers, client=clone_client)
    assert reply.status == 500
    assert reply.body.decode().startswith("Saving stream failed: ")
    assert "snappy" in reply.body.decode()
    body = bytes(cramjam.snappy.compress(b"\x05" * 4096))
    assert running.request(Upload.PATH_SYNC, body, headers=headers, client=clone_client).status == 200
    assert running.join() == RunResult(clone_target=True, preallocation_applied=False)
    assert claim.disk.read_bytes() == b"\x05" * 4096


def test_a_filesystem_clone_without_a_disk_image_into_a_block_target_fails(
    serve: ServeFactory, clone_client: KeyPair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "target-device"
    monkeypatch.setattr(clone, "is_block_target", lambda destination: destination == target)
    running = serve(CLIENT_NAME=CLONE_CLIENT, DESTINATION=str(target))
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        info = tarfile.TarInfo("other")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"abc"))
    body = bytes(cramjam.snappy.compress(archive.getvalue()))
    headers = {CONTENT_TYPE_HEADER: clone.FILESYSTEM_CLONE}
    reply = running.request(Upload.PATH_SYNC, body, headers=headers, client=clone_client)
    assert (reply.status, reply.body) == (500, b"Saving stream failed: no disk image found in tar")
    running.cancel()


def test_async_clone_is_refused(serve: ServeFactory, clone_client: KeyPair) -> None:
    running = serve(CLIENT_NAME=CLONE_CLIENT)
    headers = {CONTENT_TYPE_HEADER: clone.FILESYSTEM_CLONE}
    reply = running.request(Upload.PATH_ASYNC, b"", headers=headers, client=clone_client)
    assert (reply.status, reply.body) == (500, b"Saving stream failed: async clone not supported")
    running.cancel()


def test_block_target_is_told_by_cdis_path() -> None:
    assert clone.is_block_target(Path("/dev/cdi-block-volume"))
    assert not clone.is_block_target(Path("/data/disk.img"))
    assert not clone.is_block_target(Path("/dev/null"))  # a character device
