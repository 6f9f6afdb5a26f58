"""Registry imports end to end against a tiny registry v2 server: bearer-token auth, an image index,
a gzip layer holding disk/disk.img."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import hashlib
import http.server
import io
import json
import subprocess
import tarfile
import threading
import urllib.parse
from collections.abc import Iterator

import pytest

from kubevirt.cdi_importer.registry import host_architecture

from .conftest import MIB, Images, Pod

pytestmark = pytest.mark.integration

TOKEN = "registry-token"
CREDENTIALS = "Basic " + base64.b64encode(b"puller:secret").decode()
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _layer(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.addfile(_dir("disk"))
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return gzip.compress(buffer.getvalue(), compresslevel=1)


def _dir(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    return info


@dataclasses.dataclass
class Registry:
    host: str
    blobs: dict[str, bytes] = dataclasses.field(default_factory=dict)
    manifests: dict[str, tuple[str, bytes]] = dataclasses.field(default_factory=dict)
    token_requests: list[str] = dataclasses.field(default_factory=list)

    def add_blob(self, data: bytes) -> dict[str, object]:
        self.blobs[_digest(data)] = data
        return {"mediaType": "application/octet-stream", "digest": _digest(data), "size": len(data)}

    def add_image(self, tag: str, layers: list[bytes], architecture: str, env: list[str]) -> str:
        config = json.dumps({"architecture": architecture, "os": "linux", "config": {"Env": env}}).encode()
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": self.add_blob(config),
                "layers": [self.add_blob(layer) for layer in layers],
            }
        ).encode()
        self.manifests[tag] = self.manifests[_digest(manifest)] = (OCI_MANIFEST, manifest)
        return _digest(manifest)

    def add_index(self, tag: str, entries: dict[str, str]) -> None:
        index = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": OCI_INDEX,
                "manifests": [
                    {
                        "mediaType": OCI_MANIFEST,
                        "digest": digest,
                        "platform": {"os": "linux", "architecture": arch},
                    }
                    for arch, digest in entries.items()
                ],
            }
        ).encode()
        self.manifests[tag] = (OCI_INDEX, index)


class _RegistryHandler(http.server.BaseHTTPRequestHandler):
    server: _RegistryServer

    def do_GET(self) -> None:
        registry = self.server.registry
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/token":
            if self.headers.get("Authorization") != CREDENTIALS:
                self._reply(401, b"{}")
                return
            registry.token_requests.append(url.query)
            self._reply(200, json.dumps({"token": TOKEN}).encode())
            return
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            realm = f"http://{registry.host}/token"
            self._reply(401, b"{}", {"WWW-Authenticate": f'Bearer realm="{realm}",service="test-registry"'})
            return
        if url.path == "/v2/":
            self._reply(200, b"{}")
            return
        _, _, repository_and_rest = url.path.partition("/v2/")
        _repository, kind, reference = repository_and_rest.rsplit("/", 2)
        if kind == "manifests" and reference in registry.manifests:
            media_type, body = registry.manifests[reference]
            self._reply(200, body, {"Content-Type": media_type})
        elif kind == "blobs" and reference in registry.blobs:
            self._reply(200, registry.blobs[reference])
        else:
            error = {"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown"}]}
            self._reply(404, json.dumps(error).encode())

    def _reply(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _RegistryServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    registry: Registry


@pytest.fixture
def registry(images: Images) -> Iterator[Registry]:
    server = _RegistryServer(("127.0.0.1", 0), _RegistryHandler)
    server.registry = Registry(f"127.0.0.1:{server.server_address[1]}")
    disk = images["disk.qcow2"].read_bytes()
    wanted = server.registry.add_image(
        "v1",
        [_layer({"disk/.wh.old.img": b"", "disk/disk.img": disk})],
        host_architecture(),
        ["INSTANCETYPE_KUBEVIRT_IO_DEFAULT_INSTANCETYPE=u1.small", "PATH=/bin"],
    )
    other = server.registry.add_image("other", [_layer({"disk/disk.img": b"\x00" * 1024})], "s390x", [])
    server.registry.add_index("multi", {"s390x": other, host_architecture(): wanted})
    server.registry.add_image("nodisk", [_layer({"etc/motd": b"hello"})], host_architecture(), [])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.registry
    server.shutdown()
    server.server_close()


def _registry_env(registry: Registry, image: str, **extra: str) -> dict[str, str]:
    return {
        "IMPORTER_SOURCE": "registry",
        "IMPORTER_ENDPOINT": f"docker://{registry.host}/containerdisks/{image}",
        "IMPORTER_IMAGE_SIZE": str(64 * MIB),
        "IMPORTER_ACCESS_KEY_ID": "puller",
        "IMPORTER_SECRET_KEY": "secret",
        "INSECURE_TLS": "true",
        **extra,
    }


def test_the_disk_of_the_platforms_image_is_imported(pod: Pod, registry: Registry, images: Images) -> None:
    result = pod.run(_registry_env(registry, "disk:multi"))
    assert result.returncode == 0, result.output
    assert json.loads(result.message) == {
        "scratchSpaceRequired": False,
        "preallocationApplied": False,
        "labels": {"instancetype.kubevirt.io/default-instancetype": "u1.small"},
        "message": "Import Complete",
    }
    compare = subprocess.run(
        ["qemu-img", "compare", "-F", "raw", str(images.raw), str(pod.disk)], capture_output=True
    )
    assert compare.returncode == 0, compare.stdout
    assert registry.token_requests
    assert "scope=repository%3Acontainerdisks%2Fdisk%3Apull" in registry.token_requests[0]
    assert "service=test-registry" in registry.token_requests[0]


def test_an_image_without_a_disk_is_refused(pod: Pod, registry: Registry) -> None:
    result = pod.run(_registry_env(registry, "disk:nodisk"))
    assert result.returncode == 1
    assert result.message == (
        "Unable to process data: Unable to transfer source data to scratch space: Failed to read registry "
        "image: Failed to find VM disk image file in the container image"
    )


def test_a_missing_image_is_a_failed_pull(pod: Pod, registry: Registry) -> None:
    result = pod.run(_registry_env(registry, "disk:v2"))
    assert result.returncode == 1
    assert "failed to pull image: reading manifest v2 in " in result.message
    assert result.message.endswith("manifest unknown")


def test_an_unreachable_registry_is_a_failed_pull(pod: Pod) -> None:
    env = _registry_env(Registry("127.0.0.1:1"), "disk:v1")
    result = pod.run(env)
    assert result.returncode == 1
    assert "failed to pull image: pinging container registry 127.0.0.1:1" in result.message


def test_a_requested_architecture_the_image_lacks_is_refused(pod: Pod, registry: Registry) -> None:
    result = pod.run(_registry_env(registry, "disk:other", IMPORTER_REGISTRY_IMAGE_ARCHITECTURE="arm64"))
    assert result.returncode == 1
    assert (
        'manifest image architecture: "s390x" doesn\'t match requested architecture: "arm64"'
        in result.message
    )


def test_a_registry_import_without_scratch_space_asks_for_it(pod: Pod, registry: Registry) -> None:
    pod.scratch.rmdir()
    result = pod.run(_registry_env(registry, "disk:v1"))
    assert result.returncode == 0
    assert json.loads(result.message)["scratchSpaceRequired"] is True


def test_other_content_types_are_refused_for_registries(pod: Pod, registry: Registry) -> None:
    result = pod.run(_registry_env(registry, "disk:v1", IMPORTER_CONTENTTYPE="archive"))
    assert (result.returncode, result.message) == (
        1,
        "Unsupported content type archive when importing from registry",
    )
