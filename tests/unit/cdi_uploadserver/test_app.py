"""The whole process: environment in, exit code and termination message out."""

from __future__ import annotations

import http.client
import socket
import threading
import time

import pytest

from kubevirt.cdi_uploadserver.app import run, termination_message
from kubevirt.cdi_uploadserver.server import RunResult
from kubevirt_api.cdi.constants import Upload
from kubevirt_testing.certificates import KeyPair

from .harness import Claim, Pki, base_env

pytestmark = pytest.mark.timeout(120)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _upload_when_ready(pki: Pki, client: KeyPair, port: int, body: bytes) -> int:
    deadline = time.monotonic() + 30
    while True:
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=pki.context(client), timeout=30)
        try:
            conn.request("POST", Upload.PATH_SYNC, body=body)
            return conn.getresponse().status
        except ConnectionRefusedError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        finally:
            conn.close()


def test_successful_upload_exits_zero_with_upload_complete(
    pki: Pki, client_pair: KeyPair, claim: Claim
) -> None:
    port = _free_port()
    env = {**base_env(pki, claim), "LISTEN_PORT": str(port), "PREALLOCATION": "true"}
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(run(env, claim.paths())))
    thread.start()
    assert _upload_when_ready(pki, client_pair, port, b"\x01" * 4096) == 200
    thread.join(60)
    assert codes == [0]
    assert claim.termination_log.read_text() == '{"preallocationApplied":true,"message":"Upload Complete"}'
    assert claim.disk.read_bytes() == b"\x01" * 4096


def test_deadline_passed_exits_zero_and_says_so(pki: Pki, claim: Claim) -> None:
    env = {**base_env(pki, claim), "DEADLINE": "2000-01-01T00:00:00Z"}
    assert run(env, claim.paths()) == 0
    assert claim.termination_log.read_text() == '{"deadlinePassed":true,"message":"Deadline Passed"}'


def test_missing_server_certificate_exits_one_with_the_reason(pki: Pki, claim: Claim) -> None:
    env = {**base_env(pki, claim), "TLS_KEY_FILE": ""}
    assert run(env, claim.paths()) == 1
    assert claim.termination_log.read_text().startswith("Error getting TLS config: invalid TLS config")


def test_clone_target_completes_as_clone() -> None:
    message = termination_message(RunResult(clone_target=True, preallocation_applied=False))
    assert message.to_json() == '{"preallocationApplied":false,"message":"Clone Complete"}'
