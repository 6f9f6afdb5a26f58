"""The agents' HTTPS endpoint: probes and /metrics over TLS, and a rotated certificate served without a
restart."""

from __future__ import annotations

import json
import ssl
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.service.probes import ProbeServer
from kubevirt_testing.certificates import self_signed, write_pair


def _get(server: ProbeServer, path: str) -> tuple[int, bytes, bytes]:
    """Status, body and the DER certificate the server presented."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    url = f"https://127.0.0.1:{server.port}{path}"
    try:
        with urllib.request.urlopen(url, context=context, timeout=10) as answer:
            return (
                answer.status,
                answer.read(),
                ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate(("127.0.0.1", server.port))),
            )
    except urllib.error.HTTPError as err:
        return err.code, err.read(), b""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ProbeServer, Path]]:
    write_pair(self_signed("first"), tmp_path)
    server = ProbeServer(
        "127.0.0.1",
        0,
        cert_file=tmp_path / "tls.crt",
        key_file=tmp_path / "tls.key",
        probes={"/leader": lambda: (200, {"apiserver": {"leader": "true"}})},
        cert_reload_interval=0.1,
    )
    server.start()
    yield server, tmp_path
    server.stop()


def test_probes_and_metrics_are_served_over_tls(served: tuple[ProbeServer, Path]) -> None:
    server, _ = served
    status, body, _ = _get(server, "/leader")
    assert (status, json.loads(body)) == (200, {"apiserver": {"leader": "true"}})
    status, body, _ = _get(server, "/metrics")
    assert status == 200
    assert b"# TYPE" in body
    assert _get(server, "/nothing")[0] == 404


def test_a_rotated_certificate_is_served_without_a_restart(served: tuple[ProbeServer, Path]) -> None:
    server, directory = served
    second = self_signed("second")
    write_pair(second, directory)
    deadline = time.monotonic() + 10
    while _get(server, "/leader")[2] != second.cert_der:
        assert time.monotonic() < deadline, "the renewed certificate was never served"
        time.sleep(0.1)
