"""The importer's environment, read as CDI's importer reads it."""

from __future__ import annotations

import pytest

from kubevirt.cdi_importer.config import ConfigError, Credentials, ImporterConfig

BASE = {"IMPORTER_SOURCE": "http", "PREALLOCATION": "false"}


def test_a_pods_environment_is_read() -> None:
    config = ImporterConfig.from_env(
        {
            **BASE,
            "IMPORTER_ENDPOINT": "https://example.com/disk.img.gz",
            "IMPORTER_CONTENTTYPE": "kubevirt",
            "IMPORTER_IMAGE_SIZE": "1Gi",
            "FILESYSTEM_OVERHEAD": "0.06",
            "OWNER_UID": "uid-1",
            "INSECURE_TLS": "true",
            "IMPORTER_ACCESS_KEY_ID": "user",
            "IMPORTER_SECRET_KEY": "pass",
            "IMPORTER_CERT_DIR": "/certs",
            "IMPORTER_EXTRA_HEADER_10": "X-Ten:10",
            "IMPORTER_EXTRA_HEADER_2": "X-Two:2",
        }
    )
    assert config.image_size == 1 << 30
    assert config.filesystem_overhead == 0.06
    assert config.insecure_tls
    assert config.credentials == Credentials("user", "pass")
    assert config.extra_headers == ("X-Two:2", "X-Ten:10")  # in the DataVolume's order


def test_defaults_for_what_the_controller_leaves_empty() -> None:
    config = ImporterConfig.from_env(BASE)
    assert (config.content_type, config.image_size, config.filesystem_overhead) == ("kubevirt", None, 0.0)
    assert config.credentials is None
    assert not config.insecure_tls


def test_basic_auth_needs_both_halves() -> None:
    assert ImporterConfig.from_env({**BASE, "IMPORTER_ACCESS_KEY_ID": "user"}).credentials is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PREALLOCATION": "yes"}, 'the PREALLOCATION environment variable is with a wrong value "yes"'),
        ({"PREALLOCATION": ""}, "PREALLOCATION environment variable is with a wrong value"),
        ({**BASE, "IMPORTER_IMAGE_SIZE": "lots"}, "IMPORTER_IMAGE_SIZE: not a quantity: 'lots'"),
        ({**BASE, "FILESYSTEM_OVERHEAD": "2"}, "FILESYSTEM_OVERHEAD: "),
    ],
)
def test_bad_values_are_refused_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ImporterConfig.from_env(env)
