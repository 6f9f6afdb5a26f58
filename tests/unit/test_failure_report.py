"""The cluster report attached to a failed functional test names the logs that explain it."""

from __future__ import annotations

import json
from typing import Any

from kubevirt_testing import failure_report


def _pod(namespace: str, name: str, phase: str = "Running", restarts: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "name": name},
        "status": {"phase": phase, "containerStatuses": [{"name": "main", "restartCount": restarts}]},
    }


def test_the_tests_running_servers_are_logged_after_what_ended_and_the_install_namespace_is_not() -> None:
    pods = [
        _pod("ft-export", "virt-export-root"),
        _pod("ft-export", "importer", phase="Succeeded"),
        _pod("kubevirt", "virt-api-1"),
        _pod("kubevirt", "virt-handler-1", restarts=1),
        _pod("elsewhere", "unrelated"),
    ]
    asked: list[tuple[str, ...]] = []

    def kubectl(*args: str) -> tuple[int, str]:
        asked.append(args)
        if args[:2] == ("get", "pods"):
            return 0, json.dumps({"items": pods})
        if args[0] == "logs":
            return 0, f"log of {args[3]}"
        return 0, ""

    text = failure_report.report(kubectl, ["ft-export", "kubevirt"])
    logged = [args[3] for args in asked if args[0] == "logs"]
    assert logged == ["importer", "virt-handler-1", "virt-export-root"]
    assert "log of virt-export-root" in text
    assert "kubevirt/virt-handler-1 Running restarts=1" in text
