"""The clone source process: environment in, exit code and termination message out."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kubevirt.cdi_cloner.app import run
from kubevirt_testing.certificates import CertificateAuthority

pytestmark = pytest.mark.timeout(120)


def env_for(tmp_path: Path, **changes: str) -> dict[str, str]:
    device = tmp_path / "device"
    device.write_bytes(b"\x01" * 4096)
    return {
        "VOLUME_MODE": "block",
        "MOUNT_POINT": str(device),
        "OWNER_UID": "uid",
        "CLIENT_KEY": "key",
        "CLIENT_CERT": "cert",
        "SERVER_CA_CERT": "ca",
        "UPLOAD_URL": "https://127.0.0.1:1/v1beta1/upload",
        "PREALLOCATION": "false",
        **changes,
    }


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_missing_variable_is_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "termination-log"
    env = env_for(tmp_path)
    del env["UPLOAD_URL"]
    assert run(env, termination_log=log, metrics_port=None) == 255
    assert log.read_text() == "Error getting env var UPLOAD_URL"
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err


def test_the_startup_scripts_own_checks_exit_one(tmp_path: Path) -> None:
    log = tmp_path / "termination-log"
    assert run(env_for(tmp_path, VOLUME_MODE=""), termination_log=log, metrics_port=None) == 1
    assert log.read_text() == "VOLUME_MODE missing"


def test_a_missing_source_device_fails(tmp_path: Path) -> None:
    log = tmp_path / "termination-log"
    env = env_for(tmp_path, MOUNT_POINT=str(tmp_path / "absent"))
    assert run(env, termination_log=log, metrics_port=None) == 1
    assert log.read_text().startswith(f"Unable to measure {tmp_path / 'absent'}")


def test_an_unreachable_server_is_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A real key pair, so that it is the connection that fails.
    ca = CertificateAuthority.create("signer")
    pair = ca.issue("srcns/src-tgtns/tgt", client=True)
    url = f"https://127.0.0.1:{_closed_port()}/v1beta1/upload"
    env = env_for(
        tmp_path,
        UPLOAD_URL=url,
        CLIENT_KEY=pair.key_pem.decode(),
        CLIENT_CERT=pair.cert_pem.decode(),
        SERVER_CA_CERT=ca.pair.cert_pem.decode(),
    )
    log = tmp_path / "termination-log"
    assert run(env, termination_log=log, metrics_port=None) == 255
    message = log.read_text()
    assert message.startswith("Error ")
    assert message.endswith(f"POSTing to {url}")
    assert "refused" in message.lower()
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err


def test_a_bad_key_pair_fails_before_sending(tmp_path: Path) -> None:
    log = tmp_path / "termination-log"
    assert run(env_for(tmp_path), termination_log=log, metrics_port=None) == 255
    assert "creating client keypair" in log.read_text()
