"""``virtctl create vm|instancetype|preference``: the manifests KubeVirt's virtctl prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubevirt.virtctl.root import root

EXAMPLES = Path(__file__).parents[3] / "examples"


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(root, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_vm_with_instancetype_and_preference_prints_kubevirts_yaml() -> None:
    code, out, _ = run("create", "vm", "--name", "n", "--instancetype", "u1.small", "--preference", "fedora")
    assert code == 0
    assert out == (
        "apiVersion: kubevirt.io/v1\n"
        "kind: VirtualMachine\n"
        "metadata:\n"
        "  creationTimestamp: null\n"
        '  name: "n"\n'  # go-yaml v2 reads a plain n as a bool, so KubeVirt quotes it
        "spec:\n"
        "  instancetype:\n"
        "    name: u1.small\n"
        "  preference:\n"
        "    name: fedora\n"
        "  runStrategy: Always\n"
        "  template:\n"
        "    metadata:\n"
        "      creationTimestamp: null\n"
        "    spec:\n"
        "      domain:\n"
        "        devices: {}\n"
        "        resources: {}\n"
        "      terminationGracePeriodSeconds: 180\n"
        "status: {}\n"
    )


def test_vm_without_instancetype_gets_the_memory_flag_in_canonical_form() -> None:
    code, out, _ = run("create", "vm", "--name", "n", "--memory", "1024Mi", "--run-strategy", "halted")
    vm = yaml.safe_load(out)
    assert code == 0
    assert vm["spec"]["template"]["spec"]["domain"]["memory"] == {"guest": "1Gi"}
    assert vm["spec"]["runStrategy"] == "Halted"
    assert "instancetype" not in vm["spec"]


def test_namespaced_kinds_are_lowercased_and_unknown_ones_refused() -> None:
    code, out, _ = run(
        "create",
        "vm",
        "--name",
        "n",
        "--instancetype",
        "VirtualMachineInstancetype/small",
        "--preference",
        "p",
    )
    assert yaml.safe_load(out)["spec"]["instancetype"] == {
        "name": "small",
        "kind": "virtualmachineinstancetype",
    }
    code, _, err = run("create", "vm", "--instancetype", "pod/x")
    assert code == 1
    assert err == (
        'Error: failed to parse "--instancetype" flag: invalid instancetype kind "pod", '
        "supported values are: virtualmachineinstancetype, virtualmachineclusterinstancetype\n"
    )


def test_a_pvc_volume_is_used_to_infer_both_unless_asked_otherwise() -> None:
    code, out, _ = run("create", "vm", "--name", "n", "--volume-pvc", "src:root-disk,bootorder:1")
    spec = yaml.safe_load(out)["spec"]
    assert code == 0
    ignore = {"inferFromVolume": "root-disk", "inferFromVolumeFailurePolicy": "Ignore"}
    assert (spec["instancetype"], spec["preference"]) == (ignore, ignore)
    assert spec["template"]["spec"]["domain"]["devices"] == {"disks": [{"name": "root-disk", "bootOrder": 1}]}
    assert spec["template"]["spec"]["domain"]["memory"] == {"guest": "512Mi"}
    # Explicit inference drops the memory and the failure policy.
    code, out, _ = run("create", "vm", "--name", "n", "--volume-pvc", "src:root-disk", "--infer-instancetype")
    spec = yaml.safe_load(out)["spec"]
    assert spec["instancetype"] == {"inferFromVolume": "root-disk"}
    assert "memory" not in spec["template"]["spec"]["domain"]


def test_explicit_inference_from_a_container_disk_fails() -> None:
    code, _, err = run("create", "vm", "--volume-containerdisk", "src:quay.io/img", "--infer-preference")
    assert code == 1
    assert "inference of instancetype or preference works only with datasources, datavolumes or pvcs" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--volume-pvc", "src:ns/disk"], 'not allowed to specify namespace of pvc "disk"'),
        (["--volume-pvc", "name:x"], "src must be specified"),
        (["--volume-pvc", "src:a,size:1Gi"], "unknown param(s): size:1Gi"),
        (
            ["--volume-pvc", "src:a,bootorder:1", "--volume-pvc", "src:b,bootorder:1"],
            "bootorder 1 was specified",
        ),
        (["--run-strategy", "Sometimes"], 'invalid run strategy "Sometimes"'),
    ],
)
def test_bad_flag_values_are_refused_with_the_flag_named(args: list[str], message: str) -> None:
    code, _, err = run("create", "vm", "--name", "n", *args)
    assert code == 1
    assert err.startswith('Error: failed to parse "--')
    assert message in err


def test_instancetype_and_preference_manifests() -> None:
    code, out, _ = run(
        "create",
        "instancetype",
        "--name",
        "big",
        "--cpu",
        "8",
        "--memory",
        "16Gi",
        "--gpu",
        "name:g,devicename:d",
    )
    assert code == 0
    assert yaml.safe_load(out) == {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"creationTimestamp": None, "name": "big"},
        "spec": {
            "cpu": {"guest": 8},
            "memory": {"guest": "16Gi"},
            "gpus": [{"name": "g", "deviceName": "d"}],
        },
    }
    code, out, _ = run("create", "preference", "-n", "team", "--cpu-topology", "spread")
    preference = yaml.safe_load(out)
    assert preference["kind"] == "VirtualMachinePreference"
    assert preference["metadata"]["namespace"] == "team"
    assert preference["metadata"]["name"].startswith("preference-")
    code, _, err = run("create", "preference", "--cpu-topology", "diagonal")
    assert code == 1
    assert "CPU topology must have a value of sockets, cores, threads or spread" in err
    code, _, err = run("create", "instancetype", "--cpu", "0", "--memory", "1Gi")
    assert (code, err) == (1, "Error: cpu value must be greater than zero\n")


def test_created_manifests_validate_together(tmp_path: Path) -> None:
    _, instancetype, _ = run("create", "instancetype", "--name", "small", "--cpu", "1", "--memory", "256Mi")
    _, preference, _ = run("create", "preference", "--name", "cores", "--cpu-topology", "cores")
    objects = tmp_path / "objects.yaml"
    objects.write_text(instancetype + "---\n" + preference)
    _, vm, _ = run(
        "create", "vm", "--name", "n", "--instancetype", "small", "--preference", "cores",
        "--volume-containerdisk", "src:quay.io/containerdisks/fedora:40",
    )  # fmt: skip
    code, out, _ = run("validate", "-f", "-", "--objects", str(objects), stdin=vm)
    assert (code, json.loads(out)) == (0, [])
    code, out, _ = run("render", "-f", "-", "--objects", str(objects), stdin=vm)
    assert code == 0
    assert '<memory unit="b">268435456</memory>' in out
