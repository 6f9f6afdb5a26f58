"""hack/up's closing lines: the virtctl it prints runs as printed, from a fresh shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import up  # noqa: E402


def test_the_printed_virtctl_is_an_absolute_path_that_runs_without_the_virtualenv_on_path() -> None:
    path = up.virtctl_path()
    assert path.is_absolute()
    bare = {key: value for key, value in os.environ.items() if key not in ("PATH", "VIRTUAL_ENV")}
    result = subprocess.run(
        [str(path), "version", "--client"],
        env={**bare, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "Client Version" in result.stdout
