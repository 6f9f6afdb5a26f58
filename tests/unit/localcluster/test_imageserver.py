"""The test image server: its HTTP answers (exact lengths, byte ranges, HEAD), the files it is built with
(each format what its name says, the bad ones really bad), its image's layers and its cluster objects."""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
import threading
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


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, object]]]:
    work = tmp_path_factory.mktemp("imageserver")
    disks = {}
    for flavour in testguest.FLAVOURS:
        disks[flavour.name] = work / flavour.disk_name
        disks[flavour.name].write_bytes(_disk(flavour.name))
    (work / "out").mkdir()
    return work / "out", files.generate(disks, work / "out")


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
    assert sorted(path.name for path in out.iterdir()) == sorted(files.file_names())
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
    assert index == {"files": entries}
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
        files.generate({testguest.TEST_GUEST.name: tmp_path / "disk"}, tmp_path)
    assert list(tmp_path.iterdir()) == []


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
    guests = {}
    for flavour in testguest.FLAVOURS:
        guest = testguest.TestGuest(tmp_path / "guests" / flavour.name, flavour)
        guest.directory.mkdir(parents=True)
        guest.disk.write_bytes(_disk(flavour.name))
        guests[flavour.name] = guest
    monkeypatch.setattr(testguest, "build_all", lambda cache: guests)
    built = _ComposingBuilder(Layout(state=tmp_path / "state", cache=tmp_path / "cache"))

    def generate(disks: dict[str, Path], out: Path) -> list[dict[str, object]]:
        assert disks == {name: guest.disk for name, guest in guests.items()}
        built.made.append(out)
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
        index = tar.getmember(f"{imageserver.ROOT.lstrip('/')}/{files.INDEX}")
        assert index.mode == 0o444
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
    (port,) = service["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (80, container["ports"][0]["containerPort"])
    assert container["readinessProbe"]["httpGet"] == {"path": server.HEALTH_PATH, "port": imageserver.PORT}
    assert container["securityContext"]["runAsNonRoot"] is True
    assert imageserver.PORT >= 1024  # no privilege to bind below


def test_a_file_s_url_is_the_service_s_cluster_name() -> None:
    assert imageserver.url("test-guest.qcow2") == (
        "http://image-server.test-images.svc.cluster.local/test-guest.qcow2"
    )
