"""``virtctl create clone``: the VirtualMachineClone manifests and errors of KubeVirt v1.6's virtctl."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubevirt.virtctl.root import root

VM = {"apiGroup": "kubevirt.io", "kind": "VirtualMachine"}
SNAPSHOT = {"apiGroup": "snapshot.kubevirt.io", "kind": "VirtualMachineSnapshot"}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(root, ["create", "clone", *args])
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        result.exception
    )
    return result.exit_code, result.stdout, result.stderr


def clone(*args: str) -> dict[str, Any]:
    code, out, err = run(*args)
    assert code == 0, err
    loaded: dict[str, Any] = yaml.safe_load(out)
    return loaded


def refused(*args: str) -> str:
    code, out, err = run(*args)
    assert code == 1
    assert out == ""
    return err


def test_named_clone_prints_kubevirts_yaml() -> None:
    code, out, _ = run("--name", "my-clone", "--source-name", "sourceVM", "--target-name", "targetVM")
    assert code == 0
    assert out == (
        "apiVersion: clone.kubevirt.io/v1beta1\n"
        "kind: VirtualMachineClone\n"
        "metadata:\n"
        "  creationTimestamp: null\n"
        "  name: my-clone\n"
        "spec:\n"
        "  source:\n"
        "    apiGroup: kubevirt.io\n"
        "    kind: VirtualMachine\n"
        "    name: sourceVM\n"
        "  target:\n"
        "    apiGroup: kubevirt.io\n"
        "    kind: VirtualMachine\n"
        "    name: targetVM\n"
        "  template: {}\n"
        "status: {}\n"
    )


def test_without_names_the_clone_is_randomized_and_the_target_name_left_empty() -> None:
    code, out, _ = run("--source-name", "sourceVM")
    assert code == 0
    match = re.search(r"^  name: (clone-[bcdfghjklmnpqrstvwxz2456789]{5})$", out, re.MULTILINE)
    assert match is not None
    assert out == (
        "apiVersion: clone.kubevirt.io/v1beta1\n"
        "kind: VirtualMachineClone\n"
        "metadata:\n"
        "  creationTimestamp: null\n"
        f"  name: {match.group(1)}\n"
        "spec:\n"
        "  source:\n"
        "    apiGroup: kubevirt.io\n"
        "    kind: VirtualMachine\n"
        "    name: sourceVM\n"
        "  target:\n"
        "    apiGroup: kubevirt.io\n"
        "    kind: VirtualMachine\n"
        '    name: ""\n'
        "  template: {}\n"
        "status: {}\n"
    )


def test_every_flag_lands_in_the_spec_in_kubevirts_order() -> None:
    code, out, _ = run(
        *("--name", "c", "--source-name", "snap", "--source-type", "snapshot", "--target-name", "t"),
        *("--label-filter", "*", "--label-filter", "!some/key", "--annotation-filter", '"!some/key"'),
        *("--template-label-filter", "true", "--template-annotation-filter", "a/*"),
        *("--new-mac-address", "interface1:00-11-33", "--new-mac-address", "interface0:00-11-22"),
        *("--new-smbios-serial", "new-serial"),
    )
    assert code == 0
    assert out == (
        "apiVersion: clone.kubevirt.io/v1beta1\n"
        "kind: VirtualMachineClone\n"
        "metadata:\n"
        "  creationTimestamp: null\n"
        "  name: c\n"
        "spec:\n"
        "  annotationFilters:\n"
        "  - '\"!some/key\"'\n"
        "  labelFilters:\n"
        "  - '*'\n"
        "  - '!some/key'\n"
        "  newMacAddresses:\n"
        "    interface0: 00-11-22\n"
        "    interface1: 00-11-33\n"
        "  newSMBiosSerial: new-serial\n"
        "  source:\n"
        "    apiGroup: snapshot.kubevirt.io\n"
        "    kind: VirtualMachineSnapshot\n"
        "    name: snap\n"
        "  target:\n"
        "    apiGroup: kubevirt.io\n"
        "    kind: VirtualMachine\n"
        "    name: t\n"
        "  template:\n"
        "    annotationFilters:\n"
        "    - a/*\n"
        "    labelFilters:\n"
        '    - "true"\n'
        "status: {}\n"
    )


@pytest.mark.parametrize(
    ("source_type", "source", "target_type"),
    [
        ("vm", VM, "vm"),
        ("VM", VM, "vm"),
        ("VirtualMachine", VM, "vm"),
        ("virtualmachine", VM, "vm"),
        ("vm", VM, "VirtualMachine"),
        ("", VM, ""),
        ("snapshot", SNAPSHOT, "vm"),
        ("VirtualMachineSnapshot", SNAPSHOT, "vm"),
        ("vmsnapshot", SNAPSHOT, "vm"),
        ("VMSnapshot", SNAPSHOT, "vm"),
    ],
)
def test_supported_source_and_target_types(
    source_type: str, source: dict[str, str], target_type: str
) -> None:
    spec = clone(
        *("--source-name", "source-name", "--target-name", "target-name"),
        *("--source-type", source_type, "--target-type", target_type),
    )["spec"]
    assert spec["source"] == {**source, "name": "source-name"}
    assert spec["target"] == {**VM, "name": "target-name"}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ((), 'required flag(s) "source-name" not set'),
        (("--source-name", ""), "source name must not be empty"),
        (
            ("--source-name", "s", "--target-type", "snapshot"),
            "target type snapshot is not supported. Supported types: vm",
        ),
        (
            ("--source-name", "s", "--source-type", "unknown type", "--target-type", "unknown"),
            "source type unknown type is not supported. Supported types: vm, vmsnapshot",
        ),
        (
            ("--source-name", "s", "--target-type", "unknown type"),
            "target type unknown type is not supported. Supported types: vm",
        ),
        (
            ("--source-name", "s", "--new-mac-address", ":custom-mac-address"),
            "newMacAddress parameter :custom-mac-address has empty interface name",
        ),
        (
            ("--source-name", "s", "--new-mac-address", "interface:"),
            "newMacAddress parameter interface: has empty address name",
        ),
        (
            ("--source-name", "s", "--new-mac-address", "interf:ace:custom-mac-address"),
            "newMacAddress parameter interf:ace:custom-mac-address is invalid: exactly one ':' is expected."
            " For example: 'interface0:address0'",
        ),
    ],
)
def test_bad_input_is_refused_with_kubevirts_message(flags: tuple[str, ...], message: str) -> None:
    assert refused(*flags) == f"Error: {message}\n"


@pytest.mark.parametrize(
    ("flag", "path"),
    [
        ("--label-filter", ("labelFilters",)),
        ("--annotation-filter", ("annotationFilters",)),
        ("--template-label-filter", ("template", "labelFilters")),
        ("--template-annotation-filter", ("template", "annotationFilters")),
    ],
)
def test_filters_are_repeatable_and_kept_in_order(flag: str, path: tuple[str, ...]) -> None:
    spec = clone("--source-name", "s", flag, "*", flag, '"!some/key"')["spec"]
    for key in path:
        spec = spec[key]
    assert spec == ["*", '"!some/key"']


def test_the_last_address_given_for_an_interface_wins() -> None:
    spec = clone(
        *("--source-name", "s", "--new-mac-address", "interface0:custom-mac-address0"),
        *("--new-mac-address", "interface1:custom-mac-address1", "--new-mac-address", "interface0:other"),
    )["spec"]
    assert spec["newMacAddresses"] == {"interface0": "other", "interface1": "custom-mac-address1"}


def test_unset_optional_fields_are_left_out() -> None:
    spec = clone("--source-name", "s", "--new-smbios-serial", "")["spec"]
    assert set(spec) == {"source", "target", "template"}
    assert spec["template"] == {}


@pytest.mark.parametrize(
    "args",
    [
        ("create", "clone", "--source-name", "s", "-n", "my-namespace"),
        ("create", "clone", "--source-name", "s", "--namespace", "my-namespace"),
        ("-n", "my-namespace", "create", "clone", "--source-name", "s"),
    ],
)
def test_the_given_namespace_is_set(args: tuple[str, ...]) -> None:
    result = CliRunner().invoke(root, list(args))
    assert result.exit_code == 0
    assert yaml.safe_load(result.stdout)["metadata"]["namespace"] == "my-namespace"


def test_without_a_namespace_flag_none_is_written() -> None:
    assert "namespace" not in clone("--source-name", "s")["metadata"]


def test_help_lists_the_flags_and_examples() -> None:
    result = CliRunner().invoke(root, ["create", "clone", "--help"])
    assert result.exit_code == 0
    for flag in ("--source-name", "--target-type", "--template-annotation-filter", "--new-smbios-serial"):
        assert flag in result.stdout
    assert "virtctl create clone --source-name sourceVM | kubectl create -f -" in result.stdout


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("y", '"y"'),
        ("1", '"1"'),
        ("1e3", '"1e3"'),
        ("null", '"null"'),
        ("2001-12-14", '"2001-12-14"'),
        ("abc", "abc"),
        ("00-11", "00-11"),
        ("!x", "'!x'"),
    ],
)
def test_strings_go_yaml_would_misread_are_double_quoted(value: str, written: str) -> None:
    code, out, _ = run("--source-name", "s", "--label-filter", value)
    assert code == 0
    assert f"  labelFilters:\n  - {written}\n" in out
    assert yaml.safe_load(out)["spec"]["labelFilters"] == [value]
