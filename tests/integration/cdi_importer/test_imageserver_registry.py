"""The importer pulls the test image server's containerDisk (hack/cluster/localcluster/imageserver) as
functional tests make it do in the cluster: an insecure registry, tried over https first, then plain http.
The server runs as in its image: its own file on Python alone (isolated, no project code)."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.cdi_importer.errors import ImporterError
from kubevirt.cdi_importer.registry import pull_disk
from kubevirt_testing.process import free_port

from .conftest import MIB, Images, Pod

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "hack" / "cluster"))

from localcluster import images as built_images
from localcluster import imageserver, testguest
from localcluster.imageserver import files, server
from localcluster.layout import Layout

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def registry_root(images: Images, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's registry folder of a CirrOS-compatible containerDisk whose disk is the conftest's
    qcow2, its layer made by hack/build-images' own code."""
    work = tmp_path_factory.mktemp("imageserver-registry")
    guests = {}
    for flavour in testguest.FLAVOURS:
        guest = testguest.TestGuest(work / "guests" / flavour.name, flavour)
        guest.directory.mkdir(parents=True)
        guest.disk.write_bytes(images["disk.qcow2"].read_bytes())
        guest.kernel.write_bytes(b"kernel")
        guest.initrd.write_bytes(b"initrd")
        guests[flavour.name] = guest
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(testguest, "build_all", lambda cache: guests)
        if os.geteuid() != 0:  # giving the disk to the qemu user needs root; the importer does not care
            patch.setattr(os, "chown", lambda *_: None)
        builder = built_images.Builder(Layout(state=work / "state", cache=work / "cache"), log=False)
        layer = builder.test_guest_layers()[files.REGISTRY_REPOSITORY].layer
    root = work / "root"
    root.mkdir()
    files.write_registry({files.REGISTRY_REPOSITORY: layer}, root / server.REGISTRY_DIR, work)
    return root


@pytest.fixture(scope="module")
def registry_host(registry_root: Path) -> Iterator[str]:
    """``127.0.0.1:<port>`` of the server, run from its source file as its image runs it."""
    port = free_port()
    argv = [sys.executable, "-I", str(imageserver.SERVER_SOURCE), "--root", str(registry_root)]
    process = subprocess.Popen(
        [*argv, "--port", str(port), "--address", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{server.HEALTH_PATH}", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


def _endpoint(host: str, image: str = imageserver.REGISTRY_IMAGE) -> str:
    # What imageserver.registry_url names in the cluster, with the local server's host:port.
    return imageserver.registry_url(image).replace(imageserver.REGISTRY_HOST, host, 1)


@pytest.mark.parametrize("image", files.registry_images())
def test_the_registry_client_pulls_the_disk_over_http_after_a_refused_https(
    registry_host: str, images: Images, tmp_path: Path, image: str
) -> None:
    started = time.monotonic()
    pulled = pull_disk(
        _endpoint(registry_host, image),
        tmp_path,
        None,
        ssl.create_default_context(),
        insecure=True,
        architecture="",
        preallocate=False,
    )
    assert time.monotonic() - started < 30  # the https attempt is refused, not left to time out
    assert pulled.disk == tmp_path / "disk" / testguest.CIRROS_COMPATIBLE.disk_name
    assert pulled.disk.read_bytes() == images["disk.qcow2"].read_bytes()
    assert pulled.env == ()


def test_a_secure_pull_fails_at_once_on_the_tls_refusal(registry_host: str, tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ImporterError, match=f"pinging container registry {registry_host}: .*https://"):
        pull_disk(
            _endpoint(registry_host),
            tmp_path,
            None,
            ssl.create_default_context(),
            insecure=False,
            architecture="",
            preallocate=False,
        )
    assert time.monotonic() - started < 30


def test_the_importer_imports_the_containerdisk_into_the_claim(
    pod: Pod, registry_host: str, images: Images
) -> None:
    result = pod.run(
        {
            "IMPORTER_SOURCE": "registry",
            "IMPORTER_ENDPOINT": _endpoint(registry_host),
            "IMPORTER_IMAGE_SIZE": str(64 * MIB),
            "INSECURE_TLS": "true",
        }
    )
    assert result.returncode == 0, result.output
    assert json.loads(result.message)["message"] == "Import Complete"
    compare = subprocess.run(
        ["qemu-img", "compare", "-F", "raw", str(images.raw), str(pod.disk)], capture_output=True
    )
    assert compare.returncode == 0, compare.stdout


def test_a_missing_tag_is_a_failed_pull(pod: Pod, registry_host: str) -> None:
    result = pod.run(
        {
            "IMPORTER_SOURCE": "registry",
            "IMPORTER_ENDPOINT": _endpoint(registry_host, f"{files.REGISTRY_REPOSITORY}:v0"),
            "IMPORTER_IMAGE_SIZE": str(64 * MIB),
            "INSECURE_TLS": "true",
        }
    )
    assert result.returncode == 1
    assert result.message.endswith("manifest unknown"), result.message
