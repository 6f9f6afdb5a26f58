"""Integers outside their Go type's range are refused by ``validate`` and ``render``, naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubevirt.virtctl.root import root

VALID = Path(__file__).parents[2] / "testdata" / "conformance" / "vmi" / "valid"
MINIMAL = VALID / "001-minimal-containerdisk.json"


def manifest_with(path: tuple[str, ...], literal: str) -> str:
    """The minimal VMI with the JSON number ``literal`` (written as given, e.g. ``1e30``) at ``path``."""
    manifest = json.loads(MINIMAL.read_text())
    node = manifest
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = "@NUMBER@"
    return json.dumps(manifest).replace('"@NUMBER@"', literal)


INT64_MAX = 2**63 - 1
CASES = [
    (("spec", "domain", "cpu", "cores"), "-1", "greater than or equal to 0"),
    (("spec", "domain", "cpu", "sockets"), "4294967297", "less than or equal to 4294967295"),
    (("spec", "domain", "cpu", "threads"), "1e30", "less than or equal to 4294967295"),
    (("spec", "terminationGracePeriodSeconds"), str(INT64_MAX + 1), f"less than or equal to {INT64_MAX}"),
    (("spec", "domain", "clock", "utc", "offsetSeconds"), str(-INT64_MAX - 2), "greater than or equal to"),
]


@pytest.mark.parametrize("command", ["validate", "render"])
@pytest.mark.parametrize(("path", "literal", "reason"), CASES)
def test_out_of_range_integers_are_refused_with_the_field(
    command: str, path: tuple[str, ...], literal: str, reason: str
) -> None:
    result = CliRunner().invoke(root, [command, "-f", "-"], input=manifest_with(path, literal))
    assert result.exit_code == 1
    causes = json.loads(result.stdout if command == "validate" else result.stderr)
    messages = [cause["message"] for cause in causes]
    assert len(messages) == 1
    assert messages[0].startswith(f"{'.'.join(path)} in body should be {reason}")


def test_the_edges_of_the_range_are_accepted() -> None:
    for literal in ("0", "4294967295"):
        manifest = manifest_with(("spec", "domain", "cpu", "maxSockets"), literal)
        result = CliRunner().invoke(root, ["validate", "-f", "-"], input=manifest)
        assert "maxSockets in body" not in result.stdout
