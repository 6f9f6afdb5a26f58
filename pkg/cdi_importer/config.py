"""The importer's configuration: the pod's environment (CDI's names) and the fixed places its volumes
are mounted at."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from kubevirt.cdi.sizes import parse_overhead
from kubevirt_api.cdi.constants import (
    CONTENT_TYPE_KUBEVIRT,
    METRICS_PORT,
    ImporterEnv,
    ImporterExtraEnv,
    ImporterPaths,
)
from kubevirt_api.resource import Quantity

DISK_IMAGE_NAME = "disk.img"
# Go's strconv.ParseBool, which CDI reads its flags with.
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class ConfigError(ValueError):
    """An environment variable holds a value the importer cannot use."""


@dataclasses.dataclass(frozen=True)
class Paths:
    """Where the pod's volumes are. Production uses CDI's fixed paths; tests point them elsewhere."""

    data_dir: Path = Path(ImporterPaths.DATA_DIR)
    block_device: Path = Path(ImporterPaths.BLOCK_DEVICE)
    scratch_dir: Path = Path(ImporterPaths.SCRATCH_DIR)
    proxy_cert_dir: Path = Path(ImporterPaths.PROXY_CERT_DIR)
    extra_headers_dir: Path = Path(ImporterPaths.EXTRA_HEADERS_DIR)
    termination_log: Path = Path(ImporterPaths.TERMINATION_LOG)
    metrics_port: int = METRICS_PORT
    disk_name: str = DISK_IMAGE_NAME  # an upload's DESTINATION may name the image otherwise

    @property
    def disk_image(self) -> Path:
        return self.data_dir / self.disk_name


@dataclasses.dataclass(frozen=True)
class Credentials:
    username: str
    password: str


@dataclasses.dataclass(frozen=True)
class ImporterConfig:
    source: str
    endpoint: str
    content_type: str
    image_size: int | None  # the claim's request; None when the controller gave none
    filesystem_overhead: float
    preallocation: bool
    owner_uid: str
    insecure_tls: bool
    pull_method: str
    cache_mode: str
    credentials: Credentials | None
    cert_dir: str
    registry_architecture: str
    extra_headers: tuple[str, ...]  # "Name:value" strings from IMPORTER_EXTRA_HEADER_<i>
    # A registry node pull: the in-pod server names its disk in the ready file; the done file stops it.
    ready_file: str = ""
    done_file: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ImporterConfig:
        access, secret = env.get(ImporterEnv.ACCESS_KEY_ID, ""), env.get(ImporterEnv.SECRET_KEY, "")
        return cls(
            source=env.get(ImporterEnv.SOURCE, ""),
            endpoint=env.get(ImporterEnv.ENDPOINT, ""),
            content_type=env.get(ImporterEnv.CONTENT_TYPE, "") or CONTENT_TYPE_KUBEVIRT,
            image_size=_image_size(env.get(ImporterEnv.IMAGE_SIZE, "")),
            filesystem_overhead=_overhead(env.get(ImporterEnv.FILESYSTEM_OVERHEAD, "")),
            preallocation=_preallocation(env.get(ImporterEnv.PREALLOCATION, "")),
            owner_uid=env.get(ImporterEnv.OWNER_UID, ""),
            # CDI ignores a malformed value: the registry is then verified.
            insecure_tls=env.get(ImporterEnv.INSECURE_TLS, "") in _TRUE,
            pull_method=env.get(ImporterEnv.PULL_METHOD, ""),
            cache_mode=env.get(ImporterEnv.CACHE_MODE, ""),
            # Basic auth only when both halves are there, as CDI's http client sends it.
            credentials=Credentials(access, secret) if access and secret else None,
            cert_dir=env.get(ImporterEnv.CERT_DIR, ""),
            registry_architecture=env.get(ImporterExtraEnv.REGISTRY_IMAGE_ARCHITECTURE, ""),
            extra_headers=tuple(
                value
                for name, value in sorted(env.items(), key=_header_order)
                if name.startswith(ImporterEnv.EXTRA_HEADER_PREFIX)
            ),
            ready_file=env.get(ImporterExtraEnv.READY_FILE, ""),
            done_file=env.get(ImporterExtraEnv.DONE_FILE, ""),
        )

    @classmethod
    def for_stream(
        cls,
        *,
        content_type: str = CONTENT_TYPE_KUBEVIRT,
        image_size: int | None = None,
        filesystem_overhead: float = 0.0,
        preallocation: bool = False,
    ) -> ImporterConfig:
        """The configuration of data handed over as an open stream (an upload): only the target's
        settings matter, there is no source to reach."""
        return cls(
            source="",
            endpoint="",
            content_type=content_type,
            image_size=image_size,
            filesystem_overhead=filesystem_overhead,
            preallocation=preallocation,
            owner_uid="",
            insecure_tls=False,
            pull_method="",
            cache_mode="",
            credentials=None,
            cert_dir="",
            registry_architecture="",
            extra_headers=(),
        )


def _image_size(text: str) -> int | None:
    if not text:
        return None
    try:
        return Quantity(text).value()
    except ValueError as err:
        raise ConfigError(f"{ImporterEnv.IMAGE_SIZE}: not a quantity: {text[:80]!r}") from err


def _overhead(text: str) -> float:
    if not text:
        return 0.0
    try:
        return parse_overhead(text)
    except ValueError as err:
        raise ConfigError(f"{ImporterEnv.FILESYSTEM_OVERHEAD}: {err}") from err


def _preallocation(text: str) -> bool:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(
        f'the {ImporterEnv.PREALLOCATION} environment variable is with a wrong value "{text[:80]}"; '
        'should be "true" or "false"'
    )


def _header_order(item: tuple[str, str]) -> tuple[int, str]:
    # IMPORTER_EXTRA_HEADER_2 before IMPORTER_EXTRA_HEADER_10: in the DataVolume's order.
    return len(item[0]), item[0]
