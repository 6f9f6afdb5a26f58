"""virt-controller's worker-thread flags, named and defaulted as KubeVirt's, reach the controllers."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from kubevirt.virt_controller import app
from kubevirt.virt_controller.controllers import Threads
from kubevirt_cmd.virt_controller import main


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[app.Options]:
    seen: list[app.Options] = []

    def run(options: app.Options) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(app, "run", run)
    return seen


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_defaults_are_kubevirts(started: list[app.Options]) -> None:
    assert _invoke().exit_code == 0
    assert started[0].threads == Threads()
    assert (started[0].threads.snapshot, started[0].threads.vmi, started[0].threads.export) == (6, 10, 3)


def test_each_controllers_threads_can_be_set(started: list[app.Options]) -> None:
    flags = {
        "migration": "migration",
        "evacuation": "evacuation",
        "disruption-budget": "disruption_budget",
        "snapshot": "snapshot",
        "restore": "restore",
        "export": "export",
        "clone": "clone",
    }
    args = [f"--{flag}-controller-threads={i + 1}" for i, flag in enumerate(flags)]
    assert _invoke(*args).exit_code == 0
    threads = started[0].threads
    assert [getattr(threads, field) for field in flags.values()] == list(range(1, len(flags) + 1))


def test_zero_threads_is_a_usage_error(started: list[app.Options]) -> None:
    result = _invoke("--export-controller-threads=0")
    assert result.exit_code == 2
    assert "--export-controller-threads" in result.output
    assert started == []
