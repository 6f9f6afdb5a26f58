"""The registry node pull end to end on this machine: the server script the controller gives the image's
container, run by a copy of the static busybox as the init container makes it, serves the image's disk; the
importer waits for its ready file, imports the named file and creates the done file, and the server exits."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kubevirt.cdi_controller import nodepull
from kubevirt_api.cdi.constants import NodePull
from kubevirt_testing.process import free_port

from .conftest import MIB, Images, Pod

pytestmark = pytest.mark.integration

SUCCESS = {"scratchSpaceRequired": False, "preallocationApplied": False, "message": "Import Complete"}


def _server(tmp_path: Path, disk_files: dict[str, Path]) -> tuple[subprocess.Popen[bytes], Path, int]:
    """The image's container: /disk and /shared moved under ``tmp_path``, its port a free one."""
    shared, image_dir = tmp_path / "shared", tmp_path / "disk"
    shared.mkdir(parents=True)
    image_dir.mkdir()
    for name, source in disk_files.items():
        shutil.copy(source, image_dir / name)
    busybox = shutil.which("busybox")
    assert busybox, "busybox-static is installed by the project's setup"
    shutil.copy(busybox, shared / "busybox")  # what the init container does
    port = free_port()
    script = (
        nodepull.SERVER_SCRIPT.replace(NodePull.SHARED_DIR, str(shared))
        .replace(NodePull.IMAGE_DIR, str(image_dir))
        .replace(f":{NodePull.PORT}", f":{port}")
    )
    process = subprocess.Popen([str(shared / "busybox"), "sh", "-c", script], stderr=subprocess.PIPE)
    return process, shared, port


def test_the_importer_imports_the_disk_the_images_container_serves(
    pod: Pod, images: Images, tmp_path: Path
) -> None:
    server, shared, port = _server(tmp_path / "image", {"guest.qcow2": images["disk.qcow2"]})
    try:
        result = pod.run(
            {
                "IMPORTER_SOURCE": "http",
                "IMPORTER_ENDPOINT": f"http://localhost:{port}/disk.img",
                "IMPORTER_PULL_METHOD": "node",
                "IMPORTER_READY_FILE": str(shared / "ready"),
                "IMPORTER_DONE_FILE": str(shared / "done"),
                "IMPORTER_IMAGE_SIZE": str(64 * MIB),
            }
        )
        assert (result.returncode, json.loads(result.message)) == (0, SUCCESS), result.output
        assert (shared / "ready").read_text() == "guest.qcow2"
        assert (shared / "done").exists()
        compared = subprocess.run(
            ["qemu-img", "compare", "-f", "raw", "-F", "raw", str(images.raw), str(pod.disk)],
            capture_output=True,
        )
        assert compared.returncode == 0
        assert server.wait(timeout=10) == 0  # the done file stops the server: the pod completes
    finally:
        server.kill()


def test_an_image_without_a_disk_makes_the_server_fail(tmp_path: Path) -> None:
    server, shared, _ = _server(tmp_path / "image", {})
    assert server.wait(timeout=10) == 1
    assert server.stderr is not None
    assert b"no disk image in" in server.stderr.read()
    assert not (shared / "ready").exists()
