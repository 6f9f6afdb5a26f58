"""virt-operator's /healthz reads the API server's /version, as the other components' do, and says 500 with
the reason when it cannot."""

from __future__ import annotations

import json
import socket
from typing import Any

import urllib3

from kubevirt.client import KubeClient
from kubevirt.client.connection import Connection
from kubevirt.virt_operator.app import Options, VirtOperator

JSON = dict[str, Any]
VERSION = {"major": "1", "minor": "33", "gitVersion": "v1.33.1"}


class _Configuration:
    def auth_settings(self) -> dict[str, Any]:
        return {}

    def get_basic_auth_token(self) -> None:
        return None


class _Response:
    def __init__(self, status: int, body: JSON) -> None:
        self.status = status
        self.data = json.dumps(body).encode()

    def release_conn(self) -> None:
        pass


class _VersionServer:
    """A connection pool standing in for an API server that answers /version."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def request(self, method: str, url: str, **_kwargs: Any) -> _Response:
        self.paths.append(f"{method} {url}")
        if url.endswith("/version"):
            return _Response(200, VERSION)
        return _Response(404, {"kind": "Status", "code": 404, "reason": "NotFound"})


def _operator(host: str, pool: Any) -> VirtOperator:
    api = KubeClient(Connection(host, pool, _Configuration()))
    return VirtOperator(api, Options(namespace="kubevirt", operator_image="reg.test/virt-operator:v1"))


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_healthz_is_500_with_the_reason_when_the_api_server_cannot_be_reached() -> None:
    operator = _operator(f"https://127.0.0.1:{_closed_port()}", urllib3.PoolManager())
    status, body = operator.probes()["/healthz"]()
    assert status == 500
    assert body["apiserver"]["connectivity"] == "failed"
    assert "GET /version" in body["apiserver"]["error"]
    assert body["config-resource-version"] == ""


def test_healthz_reports_the_api_servers_version_once_read() -> None:
    server = _VersionServer()
    operator = _operator("https://api.test:6443", server)
    healthz = operator.probes()["/healthz"]
    expected = {"apiserver": {"connectivity": "ok", "version": VERSION}, "config-resource-version": ""}
    assert healthz() == (200, expected)
    assert healthz() == (200, expected)
    # Read once and remembered, as KubeVirt does.
    assert server.paths == ["GET https://api.test:6443/version"]
