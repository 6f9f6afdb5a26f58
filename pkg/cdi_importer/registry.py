"""A container registry data source: the image is pulled over the registry v2 API and the one disk
image under ``disk/`` is extracted from its layers into scratch space, as CDI does for
``docker://host[:port]/repository[:tag|@digest]`` endpoints."""

from __future__ import annotations

import base64
import dataclasses
import http.client
import json
import platform
import re
import ssl
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from kubevirt.cdi_importer.config import Credentials
from kubevirt.cdi_importer.errors import ImagePullFailedError, ImporterError
from kubevirt.cdi_importer.formats import FormatError, open_readers
from kubevirt.cdi_importer.sparse import stream_to_file
from kubevirt.log import get_logger

DOCKER_SCHEME: Final = "docker://"
DOCKER_HUB: Final = "docker.io"
DOCKER_HUB_API: Final = "registry-1.docker.io"
DISK_DIR: Final = "disk"
WHITEOUT_PREFIX: Final = ".wh."
TIMEOUT: Final = 600.0
MANIFEST_TYPES: Final = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
_INDEX_TYPES: Final = frozenset(MANIFEST_TYPES[:2])
_CHALLENGE_PARAM: Final = re.compile(r'(\w+)="([^"]*)"')
# Go's GOARCH names for the machine this runs on (the architecture CDI pulls when none is asked for).
_GOARCH: Final = {"x86_64": "amd64", "aarch64": "arm64", "s390x": "s390x", "ppc64le": "ppc64le"}


class RegistryError(ImporterError):
    """The image could not be read."""


@dataclasses.dataclass(frozen=True)
class ImageReference:
    registry: str  # host[:port] as written
    repository: str
    reference: str  # a tag or a digest

    @property
    def api_host(self) -> str:
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    def __str__(self) -> str:
        sep = "@" if self.reference.startswith("sha256:") else ":"
        return f"{self.registry}/{self.repository}{sep}{self.reference}"


def parse_reference(endpoint: str) -> ImageReference:
    """``docker://[host[:port]/]repository[:tag|@digest]``, with Docker's defaults (docker.io,
    library/, latest)."""
    if not endpoint.startswith(DOCKER_SCHEME):
        raise RegistryError(f'Invalid image name "{endpoint}", unknown transport')
    name = endpoint[len(DOCKER_SCHEME) :]
    name, _, digest = name.partition("@")
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, rest
    else:
        registry, path = DOCKER_HUB, name
    tag = ""
    if not digest and ":" in path.rsplit("/", 1)[-1]:
        path, _, tag = path.rpartition(":")
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    if not path or path != path.lower() or not re.fullmatch(r"[a-z0-9]+([._/-][a-z0-9]+)*", path):
        raise RegistryError(f'Invalid image name "{endpoint}": invalid reference format')
    return ImageReference(registry, path, digest or tag or "latest")


def host_architecture() -> str:
    machine = platform.machine()
    return _GOARCH.get(machine, machine)


class _NoCrossHostAuth(urllib.request.HTTPRedirectHandler):
    """Blob downloads redirect to storage hosts: the registry's credentials must not follow them."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if (
            new is not None
            and urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc
        ):
            new.remove_header("Authorization")
        return new


class RegistryClient:
    """The registry v2 API of one repository: scheme and auth found by pinging ``/v2/``."""

    def __init__(
        self,
        image: ImageReference,
        credentials: Credentials | None,
        context: ssl.SSLContext,
        *,
        insecure: bool,
    ) -> None:
        self.image = image
        self._credentials = credentials
        self._insecure = insecure
        self._opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=context), _NoCrossHostAuth()
        )
        self._base = ""
        self._challenge: dict[str, str] = {}
        self._authorization = ""

    def ping(self) -> None:
        """Find a scheme the registry answers on (plain http only for an insecure registry) and
        the authentication it asks for."""
        schemes = ("https", "http") if self._insecure else ("https",)
        errors: list[str] = []
        for scheme in schemes:
            base = f"{scheme}://{self.image.api_host}"
            try:
                with self._opener.open(self._request(f"{base}/v2/"), timeout=TIMEOUT):
                    pass
            except urllib.error.HTTPError as err:
                err.close()
                if err.code != http.HTTPStatus.UNAUTHORIZED:
                    errors.append(f"{base}/v2/: {err.code} {err.reason}")
                    continue
                self._challenge = _parse_challenge(err.headers.get("WWW-Authenticate", ""))
            except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
                errors.append(f'Get "{base}/v2/": {getattr(err, "reason", err)}')
                continue
            self._base = base
            return
        raise RegistryError(f"pinging container registry {self.image.registry}: {'; '.join(errors)}")

    def manifest(self, reference: str) -> tuple[str, dict[str, Any]]:
        url = f"{self._base}/v2/{self.image.repository}/manifests/{reference}"
        try:
            with self._get(url, accept=", ".join(MANIFEST_TYPES)) as response:
                media_type = response.headers.get("Content-Type", "").split(";")[0].strip()
                document = json.loads(response.read())
        except RegistryError as err:
            raise RegistryError(f"reading manifest {reference} in {self._name()}: {err}") from err
        except ValueError as err:
            raise RegistryError(f"reading manifest {reference} in {self._name()}: {err}") from err
        if not isinstance(document, dict):
            raise RegistryError(f"reading manifest {reference} in {self._name()}: not a JSON object")
        return str(document.get("mediaType") or media_type), document

    def blob(self, digest: str) -> http.client.HTTPResponse:
        url = f"{self._base}/v2/{self.image.repository}/blobs/{digest}"
        try:
            return self._get(url)
        except RegistryError as err:
            raise RegistryError(f"fetching blob {digest}: {err}") from err

    def _name(self) -> str:
        return f"{self.image.registry}/{self.image.repository}"

    def _get(self, url: str, accept: str = "") -> http.client.HTTPResponse:
        for attempt in range(2):
            try:
                response: http.client.HTTPResponse = self._opener.open(
                    self._request(url, accept), timeout=TIMEOUT
                )
                return response
            except urllib.error.HTTPError as err:
                message = _registry_error(err)
                err.close()
                if err.code == http.HTTPStatus.UNAUTHORIZED and attempt == 0 and self._challenge:
                    self._authorization = self._authorize()
                    continue
                raise RegistryError(message) from err
            except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
                raise RegistryError(str(getattr(err, "reason", err))) from err
        raise RegistryError("authentication required")

    def _request(self, url: str, accept: str = "") -> urllib.request.Request:
        request = urllib.request.Request(url)
        if accept:
            request.add_header("Accept", accept)
        if self._authorization:
            request.add_header("Authorization", self._authorization)
        return request

    def _authorize(self) -> str:
        """The Authorization the ping's challenge asks for: basic, or a bearer token from its realm."""
        scheme = self._challenge.get("scheme", "")
        if scheme == "basic":
            if self._credentials is None:
                raise RegistryError("authentication required")
            return _basic(self._credentials)
        realm = self._challenge.get("realm", "")
        if not realm:
            raise RegistryError("the registry's bearer challenge names no realm")
        query = {"scope": f"repository:{self.image.repository}:pull"}
        if service := self._challenge.get("service"):
            query["service"] = service
        request = urllib.request.Request(f"{realm}?{urllib.parse.urlencode(query)}")
        if self._credentials is not None:
            request.add_header("Authorization", _basic(self._credentials))
        try:
            with self._opener.open(request, timeout=TIMEOUT) as response:
                reply = json.loads(response.read())
        except urllib.error.HTTPError as err:
            err.close()
            raise RegistryError(f"requesting bearer token: {err.code} {err.reason}") from err
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as err:
            raise RegistryError(f"requesting bearer token: {getattr(err, 'reason', err)}") from err
        token = reply.get("token") or reply.get("access_token") if isinstance(reply, dict) else None
        if not token:
            raise RegistryError("requesting bearer token: the reply holds no token")
        return f"Bearer {token}"


def _basic(credentials: Credentials) -> str:
    raw = f"{credentials.username}:{credentials.password}".encode()
    return "Basic " + base64.b64encode(raw).decode()


def _parse_challenge(header: str) -> dict[str, str]:
    scheme, _, params = header.strip().partition(" ")
    challenge = {key.lower(): value for key, value in _CHALLENGE_PARAM.findall(params)}
    challenge["scheme"] = scheme.lower()
    return challenge


def _registry_error(err: urllib.error.HTTPError) -> str:
    """The registry's own error code and message when it sent them (``manifest unknown``)."""
    try:
        errors = json.loads(err.read() or b"{}").get("errors") or []
        if errors and isinstance(errors[0], dict):
            first = errors[0]
            return str(first.get("message") or first.get("code") or f"{err.code} {err.reason}").lower()
    except (ValueError, AttributeError, OSError):
        pass
    return f"{err.code} {err.reason}"


@dataclasses.dataclass(frozen=True)
class PulledImage:
    disk: Path  # the disk image extracted into scratch space
    env: tuple[str, ...]  # the image config's Env, "NAME=value"


def pull_disk(
    endpoint: str,
    scratch: Path,
    credentials: Credentials | None,
    context: ssl.SSLContext,
    *,
    insecure: bool,
    architecture: str,
    preallocate: bool,
) -> PulledImage:
    """Pull the image at ``endpoint`` and extract its disk image into ``scratch/disk/``; errors in
    CDI's words (a failure reaching the image is a failed pull)."""
    try:
        config = _pull(endpoint, scratch, credentials, context, insecure, architecture, preallocate)
    except ImporterError as err:
        raise ImporterError(f"Failed to read registry image: {err}") from err
    env = (config.get("config") or {}).get("Env") or []
    return PulledImage(_single_file(scratch / DISK_DIR), tuple(str(e) for e in env))


def _pull(
    endpoint: str,
    scratch: Path,
    credentials: Credentials | None,
    context: ssl.SSLContext,
    insecure: bool,
    architecture: str,
    preallocate: bool,
) -> dict[str, Any]:
    """The image config, once the disk is extracted."""
    try:
        image = parse_reference(endpoint)
    except RegistryError as err:
        raise ImporterError(f"Could not parse image: {err}") from err
    client = RegistryClient(image, credentials, context, insecure=insecure)
    try:
        client.ping()
        media_type, manifest = client.manifest(image.reference)
    except RegistryError as err:
        raise ImagePullFailedError(err) from err
    try:
        manifest = _platform_manifest(client, media_type, manifest, architecture or host_architecture())
        config = _image_config(client, manifest)
    except RegistryError as err:
        raise ImporterError(f"Error retrieving image: {err}") from err
    if architecture and config.get("architecture") != architecture:
        raise ImporterError(
            f'Error validating architecture: manifest image architecture: "{config.get("architecture")}" '
            f'doesn\'t match requested architecture: "{architecture}"'
        )
    if not _extract_disk(client, manifest, scratch, preallocate=preallocate):
        raise ImporterError("Failed to find VM disk image file in the container image")
    return config


def _platform_manifest(
    client: RegistryClient, media_type: str, manifest: dict[str, Any], architecture: str
) -> dict[str, Any]:
    if media_type not in _INDEX_TYPES and "manifests" not in manifest:
        return manifest
    for entry in manifest.get("manifests") or []:
        wanted = entry.get("platform") or {}
        if wanted.get("os") == "linux" and wanted.get("architecture") == architecture:
            return client.manifest(str(entry["digest"]))[1]
    raise RegistryError(
        f'choosing image instance: no image found in image index for architecture "{architecture}", '
        'variant "", OS "linux"'
    )


def _image_config(client: RegistryClient, manifest: Mapping[str, Any]) -> dict[str, Any]:
    descriptor = manifest.get("config") or {}
    if not descriptor.get("digest"):
        raise RegistryError("the manifest names no image config")
    try:
        with client.blob(str(descriptor["digest"])) as response:
            config = json.loads(response.read())
    except ValueError as err:
        raise RegistryError(f"parsing image config: {err}") from err
    if not isinstance(config, dict):
        raise RegistryError("parsing image config: not a JSON object")
    return config


def _extract_disk(
    client: RegistryClient, manifest: Mapping[str, Any], scratch: Path, *, preallocate: bool
) -> bool:
    """Extract the first file under ``disk/``, reading the layers bottom up as CDI does. A layer that
    cannot be read is skipped, so the image is only rejected when no layer holds a disk."""
    for layer in manifest.get("layers") or []:
        digest = str(layer.get("digest", ""))
        try:
            with client.blob(digest) as response:
                if _extract_from_layer(response, scratch, preallocate=preallocate):
                    return True
        except (RegistryError, FormatError, tarfile.TarError, OSError, EOFError) as err:
            get_logger().warning("Error reading layer", layer=digest, error=str(err))
    return False


def _extract_from_layer(stream: http.client.HTTPResponse, scratch: Path, *, preallocate: bool) -> bool:
    readers = open_readers(stream)
    with tarfile.open(fileobj=readers.top, mode="r|") as archive:  # type: ignore[call-overload]
        for member in archive:
            if not _is_disk_file(member):
                continue
            target = _safe_join(scratch, member.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = archive.extractfile(member)
            assert data is not None  # a regular file always has content
            get_logger().info("File found in the layer", file=member.name)
            try:
                stream_to_file(data, target, preallocate=preallocate)
            except ImporterError as err:
                raise ImporterError(f"Error copying file: {err}") from err
            return True
    return False


def _is_disk_file(member: tarfile.TarInfo) -> bool:
    name = member.name.removeprefix("./")
    return (
        name.startswith(f"{DISK_DIR}/")
        and not Path(name).name.startswith(WHITEOUT_PREFIX)
        and member.isfile()
    )


def _safe_join(directory: Path, name: str) -> Path:
    target = (directory / name).resolve()
    if not target.is_relative_to(directory.resolve()):
        raise ImporterError(f"Error sanitizing archive path: content filepath is tainted: {name}")
    return target


def _single_file(directory: Path) -> Path:
    if not directory.is_dir():
        raise ImporterError("Cannot locate image file: image directory does not exist")
    entries = list(directory.iterdir())
    if not entries:
        raise ImporterError(
            "Cannot locate image file: image file does not exist in image directory - directory is empty"
        )
    if len(entries) > 1:
        raise ImporterError("Cannot locate image file: image directory contains more than one file")
    if entries[0].is_dir():
        raise ImporterError("Cannot locate image file: image directory contains another directory")
    return entries[0]


def env_to_labels(env: tuple[str, ...]) -> dict[str, str]:
    """Image environment variables naming KubeVirt labels become labels of the claim:
    ``INSTANCETYPE_KUBEVIRT_IO_DEFAULT_INSTANCETYPE=u1.small`` →
    ``instancetype.kubevirt.io/default-instancetype: u1.small``."""
    labels: dict[str, str] = {}
    for entry in env:
        name, found, value = entry.partition("=")
        if found and "KUBEVIRT_IO_" in name:
            labels[_env_to_label(name)] = value
    return labels


def _env_to_label(name: str) -> str:
    before, _, after = name.partition("KUBEVIRT_IO_")
    elements = before.removesuffix("_").split("_")
    prefix = ".".join(elements) + "." if elements and elements[0] else ""
    return (prefix + "kubevirt.io/" + "-".join(after.split("_"))).lower()
