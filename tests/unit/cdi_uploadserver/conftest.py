"""The fixtures of the upload server's tests (see :mod:`.harness`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.cdi_uploadserver.config import ServerConfig
from kubevirt_api.cdi.constants import Upload
from kubevirt_testing.certificates import CertificateAuthority, KeyPair, write_pair

from .harness import Claim, Pki, Running, ServeFactory, base_env


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    root = tmp_path_factory.mktemp("pki")
    server_ca = CertificateAuthority.create("cdi-uploadserver-signer")
    client_ca = CertificateAuthority.create("cdi-uploadserver-client-signer")
    server_cert, server_key = write_pair(server_ca.issue("cdi-upload-disk.ns.svc"), root, "tls")
    client_ca_file = root / "ca.crt"
    client_ca_file.write_bytes(client_ca.pair.cert_pem)
    return Pki(root, server_ca, client_ca, server_cert, server_key, client_ca_file)


@pytest.fixture(scope="session")
def client_pair(pki: Pki) -> KeyPair:
    return pki.client_ca.issue(Upload.CLIENT_NAME, client=True)


@pytest.fixture
def claim(tmp_path: Path) -> Claim:
    data, scratch = tmp_path / "data", tmp_path / "scratch"
    data.mkdir()
    scratch.mkdir()
    return Claim(data, scratch, tmp_path / "termination-log")


@pytest.fixture
def serve(pki: Pki, client_pair: KeyPair, claim: Claim) -> Iterator[ServeFactory]:
    started: list[Running] = []

    def start(**env: str) -> Running:
        config = ServerConfig.from_env({**base_env(pki, claim), **env})
        running = Running(config, claim.paths(), pki, client_pair)
        started.append(running)
        return running

    yield start
    for running in started:
        running.cancel()
        running.join()
