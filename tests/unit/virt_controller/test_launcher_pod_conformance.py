"""``virtctl render --launcher-pod`` gives, for every valid conformance case, the pod KubeVirt renders
(judged as the conformance README says: what users and the scheduler see)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubevirt.virtctl.launcher_pod import LAUNCHER_IMAGE
from kubevirt.virtctl.root import root

VALID = Path(__file__).resolve().parents[2] / "testdata" / "conformance" / "vmi" / "valid"
CASES = sorted(VALID.glob("*.pod.json"))
Compare = Callable[[Mapping[str, Any], Mapping[str, Any], str], list[str]]


def _render(case: str) -> tuple[int, str, str]:
    flags = VALID / f"{case}.flags"
    extra = flags.read_text().split() if flags.exists() else []
    args = ["render", "--launcher-pod", "-f", str(VALID / f"{case}.json"), *extra]
    result = CliRunner().invoke(root, args)
    return result.exit_code, result.stdout, result.stderr


def test_every_valid_case_has_a_pod() -> None:
    assert len(CASES) == len(list(VALID.glob("*.validate.json"))) == 54


@pytest.mark.parametrize("expected", CASES, ids=lambda path: path.name.removesuffix(".pod.json"))
def test_pod_matches_kubevirt(expected: Path, compare_pods: Compare) -> None:
    code, out, err = _render(expected.name.removesuffix(".pod.json"))
    assert code == 0, err
    assert compare_pods(json.loads(expected.read_text()), json.loads(out), LAUNCHER_IMAGE) == []


def test_comparison_notices_what_users_see(compare_pods: Compare) -> None:
    """The judge itself: a changed quantity, mount, selector or image is a difference; a rewritten
    quantity of the same value, the launcher's command or env are not."""
    expected = json.loads((VALID / "069-kitchen-sink.pod.json").read_text())
    same_value = json.loads(json.dumps(expected))
    compute = same_value["spec"]["containers"][0]
    compute["resources"]["requests"]["cpu"] = "0.2"
    compute["command"] = ["something-else"]
    compute["env"] = []
    assert compare_pods(expected, same_value, LAUNCHER_IMAGE) == []

    for change in (
        lambda pod: pod["spec"]["containers"][0]["resources"]["requests"].update(cpu="201m"),
        lambda pod: pod["spec"]["containers"][0]["volumeMounts"].pop(),
        lambda pod: pod["spec"]["nodeSelector"].update(zone="c"),
        lambda pod: pod["spec"]["containers"][1].update(image="other:1"),
        lambda pod: pod["spec"]["volumes"].pop(),
        lambda pod: pod["metadata"]["annotations"].pop("kubevirt.io/domain"),
        lambda pod: pod["spec"].update(terminationGracePeriodSeconds=61),
    ):
        changed = json.loads(json.dumps(expected))
        change(changed)
        assert compare_pods(expected, changed, LAUNCHER_IMAGE) != []
