"""The export server under test, serving real files from the test's temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt_testing.export_server import Exporter, exporter_running


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[Exporter]:
    with exporter_running(tmp_path) as serving:
        yield serving
