"""``virtctl render`` and ``validate`` against hostile manifests: one-line errors and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubevirt.input_limits import MAX_NESTING_DEPTH, MAX_OBJECT_BYTES
from kubevirt.virtctl.manifests import EXIT_UNREADABLE, parse_manifest
from kubevirt.virtctl.root import root

VALID = Path(__file__).parents[2] / "testdata" / "conformance" / "vmi" / "valid"
MINIMAL = VALID / "001-minimal-containerdisk.json"
COMMANDS = ("render", "validate")


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(root, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def minimal() -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads(MINIMAL.read_text())
    return manifest


def deep_vmi(levels: int) -> dict[str, Any]:
    manifest = minimal()
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"x": value}
    manifest["spec"]["domain"]["clock"] = {"utc": {}, "x": value}
    return manifest


def deep_vmi_yaml(levels: int) -> str:
    """The same in YAML, the deep part in flow style (the YAML dumper itself cannot nest that deep)."""
    manifest = minimal()
    manifest["spec"]["domain"]["clock"] = {"utc": {}, "x": "DEEP"}
    return yaml.safe_dump(manifest).replace("DEEP", "{x: " * levels + "{}" + "}" * levels)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("syntax", ["json", "yaml"])
def test_deep_nesting_is_a_one_line_error_with_exit_2(command: str, syntax: str) -> None:
    text = json.dumps(deep_vmi(500)) if syntax == "json" else deep_vmi_yaml(500)
    code, out, err = run(command, "-f", "-", stdin=text)
    assert code == EXIT_UNREADABLE
    assert out == ""
    assert err.count("\n") == 1
    assert f"nested deeper than {MAX_NESTING_DEPTH} levels at spec.domain.clock.x.x" in err


@pytest.mark.parametrize("command", COMMANDS)
def test_nesting_too_deep_for_the_yaml_parser_is_a_one_line_error(command: str) -> None:
    code, _, err = run(command, "-f", "-", stdin="a: " + "[" * 50_000 + "]" * 50_000)
    assert code == EXIT_UNREADABLE
    assert err.count("\n") == 1
    assert "nested" in err or "flow level" in err  # libyaml has a flow-level limit of its own


@pytest.mark.parametrize("command", COMMANDS)
def test_a_manifest_above_the_api_servers_limit_is_refused(command: str) -> None:
    manifest = minimal()
    manifest["metadata"]["annotations"] = {"big": "x" * MAX_OBJECT_BYTES}
    code, _, err = run(command, "-f", "-", stdin=json.dumps(manifest))
    assert code == EXIT_UNREADABLE
    assert f"larger than the limit of {MAX_OBJECT_BYTES} bytes" in err


@pytest.mark.parametrize("command", COMMANDS)
def test_a_nested_manifest_within_the_limit_is_answered(command: str) -> None:
    code, _, err = run(command, "-f", "-", stdin=json.dumps(deep_vmi(20)))
    assert code in (0, 1)
    assert "nested" not in err


def test_json_and_yaml_read_alike_with_timestamps_as_strings() -> None:
    manifest = minimal()
    manifest["metadata"]["creationTimestamp"] = "2024-01-02T03:04:05Z"
    from_json = parse_manifest(json.dumps(manifest).encode())
    from_yaml = parse_manifest(yaml.safe_dump(manifest).encode())
    assert from_json == from_yaml == manifest


def test_yaml_flow_style_that_is_not_json_still_reads() -> None:
    assert parse_manifest(b"{kind: VirtualMachineInstance, spec: {}}") == {
        "kind": "VirtualMachineInstance",
        "spec": {},
    }
