"""A handle on a running cluster for scripts and tests: its layout, admin kubeconfig and kubectl."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .layout import Layout, image_name


@dataclass(frozen=True)
class Cluster:
    layout: Layout

    @property
    def kubeconfig(self) -> Path:
        return self.layout.admin_kubeconfig

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*self.layout.kubectl(), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result

    def kubectl_json(self, *args: str) -> dict[str, object]:
        loaded = json.loads(self.kubectl(*args, "-o", "json").stdout)
        assert isinstance(loaded, dict)
        return loaded

    def find(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object as JSON, or None when it does not exist (or cannot be read)."""
        scope = ["-n", namespace] if namespace else []
        found = self.kubectl("get", kind, name, *scope, "-o", "json", check=False)
        loaded = json.loads(found.stdout) if found.returncode == 0 else None
        return loaded if isinstance(loaded, dict) else None

    def image(self, binary: str) -> str:
        return image_name(binary)

    def apply(self, *objects: dict[str, object]) -> None:
        self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))

    @staticmethod
    def wait_until(what: str, check: Callable[[], bool], timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {timeout:.0f} s")
            time.sleep(0.5)

    def fresh_namespace(self, name: str) -> None:
        """Creates ``name`` (deleting an older one first) and waits for its default service account."""
        self.kubectl("delete", "namespace", name, "--ignore-not-found", "--wait=true")
        self.kubectl("create", "namespace", name)
        self.wait_until(
            f"namespace {name}: default service account",
            lambda: self.kubectl("get", "sa", "default", "-n", name, check=False).returncode == 0,
        )

    @contextmanager
    def vm_namespace(self, name: str) -> Iterator[str]:
        """A fresh namespace for VMs for the length of the block. The VMs and their VMIs go first, while
        the controllers that release them still run (uninstalling KubeVirt waits for every VMI to be
        gone), then the namespace."""
        self.fresh_namespace(name)
        try:
            yield name
        finally:
            self.kubectl("delete", "vm", "--all", "-n", name, "--wait=true", "--timeout=120s", check=False)
            self.kubectl("delete", "vmi", "--all", "-n", name, "--wait=true", "--timeout=60s", check=False)
            self.kubectl("delete", "namespace", name, "--wait=false", check=False)

    def rollout(self, namespace: str, deployment: str, timeout: int = 120) -> None:
        """Waits for a Deployment to exist and be available; fails with the pods' description if it is
        not. An operator creates its Deployments some time after it is asked to, and `kubectl rollout
        status` fails at once on one that does not exist yet, so existence is waited for first."""
        deadline = time.monotonic() + timeout
        self.wait_until(
            f"deployment {namespace}/{deployment} created",
            lambda: (
                self.kubectl("get", "deployment", deployment, "-n", namespace, check=False).returncode == 0
            ),
            timeout,
        )
        remaining = max(1, int(deadline - time.monotonic()))
        result = self.kubectl(
            "rollout",
            "status",
            f"deployment/{deployment}",
            "-n",
            namespace,
            f"--timeout={remaining}s",
            check=False,
        )
        if result.returncode != 0:
            pods = self.kubectl("describe", "pods", "-n", namespace, check=False).stdout
            raise AssertionError(f"deployment {deployment} not available: {result.stderr}\n{pods[-3000:]}")
