"""``render`` and ``validate`` give the same verdict on unknown fields, as the CRD schema does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubevirt.virtctl.root import root

VALID = Path(__file__).parents[2] / "testdata" / "conformance" / "vmi" / "valid"


def with_extra(*path: str) -> str:
    manifest: dict[str, Any] = json.loads((VALID / "001-minimal-containerdisk.json").read_text())
    node = manifest
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = "anything"
    return json.dumps(manifest)


def exit_codes(manifest: str) -> tuple[int, int]:
    runner = CliRunner()
    return (
        runner.invoke(root, ["render", "-f", "-"], input=manifest).exit_code,
        runner.invoke(root, ["validate", "-f", "-"], input=manifest).exit_code,
    )


def test_unknown_fields_under_clock_are_kept_by_both() -> None:
    assert exit_codes(with_extra("spec", "domain", "clock", "foo")) == (0, 0)


@pytest.mark.parametrize(
    "path", [("spec", "domain", "foo"), ("spec", "domain", "cpu", "foo"), ("spec", "foo")], ids=".".join
)
def test_unknown_fields_elsewhere_are_refused_by_both(path: tuple[str, ...]) -> None:
    assert exit_codes(with_extra(*path)) == (1, 1)
