"""An http(s) data source: one streaming GET, sent as CDI's importer sends it (its User-Agent, basic
auth from the DataVolume's secret, extra headers from the DataVolume and from secrets)."""

from __future__ import annotations

import base64
import dataclasses
import http.client
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from kubevirt.cdi_importer.config import ImporterConfig, Paths
from kubevirt.cdi_importer.errors import ConnectError
from kubevirt.cdi_importer.tlsroots import CertDirError, client_context
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import ImporterEnv

USER_AGENT: Final = "cdi-golang-importer"
IDLE_TIMEOUT: Final = 600.0  # CDI cancels a transfer that read nothing for ten minutes


@dataclasses.dataclass
class HttpStream:
    """The response body being read, and its length when the server told it (0 otherwise)."""

    response: http.client.HTTPResponse
    content_length: int

    def read(self, size: int = -1, /) -> bytes:
        return self.response.read(size)

    def close(self) -> None:
        self.response.close()


def secret_extra_headers(directory: Path) -> list[str]:
    """The "Name:value" headers of the secrets mounted under ``directory`` (one per key file)."""
    if not directory.is_dir():
        return []
    return [path.read_text() for path in _header_files(directory)]


def _header_files(directory: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(directory):
        # A mounted secret's ..data and timestamped folders hold the same keys again.
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(root) / name


def headers(config: ImporterConfig, paths: Paths) -> dict[str, str]:
    """The request's headers: extra headers first, then the User-Agent and basic auth."""
    result: dict[str, str] = {}
    for header in [*config.extra_headers, *secret_extra_headers(paths.extra_headers_dir)]:
        name, sep, value = header.partition(":")
        if sep and name.strip():
            result[name.strip()] = value.strip()
    result["User-Agent"] = USER_AGENT
    if config.credentials is not None:
        token = f"{config.credentials.username}:{config.credentials.password}".encode()
        result["Authorization"] = "Basic " + base64.b64encode(token).decode()
    return result


def open_stream(config: ImporterConfig, paths: Paths) -> HttpStream:
    """GET the endpoint; ConnectError (CDI's words) when it cannot be fetched."""
    if not config.endpoint:
        raise ConnectError(f'endpoint "{ImporterEnv.ENDPOINT}" is missing or blank')
    try:
        context = client_context(config.cert_dir, paths.proxy_cert_dir, insecure=config.insecure_tls)
    except CertDirError as err:
        raise ConnectError(f"Error creating http client: {err}") from err
    # Headers added to the request survive redirects: CDI sets its auth and headers on each hop too.
    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))
    try:
        request = urllib.request.Request(config.endpoint, headers=headers(config, paths))
    except ValueError as err:
        raise ConnectError(f"unable to parse endpoint {config.endpoint!r}: {err}") from err
    try:
        response = opener.open(request, timeout=IDLE_TIMEOUT)
    except urllib.error.HTTPError as err:
        err.close()
        raise ConnectError(_status_error(err.code, err.reason)) from err
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as err:
        reason = err.reason if isinstance(err, urllib.error.URLError) else err
        raise ConnectError(f"HTTP request errored: {reason}") from err
    if response.status != http.HTTPStatus.OK:
        response.close()
        raise ConnectError(_status_error(response.status, response.reason))
    content_type = response.headers.get("Content-Type", "")
    if config.content_type == "kubevirt" and content_type.startswith("text/"):
        get_logger().warning(
            "Unexpected content type. Content might not be a KubeVirt image.", content_type=content_type
        )
    return HttpStream(response, _content_length(response))


def _status_error(code: int, reason: object) -> str:
    return f"expected status code 200, got {code}. Status: {code} {reason}"


def _content_length(response: http.client.HTTPResponse) -> int:
    try:
        return max(int(response.headers.get("Content-Length", "0")), 0)
    except ValueError:
        return 0
