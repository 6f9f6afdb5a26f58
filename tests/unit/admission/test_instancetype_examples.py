"""The instance type examples in examples/: accepted with their objects, expanded when rendered, and
refused the way KubeVirt refuses its own versions of them (which also set the guest memory)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubevirt.virtctl.root import root

EXAMPLES = Path(__file__).parents[3] / "examples"
OBJECTS = [
    "instancetype-small.yaml",
    "instancetype-large.yaml",
    "clusterinstancetype-small.yaml",
    "preference-virtio.yaml",
    "preference-windows.yaml",
]
VMS = sorted(p.name for p in EXAMPLES.glob("vm-cirros-*.yaml"))


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(root, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def objects_args() -> list[str]:
    return [arg for name in OBJECTS for arg in ("--objects", str(EXAMPLES / name))]


def test_every_instancetype_example_is_covered() -> None:
    assert len(VMS) == 5


@pytest.mark.parametrize("name", VMS)
def test_example_vms_are_accepted_and_render(name: str) -> None:
    code, out, _ = run("validate", "-f", str(EXAMPLES / name), *objects_args())
    assert (code, json.loads(out)) == (0, [])
    code, out, _ = run("render", "-f", str(EXAMPLES / name), *objects_args())
    assert code == 0
    assert "<domain" in out


def test_render_gets_size_and_shape_from_the_instancetype_and_preference() -> None:
    code, out, _ = run("render", "-f", str(EXAMPLES / "vm-cirros-large-windows.yaml"), *objects_args())
    assert code == 0
    assert '<memory unit="b">2147483648</memory>' in out  # 2Gi from "large"
    assert '<target bus="sata" dev="sda">' in out  # the preference's disk bus
    assert '<model type="e1000">' in out  # also on the pod interface the controller adds
    assert "<hyperv>" in out
    code, out, _ = run("render", "-f", str(EXAMPLES / "vm-cirros-large-virtio.yaml"), *objects_args())
    assert '<target bus="virtio" dev="vda">' in out


def test_without_the_objects_the_vm_passes_but_its_vmi_has_no_memory() -> None:
    example = str(EXAMPLES / "vm-cirros-small.yaml")
    code, out, _ = run("validate", "-f", example)
    assert (code, json.loads(out)) == (0, [])
    code, _, err = run("render", "-f", example)
    assert code == 1
    assert "no memory requested" in err


@pytest.mark.parametrize("name", VMS)
def test_kubevirts_own_examples_with_guest_memory_conflict_with_their_instancetype(name: str) -> None:
    # KubeVirt's vm-cirros-* and vm-windows-* examples also set the template's guest memory and
    # "resources: {}"; KubeVirt refuses them for the memory alone.
    vm = yaml.safe_load((EXAMPLES / name).read_text())
    domain = vm["spec"]["template"]["spec"]["domain"]
    domain["memory"] = {"guest": "128Mi"}
    domain["resources"] = {}
    code, out, _ = run("validate", "-f", "-", *objects_args(), stdin=json.dumps(vm))
    assert code == 1
    assert json.loads(out) == [
        {
            "type": "FieldValueInvalid",
            "message": "VM field(s) spec.template.spec.domain.memory conflicts with selected instance type",
            "field": "spec.template.spec.domain.memory",
        }
    ]


def test_objects_may_come_as_a_list_in_one_file(tmp_path: Path) -> None:
    items = [yaml.safe_load((EXAMPLES / name).read_text()) for name in OBJECTS]
    bundle = tmp_path / "bundle.yaml"
    bundle.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    code, out, _ = run("render", "-f", str(EXAMPLES / "vm-cirros-large.yaml"), "--objects", str(bundle))
    assert code == 0
    assert '<memory unit="b">2147483648</memory>' in out


def test_an_objects_file_that_is_not_objects_exits_two(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- 1\n- 2\n")
    code, _, err = run("validate", "-f", str(EXAMPLES / "vm-cirros-small.yaml"), "--objects", str(bad))
    assert code == 2
    assert "holds something other than Kubernetes objects" in err
