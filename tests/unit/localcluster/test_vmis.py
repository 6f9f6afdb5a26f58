"""The shared VMI helpers of scripts and functional tests: waiting for a phase (Failed ends the wait, a
replaced VMI can be told apart) and the dry-run VMI that virt-api's webhook must refuse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import vmis  # noqa: E402

JSON = dict[str, Any]


class FakeCluster:
    """Answers ``find("vmi", ...)`` from a script of VMIs (the last one repeats) and records kubectl."""

    def __init__(self, *answers: JSON | None, refusal: str = "") -> None:
        self.answers = list(answers)
        self.refusal = refusal
        self.kubectl_calls: list[tuple[tuple[str, ...], str | None]] = []

    def find(self, kind: str, name: str, namespace: str | None = None) -> JSON | None:
        assert (kind, name, namespace) == ("vmi", "guest", "ns")
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        self.kubectl_calls.append((args, stdin))
        return subprocess.CompletedProcess(list(args), 1 if self.refusal else 0, "", self.refusal)


def _vmi(phase: str | None, uid: str = "uid-1") -> JSON:
    return {"metadata": {"uid": uid}, "status": {"phase": phase} if phase else {}}


def _wait(cluster: FakeCluster, *phases: str, **options: Any) -> JSON:
    return vmis.wait_vmi_phase(cluster, "guest", "ns", *phases, interval=0.001, **options)  # type: ignore[arg-type]


def test_waits_through_the_phases_to_running_and_tells_each_once() -> None:
    said: list[str] = []
    cluster = FakeCluster(None, _vmi(None), _vmi("Scheduling"), _vmi("Scheduling"), _vmi("Running"))
    found = _wait(cluster, timeout=5, progress=said.append)
    assert vmis.vmi_phase(found) == "Running"
    assert [line.split("] ")[1] for line in said] == [
        "VMI guest: -",
        "VMI guest: Scheduling",
        "VMI guest: Running",
    ]


def test_any_of_several_phases_ends_the_wait() -> None:
    assert vmis.vmi_phase(
        _wait(FakeCluster(_vmi("Pending"), _vmi("Scheduled")), "Scheduled", "Running", timeout=5)
    ) == ("Scheduled")


def test_failed_ends_the_wait_at_once_with_the_status_unless_awaited() -> None:
    with pytest.raises(
        AssertionError, match=r"VMI ns/guest Failed while waiting for Running: \{\"phase\": \"Failed\"\}"
    ):
        _wait(FakeCluster(_vmi("Scheduled"), _vmi("Failed")), timeout=60)
    assert (
        vmis.vmi_phase(_wait(FakeCluster(_vmi("Running"), _vmi("Failed")), "Failed", timeout=5)) == "Failed"
    )


def test_the_old_vmi_does_not_count_when_waiting_for_its_replacement() -> None:
    cluster = FakeCluster(_vmi("Running", "old"), _vmi("Failed", "old"), None, _vmi("Running", "new"))
    assert _wait(cluster, timeout=5, other_than_uid="old")["metadata"]["uid"] == "new"


def test_a_vmi_never_running_fails_after_the_timeout_naming_its_phase() -> None:
    with pytest.raises(AssertionError, match=r"VMI ns/guest not Running within 0 s \(phase Scheduling\)"):
        _wait(FakeCluster(_vmi("Scheduling")), timeout=0.05)


def test_the_invalid_vmi_is_a_server_dry_run_of_a_disk_without_volume() -> None:
    cluster = FakeCluster(None, refusal=f"admission webhook denied the request: {vmis.INVALID_VMI_CAUSE}")
    assert vmis.INVALID_VMI_CAUSE in vmis.invalid_vmi_refusal(cluster, "ns")  # type: ignore[arg-type]
    [(args, stdin)] = cluster.kubectl_calls
    assert "--dry-run=server" in args
    vmi = json.loads(stdin or "")
    assert vmi["metadata"]["namespace"] == "ns"
    assert vmi["spec"]["domain"]["devices"]["disks"][0]["name"] == "rootdisk"
    assert "volumes" not in vmi["spec"]
    assert vmis.invalid_vmi_refusal(FakeCluster(None), "ns") == ""  # type: ignore[arg-type]
