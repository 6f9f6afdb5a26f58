"""KubeVirt v1.6's own admission answers for the conformance cases, reproduced exactly.

VMI cases: schema check, mutating webhook, schema check, create admitter (full cause list), under both
rollout strategies and each case's flags. VM cases: VM mutating + validating webhooks (the first failing
group, at most 10 causes), no feature gates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubevirt.admission import defaulting, pipeline
from kubevirt.admission.response import MAX_CAUSES
from kubevirt.admission.schema import schema_check
from kubevirt.virt_config import ROLLOUT_LIVE_UPDATE, ROLLOUT_STAGE, ClusterConfig

CONFORMANCE = Path(__file__).parents[2] / "testdata" / "conformance"


def _flags(case: Path) -> tuple[list[str], bool]:
    flags = case.with_suffix(".flags")
    gates: list[str] = []
    stage = False
    if flags.exists():
        for token in flags.read_text().split():
            if token.startswith("--feature-gates="):
                gates = token.split("=", 1)[1].split(",")
            if token == "--rollout=Stage":
                stage = True
    return gates, stage


def _inputs(folder: Path) -> list[Path]:
    return [case for case in sorted(folder.glob("*.json")) if case.name.count(".") == 1]


def _cases(folder: Path) -> list[tuple[Path, Path]]:
    """Every case with both expected answers; a missing answer file fails its test, never skips it."""
    return [
        (case, expected)
        for case in _inputs(folder)
        for expected in (case.with_suffix(".validate.json"), case.with_suffix(".validate.nohotplug.json"))
    ]


VMI_CASES = _cases(CONFORMANCE / "vmi" / "valid") + _cases(CONFORMANCE / "vmi" / "invalid")
VM_CASES = _cases(CONFORMANCE / "vm")


def _config(case: Path, expected: Path) -> ClusterConfig:
    gates, stage = _flags(case)
    stage = stage or expected.name.endswith(".nohotplug.json")
    return ClusterConfig.build(
        feature_gates=gates, rollout_strategy=ROLLOUT_STAGE if stage else ROLLOUT_LIVE_UPDATE
    )


def _load(path: Path) -> Any:
    return json.loads(path.read_text())


def test_every_case_is_found() -> None:
    assert len(_inputs(CONFORMANCE / "vmi" / "valid")) == 54
    assert len(_inputs(CONFORMANCE / "vmi" / "invalid")) == 42
    assert len(_inputs(CONFORMANCE / "vm")) == 110
    assert len(VMI_CASES) == 2 * (54 + 42)
    assert len(VM_CASES) == 2 * 110
    assert all(expected.exists() for _, expected in VMI_CASES + VM_CASES)


@pytest.mark.parametrize(("case", "expected"), VMI_CASES, ids=lambda p: p.name)
def test_vmi_create_causes_match_kubevirt(case: Path, expected: Path) -> None:
    outcome = pipeline.validate_vmi_create(
        _load(case), _config(case, expected), defaulter=defaulting.vmi_defaults, schema=schema_check
    )
    assert [cause.to_dict() for cause in outcome.causes] == _load(expected)
    # Every invalid case is refused and every valid one accepted.
    assert outcome.accepted == (case.parent.name == "valid" and _load(expected) == [])


@pytest.mark.parametrize(("case", "expected"), VM_CASES, ids=lambda p: p.name)
def test_vm_create_causes_match_kubevirt(case: Path, expected: Path) -> None:
    outcome = pipeline.validate_vm(
        _load(case), _config(case, expected), defaulter=defaulting.vm_defaults, schema=schema_check
    )
    assert [cause.to_dict() for cause in outcome.causes][:MAX_CAUSES] == _load(expected)
