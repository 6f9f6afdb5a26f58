"""The test image server: its HTTP answers (exact lengths, byte ranges, HEAD), its registry v2 answers, the
files and containerDisk it is built with (each format what its name says, the bad ones really bad), its
image's layers and its cluster objects."""

from __future__ import annotations

import gzip
import hashlib
import http.client
import io
import json
import lzma
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import images, imageserver, oci, recipe, testguest  # noqa: E402
from localcluster.imageserver import files, server  # noqa: E402
from localcluster.layout import Layout, image_name  # noqa: E402

CONTENT = bytes(range(256)) * 40  # 10240 bytes
needs_qemu_img = pytest.mark.skipif(shutil.which("qemu-img") is None, reason="qemu-img is not installed")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A server of a folder with ``disk.raw`` (CONTENT), an empty file and an index, on a free port."""
    root = tmp_path_factory.mktemp("served")
    (root / "sub").mkdir()
    (root / "disk.raw").write_bytes(CONTENT)
    (root / "empty").write_bytes(b"")
    (root / "index.json").write_text('{"files": []}\n')
    (root / "sub" / "hidden").write_bytes(b"secret")
    httpd = server.make_server(root, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield "127.0.0.1", httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


def _ask(
    served: tuple[str, int], path: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(*served, timeout=10)
    try:
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_get_answers_the_whole_file_with_its_exact_length(served: tuple[str, int]) -> None:
    status, headers, body = _ask(served, "/disk.raw")
    assert status == 200
    assert body == CONTENT
    assert headers["Content-Length"] == str(len(CONTENT))
    assert headers["Accept-Ranges"] == "bytes"
    assert headers["Content-Type"] == "application/octet-stream"


def test_head_answers_the_length_without_a_body(served: tuple[str, int]) -> None:
    status, headers, body = _ask(served, "/disk.raw", "HEAD")
    assert (status, body) == (200, b"")
    assert headers["Content-Length"] == str(len(CONTENT))


@pytest.mark.parametrize(
    ("asked", "first", "last"),
    [
        ("bytes=0-511", 0, 511),
        ("bytes=10000-", 10000, 10239),
        ("bytes=-100", 10140, 10239),
        ("bytes=10200-99999", 10200, 10239),  # clipped to the end
        ("bytes=-99999", 0, 10239),
    ],
)
def test_a_byte_range_answers_206_with_that_part(
    served: tuple[str, int], asked: str, first: int, last: int
) -> None:
    status, headers, body = _ask(served, "/disk.raw", headers={"Range": asked})
    assert status == 206
    assert body == CONTENT[first : last + 1]
    assert headers["Content-Length"] == str(last - first + 1)
    assert headers["Content-Range"] == f"bytes {first}-{last}/{len(CONTENT)}"


def test_head_with_a_range_answers_the_part_s_headers(served: tuple[str, int]) -> None:
    status, headers, body = _ask(served, "/disk.raw", "HEAD", {"Range": "bytes=100-199"})
    assert (status, body) == (206, b"")
    assert headers["Content-Length"] == "100"
    assert headers["Content-Range"] == "bytes 100-199/10240"


@pytest.mark.parametrize("asked", ["bytes=10240-", "bytes=20000-20001", "bytes=-0"])
def test_a_range_past_the_end_answers_416_with_the_size(served: tuple[str, int], asked: str) -> None:
    status, headers, body = _ask(served, "/disk.raw", headers={"Range": asked})
    assert (status, body) == (416, b"")
    assert headers["Content-Range"] == "bytes */10240"


@pytest.mark.parametrize("asked", ["bytes=0-1,5-6", "items=0-1", "bytes=5-2", "bytes=a-b", "bytes"])
def test_a_range_it_does_not_serve_answers_the_whole_file(served: tuple[str, int], asked: str) -> None:
    status, headers, body = _ask(served, "/disk.raw", headers={"Range": asked})
    assert (status, body) == (200, CONTENT)
    assert "Content-Range" not in headers


def test_an_empty_file_answers_zero_bytes(served: tuple[str, int]) -> None:
    status, headers, body = _ask(served, "/empty")
    assert (status, headers["Content-Length"], body) == (200, "0", b"")


@pytest.mark.parametrize(
    "path", ["/missing.qcow2", "/sub/hidden", "/sub", "/../disk.raw", "/%2e%2e/etc/passwd"]
)
def test_only_the_folder_s_own_files_are_served(served: tuple[str, int], path: str) -> None:
    status, headers, body = _ask(served, path)
    assert status == 404
    assert headers["Content-Length"] == str(len(body))


def test_the_root_answers_the_index_and_healthz_the_probe(served: tuple[str, int]) -> None:
    status, headers, body = _ask(served, "/")
    assert (status, headers["Content-Type"], json.loads(body)) == (200, "application/json", {"files": []})
    assert _ask(served, server.HEALTH_PATH)[::2] == (200, b"ok\n")


def test_a_kept_alive_connection_serves_ranges_one_after_another(served: tuple[str, int]) -> None:
    connection = http.client.HTTPConnection(*served, timeout=10)
    try:
        for first in (0, 4096, 8192):
            connection.request("GET", "/disk.raw", headers={"Range": f"bytes={first}-{first + 1023}"})
            response = connection.getresponse()
            assert response.read() == CONTENT[first : first + 1024]
    finally:
        connection.close()


# The files the image is built with, made from small stand-in disks.
DISK_SIZE = 1 << 20


def _disk(seed: str) -> bytes:
    block = hashlib.sha256(seed.encode()).digest() * 16  # 512 bytes, different per guest
    return (block + bytes(3584)) * (DISK_SIZE // 4096)  # data and holes, like a FAT disk


def _stand_in_guests(directory: Path) -> dict[str, testguest.TestGuest]:
    """Test guests of every flavour with small stand-in disks, kernels and initramfs."""
    guests = {}
    for flavour in testguest.FLAVOURS:
        guest = testguest.TestGuest(directory / flavour.name, flavour)
        guest.directory.mkdir(parents=True)
        guest.disk.write_bytes(_disk(flavour.name))
        guest.kernel.write_bytes(b"kernel")
        guest.initrd.write_bytes(b"initrd")
        guests[flavour.name] = guest
    return guests


IS_ROOT = os.geteuid() == 0


def _chown_only_as_root(patch: pytest.MonkeyPatch) -> None:
    """Without root the builder cannot give the disk to the qemu user: the layer keeps the tester's."""
    if not IS_ROOT:
        patch.setattr(os, "chown", lambda *_: None)


@pytest.fixture(scope="module")
def container_disks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, oci.Layer]:
    """The compatible guests' containerDisk layers, as hack/build-images makes them of stand-in guests."""
    work = tmp_path_factory.mktemp("container-disks")
    guests = _stand_in_guests(work / "guests")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(testguest, "build_all", lambda cache: guests)
        _chown_only_as_root(patch)
        built = images.Builder(
            Layout(state=work / "state", cache=work / "cache"), log=False
        ).test_guest_layers()
    return {name: built[name].layer for name in images.COMPATIBLE_GUEST_IMAGES}


@pytest.fixture(scope="module")
def generated(
    tmp_path_factory: pytest.TempPathFactory, container_disks: dict[str, oci.Layer]
) -> tuple[Path, list[dict[str, object]]]:
    work = tmp_path_factory.mktemp("imageserver")
    disks = {}
    for flavour in testguest.FLAVOURS:
        disks[flavour.name] = work / flavour.disk_name
        disks[flavour.name].write_bytes(_disk(flavour.name))
    (work / "out").mkdir()
    return work / "out", files.generate(disks, work / "out", container_disks)


def _qemu_img_info(path: Path) -> dict[str, Any]:
    found = subprocess.run(["qemu-img", "info", "--output=json", str(path)], capture_output=True, check=True)
    loaded = json.loads(found.stdout)
    assert isinstance(loaded, dict)
    return loaded


def _decompressed(path: Path, compression: str) -> bytes:
    if compression == files.GZ:
        return gzip.decompress(path.read_bytes())
    if compression == files.XZ:
        return lzma.decompress(path.read_bytes())
    return path.read_bytes()


@needs_qemu_img
def test_the_folder_holds_every_form_of_every_guest_and_the_bad_inputs(
    generated: tuple[Path, list[dict[str, object]]],
) -> None:
    out, entries = generated
    assert sorted(path.name for path in out.iterdir() if path.is_file()) == sorted(files.file_names())
    assert sorted(path.name for path in out.iterdir() if path.is_dir()) == [server.REGISTRY_DIR]
    names = set(files.file_names())
    plain = testguest.TEST_GUEST.name
    assert {f"{plain}.{ext}" for ext in ("raw", "qcow2", "raw.gz", "raw.xz", "qcow2.gz")} <= names
    for flavour in (testguest.CIRROS_COMPATIBLE, testguest.ALPINE_COMPATIBLE):
        assert f"{flavour.name}.qcow2" in names
    assert {f"{plain}-truncated.qcow2", f"{plain}-truncated.raw.xz", files.NOT_A_DISK} <= names
    assert [entry["name"] for entry in entries] == [
        name for name in files.file_names() if name != files.INDEX
    ]


@needs_qemu_img
def test_each_complete_file_is_its_guest_s_disk_in_the_named_format(
    generated: tuple[Path, list[dict[str, object]]], tmp_path: Path
) -> None:
    out, entries = generated
    for entry in entries:
        if entry["truncated"] or not entry["guest"]:
            continue
        data = _decompressed(out / str(entry["name"]), str(entry["compression"]))
        (tmp_path / "plain").write_bytes(data)
        info = _qemu_img_info(tmp_path / "plain")
        assert (info["format"], info["virtual-size"]) == (entry["format"], DISK_SIZE), entry["name"]
        assert entry["virtualSize"] == DISK_SIZE
        if entry["format"] == files.RAW:
            assert data == _disk(str(entry["guest"])), entry["name"]
        else:
            convert = ["qemu-img", "convert", "-O", "raw", str(tmp_path / "plain"), str(tmp_path / "raw")]
            subprocess.run(convert, capture_output=True, check=True)
            assert (tmp_path / "raw").read_bytes() == _disk(str(entry["guest"])), entry["name"]


@needs_qemu_img
def test_the_truncated_files_are_half_of_a_complete_one_and_fail_to_read(
    generated: tuple[Path, list[dict[str, object]]],
) -> None:
    out, _ = generated
    plain = testguest.TEST_GUEST.name
    qcow2, xz = out / f"{plain}-truncated.qcow2", out / f"{plain}-truncated.raw.xz"
    assert qcow2.stat().st_size == (out / f"{plain}.qcow2").stat().st_size // 2
    assert xz.stat().st_size == (out / f"{plain}.raw.xz").stat().st_size // 2
    check = subprocess.run(["qemu-img", "check", str(qcow2)], capture_output=True, check=False)
    assert check.returncode != 0  # clusters past the end of the file
    with pytest.raises(lzma.LZMAError, match="ended before"):
        lzma.decompress(xz.read_bytes())


@needs_qemu_img
def test_the_index_lists_each_file_s_size_and_digest(generated: tuple[Path, list[dict[str, object]]]) -> None:
    out, entries = generated
    index = json.loads((out / files.INDEX).read_text())
    assert index["files"] == entries
    tags = json.loads((out / server.REGISTRY_DIR / server.TAGS_FILE).read_text())
    digest = tags["repositories"][files.REGISTRY_REPOSITORY]["tags"]["devel"]
    assert index["images"] == [
        {"image": image, "digest": digest, "mediaType": OCI_MANIFEST} for image in files.registry_images()
    ]
    for entry in entries:
        data = (out / str(entry["name"])).read_bytes()
        assert (entry["size"], entry["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
    (not_a_disk,) = [entry for entry in entries if entry["name"] == files.NOT_A_DISK]
    assert (not_a_disk["format"], not_a_disk["guest"]) == ("", "")
    assert (out / files.NOT_A_DISK).read_text() == files.NOT_A_DISK_TEXT


@needs_qemu_img
def test_gzip_files_record_no_time_so_rebuilds_are_identical(
    generated: tuple[Path, list[dict[str, object]]],
) -> None:
    out, _ = generated
    header = (out / f"{testguest.TEST_GUEST.name}.raw.gz").read_bytes()[:10]
    assert header[:2] == b"\x1f\x8b"
    assert header[4:8] == bytes(4)


def test_a_missing_guest_disk_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=testguest.ALPINE_COMPATIBLE.name):
        files.generate({testguest.TEST_GUEST.name: tmp_path / "disk"}, tmp_path, {})
    assert list(tmp_path.iterdir()) == []


def test_a_missing_container_disk_is_named(tmp_path: Path) -> None:
    disks = {flavour.name: tmp_path / "disk" for flavour in testguest.FLAVOURS}
    with pytest.raises(ValueError, match=f"containerDisk layer for {testguest.CIRROS_COMPATIBLE.name}"):
        files.generate(disks, tmp_path, {})
    assert list(tmp_path.iterdir()) == []


# The registry: the CirrOS-compatible guest's containerDisk under /v2/.
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
REPOSITORY = files.REGISTRY_REPOSITORY


@pytest.fixture(scope="module")
def registry_root(tmp_path_factory: pytest.TempPathFactory, container_disks: dict[str, oci.Layer]) -> Path:
    root = tmp_path_factory.mktemp("registry-root")
    (root / "index.json").write_text("{}")
    files.write_registry({REPOSITORY: container_disks[REPOSITORY]}, root / server.REGISTRY_DIR, root)
    return root


@pytest.fixture(scope="module")
def registry(registry_root: Path) -> Iterator[tuple[str, int]]:
    httpd = server.make_server(registry_root, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield "127.0.0.1", httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


def _manifest(registry: tuple[str, int], reference: str = "devel") -> tuple[dict[str, str], dict[str, Any]]:
    status, headers, body = _ask(registry, f"/v2/{REPOSITORY}/manifests/{reference}")
    assert status == 200, body
    assert headers["Docker-Content-Digest"] == "sha256:" + hashlib.sha256(body).hexdigest()
    document = json.loads(body)
    assert isinstance(document, dict)
    return headers, document


def _error_code(body: bytes) -> str:
    errors = json.loads(body)["errors"]
    assert len(errors) == 1
    assert errors[0]["message"]
    return str(errors[0]["code"])


@pytest.mark.parametrize("path", ["/v2/", "/v2"])
def test_the_api_root_answers_an_empty_object_with_the_api_version(
    registry: tuple[str, int], path: str
) -> None:
    status, headers, body = _ask(registry, path)
    assert (status, body, headers["Content-Type"]) == (200, b"{}", "application/json")
    assert headers["Docker-Distribution-API-Version"] == "registry/2.0"
    assert _ask(registry, path, "HEAD")[::2] == (200, b"")


def test_both_tags_name_one_oci_manifest_of_a_config_and_one_layer(registry: tuple[str, int]) -> None:
    headers, manifest = _manifest(registry, "devel")
    assert headers["Content-Type"] == manifest["mediaType"] == OCI_MANIFEST
    assert headers["Docker-Distribution-API-Version"] == "registry/2.0"
    assert _manifest(registry, "latest") == (headers, manifest)
    assert _manifest(registry, headers["Docker-Content-Digest"]) == (headers, manifest)
    assert manifest["config"]["mediaType"] == "application/vnd.oci.image.config.v1+json"
    (layer,) = manifest["layers"]
    assert layer["mediaType"] == "application/vnd.oci.image.layer.v1.tar"


def test_the_manifest_is_hack_build_images_containerdisk_image(
    registry: tuple[str, int], container_disks: dict[str, oci.Layer], tmp_path: Path
) -> None:
    headers, _ = _manifest(registry)
    # What images.Builder writes for the image of the same name (its config: no entrypoint, no env).
    built = oci.write_archive(
        tmp_path / "image.tar",
        image_name(REPOSITORY),
        [container_disks[REPOSITORY]],
        oci.ImageConfig(entrypoint=[], cmd=[], env=[]),
    )
    assert headers["Docker-Content-Digest"] == built


def test_head_of_a_manifest_answers_its_headers_only(registry: tuple[str, int]) -> None:
    headers, _ = _manifest(registry)
    status, head_headers, body = _ask(registry, f"/v2/{REPOSITORY}/manifests/devel", "HEAD")
    assert (status, body) == (200, b"")
    for name in ("Content-Type", "Content-Length", "Docker-Content-Digest"):
        assert head_headers[name] == headers[name]


def test_the_blobs_are_the_config_and_the_layer_with_the_disk_owned_by_qemu(
    registry: tuple[str, int],
) -> None:
    _, manifest = _manifest(registry)
    for descriptor in (manifest["config"], *manifest["layers"]):
        status, headers, body = _ask(registry, f"/v2/{REPOSITORY}/blobs/{descriptor['digest']}")
        assert status == 200
        assert headers["Docker-Content-Digest"] == descriptor["digest"]
        assert headers["Content-Length"] == str(descriptor["size"]) == str(len(body))
        assert "sha256:" + hashlib.sha256(body).hexdigest() == descriptor["digest"]
        if descriptor is manifest["config"]:
            config = json.loads(body)
            assert (config["os"], config["rootfs"]["diff_ids"]) == (
                "linux",
                [manifest["layers"][0]["digest"]],
            )
            continue
        with tarfile.open(fileobj=io.BytesIO(body)) as tar:
            disk = tar.getmember(f"disk/{testguest.CIRROS_COMPATIBLE.disk_name}")
            assert disk.mode == 0o440
            if IS_ROOT:
                assert (disk.uid, disk.gid) == (images.QEMU_UID, images.QEMU_UID)
            extracted = tar.extractfile(disk)
            assert extracted is not None
            assert extracted.read() == _disk(REPOSITORY)
            assert [member.name for member in tar.getmembers() if member.isfile()] == [disk.name]


def test_head_of_a_blob_answers_its_length_only(registry: tuple[str, int]) -> None:
    _, manifest = _manifest(registry)
    layer = manifest["layers"][0]
    status, headers, body = _ask(registry, f"/v2/{REPOSITORY}/blobs/{layer['digest']}", "HEAD")
    assert (status, body, headers["Content-Length"]) == (200, b"", str(layer["size"]))


@pytest.mark.parametrize(
    ("path", "code"),
    [
        (f"/v2/{REPOSITORY}/manifests/v1", "MANIFEST_UNKNOWN"),
        (f"/v2/{REPOSITORY}/manifests/sha256:{'0' * 64}", "MANIFEST_UNKNOWN"),
        (f"/v2/{REPOSITORY}/blobs/sha256:{'0' * 64}", "BLOB_UNKNOWN"),
        (f"/v2/{REPOSITORY}/blobs/sha256:abc", "BLOB_UNKNOWN"),
        (f"/v2/{REPOSITORY}/blobs/{server.TAGS_FILE}", "BLOB_UNKNOWN"),
        ("/v2/other/manifests/devel", "NAME_UNKNOWN"),
        (f"/v2/library/{REPOSITORY}/manifests/devel", "NAME_UNKNOWN"),
        (f"/v2/{REPOSITORY}/blobs/..%2f..%2f{server.TAGS_FILE}", "NAME_INVALID"),
        (f"/v2/{REPOSITORY}/tags/list", "NAME_INVALID"),
        ("/v2/../index.json", "NAME_INVALID"),
    ],
)
def test_what_the_registry_lacks_answers_404_with_a_registry_error(
    registry: tuple[str, int], path: str, code: str
) -> None:
    status, headers, body = _ask(registry, path)
    assert (status, headers["Content-Type"], _error_code(body)) == (404, "application/json", code)
    assert headers["Docker-Distribution-API-Version"] == "registry/2.0"
    assert _ask(registry, path, "HEAD")[::2] == (404, b"")


def test_the_registry_folder_is_not_served_as_plain_files(
    registry: tuple[str, int],
) -> None:
    assert _ask(registry, f"/{server.REGISTRY_DIR}/{server.TAGS_FILE}")[0] == 404
    assert _ask(registry, f"/{server.REGISTRY_DIR}")[0] == 404


def test_a_tls_handshake_is_refused_at_once_and_plain_http_still_served(registry: tuple[str, int]) -> None:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    started = time.monotonic()
    with socket.create_connection(registry, timeout=10) as raw, pytest.raises(ssl.SSLError, match="ALERT"):
        context.wrap_socket(raw, server_hostname="image-server")
    assert time.monotonic() - started < 5
    assert _ask(registry, "/v2/")[0] == 200


# The image, composed without debootstrap or a chroot.
class _ComposingBuilder(images.Builder):
    def __init__(self, layout: Layout) -> None:
        super().__init__(layout, log=False)
        self.configs: dict[str, oci.ImageConfig] = {}
        self.composed: dict[str, list[str]] = {}
        self.made: list[Path] = []  # the folders the files were made in

    def debian(self) -> images.BuiltLayer:
        return images.BuiltLayer("debian", Path("/nonexistent"), oci.Layer(Path("/nonexistent"), "debian", 0))

    def pause_layer(self) -> images.BuiltLayer:
        return images.BuiltLayer("pause", Path("/nonexistent"), oci.Layer(Path("/nonexistent"), "pause", 0))

    def run_stage(self, name: str, parents: list[images.BuiltLayer], *_: Any, **__: Any) -> images.BuiltLayer:
        return images.BuiltLayer(name, Path("/nonexistent"), oci.Layer(Path("/nonexistent"), name, 0))

    def wheels(self) -> tuple[Path, str]:
        return Path("/nonexistent/wheels"), "wheels"

    def container_disk(self) -> tuple[Path, str]:
        return Path("/nonexistent/container-disk"), "container-disk"

    def archive(
        self, name: str, file_stem: str, layers: list[images.BuiltLayer], config: oci.ImageConfig
    ) -> images.BuiltImage:
        self.configs[name] = config
        self.composed[name] = [layer.key for layer in layers]
        return images.BuiltImage(name, Path("/nonexistent"), file_stem, 0)

    def _prune(self, used: set[str]) -> None:
        pass


@pytest.fixture
def builder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> _ComposingBuilder:
    """A builder whose test guests are stand-ins, with a record of how often the files were made."""
    guests = _stand_in_guests(tmp_path / "guests")
    monkeypatch.setattr(testguest, "build_all", lambda cache: guests)
    _chown_only_as_root(monkeypatch)
    built = _ComposingBuilder(Layout(state=tmp_path / "state", cache=tmp_path / "cache"))

    def generate(
        disks: dict[str, Path], out: Path, container_disks: dict[str, oci.Layer]
    ) -> list[dict[str, object]]:
        assert disks == {name: guest.disk for name, guest in guests.items()}
        layers = built.test_guest_layers()
        assert container_disks == {name: layers[name].layer for name in images.COMPATIBLE_GUEST_IMAGES}
        built.made.append(out)
        (out / server.REGISTRY_DIR / "blobs").mkdir(parents=True)
        (out / files.INDEX).write_text("{}")
        return []

    monkeypatch.setattr(files, "generate", generate)
    return built


def test_the_image_is_python_s_base_then_the_files_then_the_server_run_without_privileges(
    builder: _ComposingBuilder,
) -> None:
    built = builder._build([imageserver.IMAGE])
    name = image_name(imageserver.IMAGE)
    assert [image.name for image in built] == ["localhost/kubevirt/pause:3.10", name]
    files_layer, server_layer = builder.image_server_layers()
    assert builder.composed[name] == ["debian", "base", files_layer.key, server_layer.key]
    config = builder.configs[name]
    assert (config.entrypoint, config.cmd) == (imageserver.ENTRYPOINT, imageserver.ARGS)
    assert config.user == recipe.NON_ROOT_IMAGE_USER
    with tarfile.open(files_layer.layer.path) as tar:
        root = imageserver.ROOT.lstrip("/")
        assert tar.getmember(f"{root}/{files.INDEX}").mode == 0o444
        # Every folder readable and searchable by the server's unprivileged user, none writable.
        for folder in (root, f"{root}/{server.REGISTRY_DIR}", f"{root}/{server.REGISTRY_DIR}/blobs"):
            assert tar.getmember(folder).mode == 0o555
    with tarfile.open(server_layer.layer.path) as tar:
        program = tar.getmember(imageserver.SERVER_PATH.lstrip("/"))
        assert program.mode == 0o444
        extracted = tar.extractfile(program)
        assert extracted is not None
        assert extracted.read() == imageserver.SERVER_SOURCE.read_bytes()


def test_the_files_are_made_once_per_guest_build(builder: _ComposingBuilder) -> None:
    first = builder.image_server_layers()
    assert builder.image_server_layers() == first
    assert len(builder.made) == 1


def test_other_builds_leave_the_image_server_out(builder: _ComposingBuilder) -> None:
    builder._build(["virt-api"])
    assert image_name(imageserver.IMAGE) not in builder.configs
    assert imageserver.IMAGE not in images.TEST_GUEST_IMAGES


# Its objects on the cluster.
def test_the_service_reaches_the_deployment_s_ready_server_port() -> None:
    namespace, deployment, service = imageserver.objects()
    assert namespace["metadata"]["name"] == imageserver.NAMESPACE
    assert deployment["metadata"]["namespace"] == service["metadata"]["namespace"] == imageserver.NAMESPACE
    template = deployment["spec"]["template"]
    assert deployment["spec"]["selector"]["matchLabels"] == template["metadata"]["labels"]
    assert service["spec"]["selector"] == template["metadata"]["labels"]
    (container,) = template["spec"]["containers"]
    assert (container["image"], container["imagePullPolicy"]) == (image_name(imageserver.IMAGE), "Never")
    http_port, tls_port = service["spec"]["ports"]
    assert (http_port["port"], http_port["targetPort"]) == (80, container["ports"][0]["containerPort"])
    # A registry client's https attempt reaches the server, which refuses its handshake at once.
    assert (tls_port["port"], tls_port["targetPort"]) == (443, imageserver.PORT)
    assert container["readinessProbe"]["httpGet"] == {"path": server.HEALTH_PATH, "port": imageserver.PORT}
    assert container["securityContext"]["runAsNonRoot"] is True
    assert imageserver.PORT >= 1024  # no privilege to bind below


def test_a_file_s_url_is_the_service_s_cluster_name() -> None:
    assert imageserver.url("test-guest.qcow2") == (
        "http://image-server.test-images.svc.cluster.local/test-guest.qcow2"
    )


def test_the_registry_image_s_url_is_a_port_less_docker_reference_of_the_service() -> None:
    assert imageserver.REGISTRY_HOST == "image-server.test-images.svc.cluster.local"
    assert imageserver.REGISTRY_IMAGE == "test-guest-cirros-compatible:devel"
    assert imageserver.registry_url() == (
        "docker://image-server.test-images.svc.cluster.local/test-guest-cirros-compatible:devel"
    )
    assert files.registry_images() == [imageserver.REGISTRY_IMAGE, "test-guest-cirros-compatible:latest"]
