"""A handle on a running cluster for scripts and tests: its layout, admin kubeconfig and kubectl."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .layout import Layout, image_name


@dataclass(frozen=True)
class Cluster:
    layout: Layout
    kubeconfig: Path
    kubectl_path: Path

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(self.kubectl_path), f"--kubeconfig={self.kubeconfig}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result

    def kubectl_json(self, *args: str) -> dict[str, object]:
        loaded = json.loads(self.kubectl(*args, "-o", "json").stdout)
        assert isinstance(loaded, dict)
        return loaded

    def image(self, binary: str) -> str:
        return image_name(binary)
