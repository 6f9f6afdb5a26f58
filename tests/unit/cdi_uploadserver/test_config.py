"""The environment as CDI's cdi-uploadserver reads it."""

from __future__ import annotations

import ssl
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kubevirt.cdi_importer.config import Paths
from kubevirt.cdi_uploadserver.config import ConfigError, ServerConfig, parse_deadline
from kubevirt.cdi_uploadserver.crypto import tls_policy

TLS = {"TLS_CERT_FILE": "/etc/tls/tls.crt", "TLS_KEY_FILE": "/etc/tls/tls.key"}


def test_defaults_are_cdis() -> None:
    config = ServerConfig.from_env(TLS)
    assert config.destination == Path("/data/disk.img")
    assert (config.address, config.port) == ("0.0.0.0", 8443)
    assert config.client_ca_file is None
    assert (config.image_size, config.filesystem_overhead, config.preallocation) == (None, 0.0, False)
    assert config.deadline is None
    assert config.tls.minimum == ssl.TLSVersion.TLSv1_2


def test_pod_environment_is_read() -> None:
    config = ServerConfig.from_env(
        {
            **TLS,
            "CLIENT_CERT_FILE": "/etc/tls/ca.crt",
            "CLIENT_NAME": "client.upload-server.cdi.kubevirt.io",
            "UPLOAD_IMAGE_SIZE": "10Gi",
            "FILESYSTEM_OVERHEAD": "0.055",
            "PREALLOCATION": "true",
            "DEADLINE": "2030-01-02T03:04:05Z",
            "DESTINATION": "/dev/cdi-block-volume",
            "LISTEN_PORT": "9443",
        }
    )
    assert config.client_ca_file == Path("/etc/tls/ca.crt")
    assert config.client_name == "client.upload-server.cdi.kubevirt.io"
    assert config.image_size == 10 << 30
    assert config.filesystem_overhead == 0.055
    assert config.preallocation is True
    assert config.deadline == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert config.destination == Path("/dev/cdi-block-volume")
    assert config.port == 9443


def test_malformed_flags_read_as_cdi_leaves_them() -> None:
    config = ServerConfig.from_env({**TLS, "FILESYSTEM_OVERHEAD": "lots", "PREALLOCATION": "yes"})
    assert (config.filesystem_overhead, config.preallocation) == (0.0, False)
    assert ServerConfig.from_env({**TLS, "LISTEN_PORT": "99999"}).port == 8443


@pytest.mark.parametrize(
    "env",
    [{}, {"TLS_CERT_FILE": "/x"}, {**TLS, "DEADLINE": "tomorrow"}, {**TLS, "UPLOAD_IMAGE_SIZE": "big"}],
)
def test_unusable_environment_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        ServerConfig.from_env(env)


def test_deadline_takes_offsets_and_fractions() -> None:
    assert parse_deadline("2030-01-02T03:04:05.123456789+02:00") == datetime.fromisoformat(
        "2030-01-02T03:04:05.123456+02:00"
    )


def test_file_destination_names_the_image_and_its_directory(tmp_path: Path) -> None:
    config = ServerConfig.from_env({**TLS, "DESTINATION": str(tmp_path / "img.raw")})
    paths = config.importer_paths(Paths(scratch_dir=tmp_path / "s"))
    assert paths.disk_image == tmp_path / "img.raw"
    assert paths.data_dir == tmp_path
    assert paths.scratch_dir == tmp_path / "s"


def test_tls_profile_names_become_openssl_settings() -> None:
    policy = tls_policy(
        "TLS_AES_128_GCM_SHA256,ECDHE-RSA-AES128-GCM-SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,bogus",
        "VersionTLS12",
    )
    assert policy.minimum == ssl.TLSVersion.TLSv1_2
    assert policy.ciphers == "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384"
    assert tls_policy("", "VersionTLS13").minimum == ssl.TLSVersion.TLSv1_3
    assert tls_policy("bogus", "").ciphers is None
