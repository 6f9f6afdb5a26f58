"""Defaulting a VMI gives exactly what KubeVirt's mutating webhook returned for it (`.defaults*.json`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubevirt.virtctl.offline_vmi import default_vmi
from kubevirt.virtctl.render import options_from_flags

VALID = Path(__file__).resolve().parents[2] / "testdata" / "conformance" / "vmi" / "valid"
CASES = sorted(case for case in VALID.glob("*.json") if case.name.count(".") == 1)
# Both defaulted forms of every valid case; a missing one fails its test.
DEFAULTED = [
    case.with_suffix(suffix) for case in CASES for suffix in (".defaults.json", ".defaults.nohotplug.json")
]


def _normalise(obj: dict[str, Any]) -> dict[str, Any]:
    # The transition time is when the file was made. The other two are Go marshalling of zero values
    # (a nil metav1.Time as null, a zero Quantity value as "0"), which the API types leave out.
    for stamp in obj.get("status", {}).get("phaseTransitionTimestamps", []):
        stamp.pop("phaseTransitionTimestamp", None)
    obj.get("metadata", {}).pop("creationTimestamp", None)
    for volume in obj["spec"].get("volumes", []):
        if volume.get("hostDisk", {}).get("capacity") == "0":
            del volume["hostDisk"]["capacity"]
    return obj


def test_cases_are_present() -> None:
    assert len(CASES) == 54
    assert sorted(VALID.glob("*.defaults*.json")) == sorted(DEFAULTED)


@pytest.mark.parametrize("path", DEFAULTED, ids=lambda p: p.name)
def test_defaults_match_kubevirt(path: Path) -> None:
    case = path.name.split(".")[0]
    flags = VALID / f"{case}.flags"
    strategy = "Stage" if ".nohotplug." in path.name else "LiveUpdate"
    options = options_from_flags(
        flags.read_text().split() if flags.exists() else [], rollout_strategy=strategy
    )
    raw = json.loads((VALID / f"{case}.json").read_text())
    defaulted = default_vmi(raw, options).to_dict()
    assert _normalise(defaulted) == _normalise(json.loads(path.read_text()))


def test_defaulting_adds_a_fresh_pending_transition() -> None:
    raw = json.loads((VALID / "001-minimal-containerdisk.json").read_text())
    vmi = default_vmi(raw, options_from_flags([]))
    assert vmi.status is not None
    assert vmi.status.phase == "Pending"
    stamps = vmi.status.phase_transition_timestamps or []
    assert [s.phase for s in stamps] == ["Pending"]
    assert stamps[0].phase_transition_timestamp
    assert stamps[0].phase_transition_timestamp.endswith("Z")
