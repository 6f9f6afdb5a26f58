"""The clone source's configuration: the pod's environment, as CDI's clone controller sets it for the
image's startup script (VOLUME_MODE, MOUNT_POINT) and for cdi-cloner itself (the rest)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from kubevirt_api.cdi.constants import ImporterEnv

VOLUME_MODE_ENV: Final = "VOLUME_MODE"
MOUNT_POINT_ENV: Final = "MOUNT_POINT"
CLIENT_KEY_ENV: Final = "CLIENT_KEY"
CLIENT_CERT_ENV: Final = "CLIENT_CERT"
SERVER_CA_CERT_ENV: Final = "SERVER_CA_CERT"
UPLOAD_URL_ENV: Final = "UPLOAD_URL"
VOLUME_MODE_BLOCK: Final = "block"
VOLUME_MODE_FILESYSTEM: Final = "filesystem"

# The upload server's x-cdi-content-type values, one per source volume mode.
FILESYSTEM_CLONE: Final = "filesystem-clone"
BLOCKDEVICE_CLONE: Final = "blockdevice-clone"

# Exit codes: the startup script's for its own checks, klog's Fatal for everything cdi-cloner refuses.
EXIT_STARTUP: Final = 1
EXIT_FATAL: Final = 255

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # Go's strconv.ParseBool


class ConfigError(ValueError):
    """The environment lacks what the clone needs; ``exit_code`` is the one CDI's image exits with."""

    def __init__(self, message: str, exit_code: int = EXIT_FATAL) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclasses.dataclass(frozen=True)
class ClonerConfig:
    content_type: str  # FILESYSTEM_CLONE or BLOCKDEVICE_CLONE
    mount_point: Path  # the source claim's mount, or its block device
    owner_uid: str  # the progress metric's label
    client_key_pem: str
    client_cert_pem: str
    server_ca_pem: str
    upload_url: str
    preallocation: bool

    @property
    def block(self) -> bool:
        return self.content_type == BLOCKDEVICE_CLONE

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ClonerConfig:
        """Checked in CDI's order: the startup script's two variables, then cdi-cloner's, each of which
        must be set and not empty (PREALLOCATION too, though a value other than a boolean reads false)."""
        mode = _startup_var(env, VOLUME_MODE_ENV)
        mount = _startup_var(env, MOUNT_POINT_ENV)
        owner_uid = _required(env, ImporterEnv.OWNER_UID)
        key = _required(env, CLIENT_KEY_ENV)
        cert = _required(env, CLIENT_CERT_ENV)
        server_ca = _required(env, SERVER_CA_CERT_ENV)
        url = _required(env, UPLOAD_URL_ENV)
        preallocation = _required(env, ImporterEnv.PREALLOCATION) in _TRUE
        return cls(
            # The script takes anything but "block" for a filesystem.
            content_type=BLOCKDEVICE_CLONE if mode == VOLUME_MODE_BLOCK else FILESYSTEM_CLONE,
            mount_point=Path(mount),
            owner_uid=owner_uid,
            client_key_pem=key,
            client_cert_pem=cert,
            server_ca_pem=server_ca,
            upload_url=url,
            preallocation=preallocation,
        )


def _startup_var(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "")
    if not value:
        raise ConfigError(f"{name} missing", EXIT_STARTUP)
    return value


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "")
    if not value:
        raise ConfigError(f"Error getting env var {name}")
    return value
