"""The clone source's environment, checked in the order and with the exit codes of CDI's image."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubevirt.cdi_cloner.config import (
    BLOCKDEVICE_CLONE,
    EXIT_FATAL,
    EXIT_STARTUP,
    FILESYSTEM_CLONE,
    ClonerConfig,
    ConfigError,
)

ENV = {
    "VOLUME_MODE": "filesystem",
    "MOUNT_POINT": "/var/run/cdi/clone/source",
    "OWNER_UID": "uid-1",
    "CLIENT_KEY": "key pem",
    "CLIENT_CERT": "cert pem",
    "SERVER_CA_CERT": "ca pem",
    "UPLOAD_URL": "https://cdi-upload-tgt.ns.svc/v1beta1/upload",
    "PREALLOCATION": "false",
}


def test_filesystem_source() -> None:
    config = ClonerConfig.from_env(ENV)
    assert config == ClonerConfig(
        content_type=FILESYSTEM_CLONE,
        mount_point=Path("/var/run/cdi/clone/source"),
        owner_uid="uid-1",
        client_key_pem="key pem",
        client_cert_pem="cert pem",
        server_ca_pem="ca pem",
        upload_url="https://cdi-upload-tgt.ns.svc/v1beta1/upload",
        preallocation=False,
    )
    assert not config.block


def test_block_source() -> None:
    config = ClonerConfig.from_env({**ENV, "VOLUME_MODE": "block", "MOUNT_POINT": "/dev/cdi-block-volume"})
    assert config.content_type == BLOCKDEVICE_CLONE
    assert config.block


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("1", True), ("True", True), ("yes", False)])
def test_preallocation_reads_as_go_parses_a_boolean(value: str, expected: bool) -> None:
    assert ClonerConfig.from_env({**ENV, "PREALLOCATION": value}).preallocation is expected


@pytest.mark.parametrize("name", ["VOLUME_MODE", "MOUNT_POINT"])
def test_the_startup_script_variables_exit_one(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ClonerConfig.from_env({**ENV, name: ""})
    assert str(caught.value) == f"{name} missing"
    assert caught.value.exit_code == EXIT_STARTUP


@pytest.mark.parametrize(
    "name", ["OWNER_UID", "CLIENT_KEY", "CLIENT_CERT", "SERVER_CA_CERT", "UPLOAD_URL", "PREALLOCATION"]
)
def test_a_missing_variable_is_named(name: str) -> None:
    env = {key: value for key, value in ENV.items() if key != name}
    with pytest.raises(ConfigError) as caught:
        ClonerConfig.from_env(env)
    assert str(caught.value) == f"Error getting env var {name}"
    assert caught.value.exit_code == EXIT_FATAL


def test_checked_in_cdis_order() -> None:
    with pytest.raises(ConfigError, match="VOLUME_MODE missing"):
        ClonerConfig.from_env({})
    with pytest.raises(ConfigError, match="OWNER_UID"):
        ClonerConfig.from_env({"VOLUME_MODE": "block", "MOUNT_POINT": "/dev/x"})
