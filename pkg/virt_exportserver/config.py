"""The exporter pod's environment, as KubeVirt's virt-exportserver reads it (``cmd/virt-exportserver``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kubevirt.export.paths import (
    CERT_FILE_ENV,
    DEADLINE_ENV,
    KEY_FILE_ENV,
    MANIFEST_MOUNT_PATH,
    TOKEN_FILE_ENV,
    ServerPaths,
)

LISTEN_ADDR_ENV = "LISTEN_ADDR"

DEFAULT_LISTEN_ADDR = ":8443"
# Where the controller mounts the VM's manifest ConfigMap (fixed in KubeVirt, not in the environment).
MANIFEST_DIR = Path(MANIFEST_MOUNT_PATH)

# Go's time.RFC3339 layout; Go also takes fractional seconds after the seconds.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


class ConfigError(ValueError):
    """The environment does not describe a server that can run; the message names the variable."""


@dataclass(frozen=True)
class ServerConfig:
    cert_file: Path
    key_file: Path
    token_file: Path
    paths: ServerPaths
    host: str | None = None  # None: every interface
    port: int = 8443
    deadline: datetime | None = None  # None: serve until stopped
    manifest_dir: Path = MANIFEST_DIR

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ServerConfig:
        cert_file, key_file = env.get(CERT_FILE_ENV, ""), env.get(KEY_FILE_ENV, "")
        if not cert_file or not key_file:
            raise ConfigError(f"TLS config incomplete: {CERT_FILE_ENV} and {KEY_FILE_ENV} must both be set")
        token_file = env.get(TOKEN_FILE_ENV, "")
        if not token_file:
            raise ConfigError(f"no token file set: {TOKEN_FILE_ENV} is empty")
        host, port = parse_listen_addr(env.get(LISTEN_ADDR_ENV) or DEFAULT_LISTEN_ADDR)
        deadline_text = env.get(DEADLINE_ENV, "")
        return cls(
            cert_file=Path(cert_file),
            key_file=Path(key_file),
            token_file=Path(token_file),
            paths=ServerPaths.from_env(env),
            host=host,
            port=port,
            deadline=parse_deadline(deadline_text) if deadline_text else None,
        )


def parse_deadline(text: str) -> datetime:
    """An RFC 3339 time (``2024-05-01T10:00:00Z``), as Go's ``time.Parse(time.RFC3339, ...)`` takes it."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ConfigError(
            f"{DEADLINE_ENV}: invalid deadline {text!r}, expected RFC 3339 (2006-01-02T15:04:05Z)"
        )
    fraction = match.group(1) or ""
    # datetime takes at most microseconds; Go keeps nanoseconds, which no deadline needs.
    normalized = text.replace(fraction, fraction[:7], 1) if fraction else text
    try:
        return datetime.fromisoformat(normalized)
    except ValueError as err:  # a well-formed but impossible date, such as month 13
        raise ConfigError(f"{DEADLINE_ENV}: invalid deadline {text!r}: {err}") from None


def parse_listen_addr(text: str) -> tuple[str | None, int]:
    """Go's ``host:port`` listen address (``:8443``, ``127.0.0.1:8443``, ``[::1]:8443``)."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"{LISTEN_ADDR_ENV}: invalid listen address {text!r}, expected host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or None, int(port_text)
