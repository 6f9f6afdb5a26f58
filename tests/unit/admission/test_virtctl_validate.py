"""``virtctl validate`` and ``virtctl render`` refusing what KubeVirt's webhooks refuse."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubevirt.virtctl.root import root

CONFORMANCE = Path(__file__).parents[2] / "testdata" / "conformance"
VALID = CONFORMANCE / "vmi" / "valid"
INVALID = CONFORMANCE / "vmi" / "invalid"


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(root, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_valid_vmi_prints_no_causes_and_exits_zero() -> None:
    code, out, _ = run("validate", "-f", str(VALID / "001-minimal-containerdisk.json"))
    assert code == 0
    assert json.loads(out) == []


def test_invalid_vmi_prints_kubevirts_causes_and_exits_one() -> None:
    case = INVALID / "001-bus-ide.json"
    code, out, _ = run("validate", "-f", str(case))
    assert code == 1
    assert json.loads(out) == json.loads(case.with_suffix(".validate.json").read_text())


def test_feature_gates_flag_changes_the_answer() -> None:
    case = INVALID / "053-hostdisk-bad-type.json"
    _, without, _ = run("validate", "-f", str(case))
    code, gated, _ = run("validate", "-f", str(case), "--feature-gates=HostDisk")
    assert code == 1
    assert json.loads(gated) == json.loads(case.with_suffix(".validate.json").read_text())
    assert "HostDisk feature gate is not enabled" in without


def test_rollout_strategy_flag_changes_the_answer() -> None:
    case = INVALID / "068-guest-above-limit-stage-rollout.json"
    assert run("validate", "-f", str(case))[0] == 0
    code, out, _ = run("validate", "-f", str(case), "--rollout-strategy=Stage")
    assert code == 1
    # The conformance cases' .flags files spell it --rollout.
    assert run("validate", "-f", str(case), "--rollout=Stage")[1] == out
    assert json.loads(out)[0]["field"] == "spec.domain.memory.guest"


def test_a_vm_is_validated_with_its_template() -> None:
    case = CONFORMANCE / "vm" / "vm008-both.json"
    code, out, _ = run("validate", "-f", str(case))
    assert code == 1
    assert json.loads(out) == json.loads(case.with_suffix(".validate.json").read_text())


def test_yaml_on_stdin() -> None:
    manifest = "kind: VirtualMachineInstance\nmetadata: {name: x}\nspec:\n  domain:\n    devices: {}\n"
    code, out, _ = run("validate", "-f", "-", stdin=manifest)
    assert code == 1
    assert json.loads(out)[0]["message"].startswith("no memory requested")


def test_unreadable_input_exits_two() -> None:
    assert run("validate", "-f", "/nonexistent/vmi.yaml")[0] == 2
    assert run("validate", "-f", "-", stdin="{not: [valid")[0] == 2
    assert run("validate", "-f", "-", stdin="- a list\n")[0] == 2
    assert run("validate", "-f", "-", stdin='{"kind": ' + "9" * 5000 + "}")[0] == 2
    assert run("render", "-f", "-", stdin='{"kind": ' + "9" * 5000 + "}")[0] == 2
    code, _, err = run("validate", "-f", "-", stdin='{"kind": "Pod"}')
    assert code == 2
    assert "not supported" in err


def test_render_refuses_an_invalid_vmi_with_the_causes_on_stderr() -> None:
    case = INVALID / "001-bus-ide.json"
    code, out, err = run("render", "-f", str(case))
    assert code == 1
    assert out == ""
    assert json.loads(err) == json.loads(case.with_suffix(".validate.json").read_text())


def test_render_of_a_vm_renders_its_template_and_refuses_a_vmi_kubevirt_would_refuse() -> None:
    code, out, _ = run("render", "-f", str(CONFORMANCE / "vm" / "vm003-ok.json"))
    assert code == 1  # the VM is accepted, but its VMI has no memory
    assert out == ""
    vm = {
        "kind": "VirtualMachine",
        "metadata": {"name": "fromvm"},
        "spec": {
            "runStrategy": "Always",
            "template": {"spec": json.loads((VALID / "001-minimal-containerdisk.json").read_text())["spec"]},
        },
    }
    code, out, _ = run("render", "-f", "-", stdin=json.dumps(vm))
    assert code == 0
    assert "<name>default_fromvm</name>" in out


def test_a_vm_gets_at_most_ten_causes_like_kubevirts_vm_webhook() -> None:
    vm = json.loads((CONFORMANCE / "vm" / "vm001-ok.json").read_text())
    template = vm["spec"]["template"]["spec"]
    template["domain"]["devices"]["disks"] = [{"name": f"d{i}", "disk": {"bus": "ide"}} for i in range(12)]
    template["volumes"] = [{"name": f"d{i}", "containerDisk": {"image": "example/disk"}} for i in range(12)]
    code, out, _ = run("validate", "-f", "-", stdin=json.dumps(vm))
    assert code == 1
    causes = json.loads(out)
    assert [cause["field"] for cause in causes] == [
        f"spec.template.spec.domain.devices.disks[{i}].disk.bus" for i in range(10)
    ]
