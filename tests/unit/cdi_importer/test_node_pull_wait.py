"""A node pull's importer waits for the in-pod server's ready file, CDI's minute at most."""

from __future__ import annotations

from pathlib import Path

from kubevirt.cdi_importer.app import READY_FILE_TIMEOUT_SECONDS, run
from kubevirt.cdi_importer.config import Paths


def test_no_ready_file_within_a_minute_fails_with_cdis_message(tmp_path: Path) -> None:
    slept: list[float] = []
    ready = tmp_path / "shared" / "ready"
    env = {
        "IMPORTER_SOURCE": "http",
        "PREALLOCATION": "false",
        "IMPORTER_ENDPOINT": "http://localhost:8100/disk.img",
        "IMPORTER_READY_FILE": str(ready),
        "IMPORTER_DONE_FILE": str(tmp_path / "shared" / "done"),
    }
    paths = Paths(data_dir=tmp_path / "data", termination_log=tmp_path / "termination-log")
    assert run(env, paths, serve_metrics=False, sleep=slept.append) == 1
    assert len(slept) == READY_FILE_TIMEOUT_SECONDS
    assert paths.termination_log.read_text() == f"Timeout waiting for file {ready}"
    assert not (tmp_path / "shared" / "done").exists()
