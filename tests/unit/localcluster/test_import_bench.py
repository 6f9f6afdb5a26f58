"""The import benchmark's own parts: the image it makes (the same bytes each time, sparse, about half
data), fetching it from its server, the DataVolume it creates, how it reads the importer's run time and
failures, and its figures."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import urllib.error
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import import_bench as bench  # noqa: E402

from kubevirt.cdi import sizes  # noqa: E402

MIB = 1 << 20
needs_qemu_img = pytest.mark.skipif(shutil.which("qemu-img") is None, reason="qemu-img is not installed")


def digest(chunks: Any) -> str:
    hashed = hashlib.sha256()
    for chunk in chunks:
        hashed.update(chunk)
    return hashed.hexdigest()


def test_the_image_is_the_same_for_a_seed_and_another_for_another_seed() -> None:
    assert digest(bench.image_chunks(16)) == digest(bench.image_chunks(16))
    assert digest(bench.image_chunks(16)) != digest(bench.image_chunks(16, seed=bench.SEED + 1))


def test_the_image_is_whole_mib_about_half_of_them_random_data() -> None:
    chunks = list(bench.image_chunks(64))
    assert [len(c) for c in chunks] == [MIB] * 64
    zero = [c for c in chunks if c.count(0) == MIB]
    assert 16 <= len(zero) <= 48
    # The data blocks are random, not a pattern a compressor or deduplication would shrink.
    data = [c for c in chunks if c.count(0) != MIB]
    assert len({hashlib.sha256(c).digest() for c in data}) == len(data)
    assert all(c.count(0) < MIB // 128 for c in data)


def test_a_sparse_write_keeps_the_bytes_and_leaves_zero_chunks_unallocated(tmp_path: Path) -> None:
    chunks = [b"\1" * MIB, bytes(MIB), bytes(MIB), b"\2" * MIB, bytes(MIB)]
    target = tmp_path / "image"
    assert bench.write_sparse(chunks, target) == 5 * MIB
    assert target.read_bytes() == b"".join(chunks)
    assert target.stat().st_blocks * 512 <= 2 * MIB + 64 * 1024  # the two data chunks, not the zeros


@needs_qemu_img
def test_the_images_are_a_raw_one_and_its_qcow2_of_the_same_virtual_size(tmp_path: Path) -> None:
    images = bench.make_images(tmp_path, 8)
    assert images["raw"].stat().st_size == 8 * MIB
    assert images["raw"].read_bytes() == b"".join(bench.image_chunks(8))
    info = subprocess.run(
        ["qemu-img", "info", "--output=json", str(images["qcow2"])],
        capture_output=True,
        text=True,
        check=True,
    )
    assert (json.loads(info.stdout)["format"], json.loads(info.stdout)["virtual-size"]) == ("qcow2", 8 * MIB)
    back = tmp_path / "back.raw"
    bench.qemu_img_convert(images["qcow2"], back, "qcow2", "raw")
    assert back.read_bytes() == images["raw"].read_bytes()


@needs_qemu_img
def test_a_failed_conversion_is_an_error_with_qemu_imgs_words(tmp_path: Path) -> None:
    (tmp_path / "not.qcow2").write_bytes(b"not an image")
    with pytest.raises(RuntimeError, match=r"qemu-img convert .*not\.qcow2 to raw: "):
        bench.qemu_img_convert(tmp_path / "not.qcow2", tmp_path / "out", "qcow2", "raw")


def test_fetching_from_the_server_copies_the_file_and_the_server_stops(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    bench.write_sparse(bench.image_chunks(4), served / "image.raw")
    with bench.serving(served, "127.0.0.1") as base:
        assert base.startswith("http://127.0.0.1:")
        assert bench.fetch(f"{base}/image.raw", tmp_path / "copy") == 4 * MIB
    assert (tmp_path / "copy").read_bytes() == (served / "image.raw").read_bytes()
    with pytest.raises(urllib.error.URLError, match="Connection refused"):
        bench.fetch(f"{base}/image.raw", tmp_path / "again")


def test_the_request_holds_the_image_once_cdis_overhead_is_set_aside() -> None:
    request = bench.storage_request(1024 * MIB)
    assert request == "1086Mi"
    claim = int(request.removesuffix("Mi")) * MIB
    assert sizes.usable_space(0.06, claim) >= 1024 * MIB
    assert sizes.usable_space(0.06, claim - MIB) < 1024 * MIB  # and no more than that
    assert bench.storage_request(1024 * MIB, overhead="0") == "1024Mi"


def test_the_datavolume_imports_the_url_binding_at_once_and_keeping_its_pod() -> None:
    dv = bench.data_volume("raw-0", "http://10.244.0.1:8000/bench-import.raw", "1086Mi")
    assert (dv["apiVersion"], dv["kind"], dv["metadata"]["name"]) == (
        "cdi.kubevirt.io/v1beta1",
        "DataVolume",
        "raw-0",
    )
    assert dv["metadata"]["annotations"] == {
        "cdi.kubevirt.io/storage.bind.immediate.requested": "true",
        "cdi.kubevirt.io/storage.pod.retainAfterCompletion": "true",
    }
    assert dv["spec"] == {
        "source": {"http": {"url": "http://10.244.0.1:8000/bench-import.raw"}},
        "storage": {"resources": {"requests": {"storage": "1086Mi"}}},
    }


def importer_pod(state: dict[str, Any]) -> dict[str, Any]:
    return {"status": {"containerStatuses": [{"name": "importer", "state": state}]}}


def test_the_importer_time_is_read_from_a_finished_import_only() -> None:
    finished = {"exitCode": 0, "startedAt": "2025-01-01T10:00:03Z", "finishedAt": "2025-01-01T10:00:41Z"}
    assert bench.container_seconds(importer_pod({"terminated": finished})) == 38.0
    assert bench.container_seconds(importer_pod({"running": {"startedAt": "2025-01-01T10:00:03Z"}})) is None
    assert bench.container_seconds(importer_pod({"terminated": {**finished, "exitCode": 1}})) is None
    scratch = {**finished, "message": json.dumps({"scratchSpaceRequired": True})}
    assert bench.container_seconds(importer_pod({"terminated": scratch})) is None
    assert bench.container_seconds({}) is None


def test_a_failed_or_restarting_import_is_reported_with_its_reason() -> None:
    running = {"type": "Running", "status": "False", "reason": "Error", "message": "got 404"}
    restarting = {"status": {"phase": "ImportInProgress", "restartCount": 1, "conditions": [running]}}
    assert bench.import_failure(restarting) == "phase ImportInProgress: Error: got 404"
    assert bench.import_failure({"status": {"phase": "Failed"}}) == "phase Failed: None: None"
    assert bench.import_failure({"status": {"phase": "ImportInProgress", "restartCount": 0}}) is None
    assert bench.import_failure({}) is None


def test_the_figures_are_medians_in_mib_per_second_and_the_ratio_to_the_direct_path() -> None:
    result = bench.summary(
        1024, [10.0, 12.0, 11.0], [9.0, 10.0], [2.5, 2.0, 1.5], [2.0, 3.0, 2.0], [16.0, 15.0, 17.0]
    )
    assert result == {
        "runs": 3,
        "datavolume_seconds": 11.0,
        "datavolume_mib_s": 93.1,
        "importer_container_seconds": 9.5,
        "fetch_seconds": 2.0,
        "fetch_mib_s": 512.0,
        "convert_seconds": 2.0,
        "convert_mib_s": 512.0,
        "direct_seconds": 4.0,
        "direct_mib_s": 256.0,
        "ratio": 0.364,
        "upload_seconds": 16.0,
        "upload_mib_s": 64.0,
    }
    assert bench.summary(1024, [8.0], [], [1.0], [1.0], [])["importer_container_seconds"] is None
    assert bench.summary(1024, [8.0], [], [1.0], [1.0], [])["upload_mib_s"] is None


def test_the_table_has_a_row_per_format_with_its_figures() -> None:
    raw = bench.summary(1024, [10.0], [], [2.0], [2.0], [])
    qcow2 = bench.summary(1024, [16.0], [14.0], [1.0], [4.0], [8.0])
    lines = bench.table({"raw": raw, "qcow2": qcow2}).splitlines()
    assert lines[0].split()[:3] == ["format", "DV", "s"]
    assert lines[1].split() == ["raw", "10.0", "102.4", "-", "512.0", "512.0", "256.0", "0.4", "-", "-"]
    assert lines[2].split() == [
        "qcow2",
        "16.0",
        "64.0",
        "14.0",
        "1024.0",
        "256.0",
        "204.8",
        "0.312",
        "8.0",
        "128.0",
    ]
    assert len({len(line) for line in lines}) == 1  # aligned
