"""The upload server's configuration: the pod's environment, with CDI's names and CDI's leniency
(a malformed FILESYSTEM_OVERHEAD or PREALLOCATION reads as 0 and false, as Go's parsers leave them)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Final

from kubevirt.cdi.sizes import parse_overhead
from kubevirt.cdi_importer.config import Paths
from kubevirt.cdi_uploadserver.crypto import TLSPolicy, tls_policy
from kubevirt_api.cdi.constants import ImporterEnv, ImporterPaths, Upload
from kubevirt_api.resource import Quantity

TLS_KEY_FILE_ENV: Final = "TLS_KEY_FILE"
TLS_CERT_FILE_ENV: Final = "TLS_CERT_FILE"
CLIENT_CERT_FILE_ENV: Final = "CLIENT_CERT_FILE"
TLS_CIPHERS_ENV: Final = "TLS_CIPHERS"
TLS_MIN_VERSION_ENV: Final = "TLS_MIN_VERSION"
LISTEN_ADDRESS_ENV: Final = "LISTEN_ADDRESS"
LISTEN_PORT_ENV: Final = "LISTEN_PORT"
DEFAULT_ADDRESS: Final = "0.0.0.0"
DEFAULT_DESTINATION: Final = ImporterPaths.DISK_IMAGE

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # Go's strconv.ParseBool
# Go's time.RFC3339 layout; Go also takes fractional seconds.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


class ConfigError(ValueError):
    """The environment does not describe a server that can run."""


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    server_cert_file: Path
    server_key_file: Path
    client_ca_file: Path | None  # None: the system's roots, as Go's verifier falls back to
    client_name: str  # the common name an uploading client's certificate must carry
    destination: Path  # /data/disk.img, or the block device for a Block claim
    image_size: int | None
    filesystem_overhead: float
    preallocation: bool
    tls: TLSPolicy = dataclasses.field(default_factory=TLSPolicy)
    deadline: datetime | None = None
    address: str = DEFAULT_ADDRESS
    port: int = Upload.SERVER_PORT

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ServerConfig:
        cert, key = env.get(TLS_CERT_FILE_ENV, ""), env.get(TLS_KEY_FILE_ENV, "")
        if not cert or not key:
            raise ConfigError(
                f"Error getting TLS config: invalid TLS config ({TLS_CERT_FILE_ENV} and "
                f"{TLS_KEY_FILE_ENV} must both be set)"
            )
        client_ca = env.get(CLIENT_CERT_FILE_ENV, "")
        deadline = env.get(Upload.DEADLINE_ENV, "")
        return cls(
            server_cert_file=Path(cert),
            server_key_file=Path(key),
            client_ca_file=Path(client_ca) if client_ca else None,
            client_name=env.get(Upload.CLIENT_NAME_ENV, ""),
            destination=Path(env.get(Upload.DESTINATION_ENV, "") or DEFAULT_DESTINATION),
            image_size=_image_size(env.get(Upload.IMAGE_SIZE_ENV, "")),
            filesystem_overhead=_overhead(env.get(ImporterEnv.FILESYSTEM_OVERHEAD, "")),
            preallocation=env.get(ImporterEnv.PREALLOCATION, "") in _TRUE,
            tls=tls_policy(env.get(TLS_CIPHERS_ENV, ""), env.get(TLS_MIN_VERSION_ENV, "")),
            deadline=parse_deadline(deadline) if deadline else None,
            address=env.get(LISTEN_ADDRESS_ENV, DEFAULT_ADDRESS),  # set but empty: every interface
            port=_port(env.get(LISTEN_PORT_ENV, "")),
        )

    def importer_paths(self, base: Paths) -> Paths:
        """``base`` with the destination as the importer's target: the device itself, or the image
        file (its directory then being the claim's mount, where archives are unpacked too)."""
        if self.destination.is_block_device():
            return dataclasses.replace(base, block_device=self.destination)
        return dataclasses.replace(
            base,
            block_device=self.destination,  # not a device: the importer takes the Filesystem path
            data_dir=self.destination.parent,
            disk_name=self.destination.name,
        )


def parse_deadline(text: str) -> datetime:
    """An RFC 3339 time, as Go's ``time.Parse(time.RFC3339, ...)`` takes it."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ConfigError(f"Failed to parse deadline: {text!r} is not an RFC 3339 time")
    fraction = match.group(1) or ""
    normalized = text.replace(fraction, fraction[:7], 1) if fraction else text  # microseconds at most
    try:
        return datetime.fromisoformat(normalized.replace("Z", "+00:00"))
    except ValueError as err:
        raise ConfigError(f"Failed to parse deadline: {text!r}: {err}") from None


def _image_size(text: str) -> int | None:
    if not text:
        return None
    try:
        return Quantity(text).value()
    except ValueError as err:
        raise ConfigError(f"{Upload.IMAGE_SIZE_ENV}: not a quantity: {text[:80]!r}") from err


def _overhead(text: str) -> float:
    try:
        return parse_overhead(text) if text else 0.0
    except ValueError:
        return 0.0


def _port(text: str) -> int:
    # CDI keeps its default port when LISTEN_PORT is not a 16-bit number.
    if text.isdigit() and int(text) < 1 << 16:
        return int(text)
    return Upload.SERVER_PORT
