"""``virtctl render --launcher-pod``: the pod as JSON on stdout, render's options and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubevirt.virtctl.root import root

CONFORMANCE = Path(__file__).resolve().parents[2] / "testdata" / "conformance" / "vmi"
MINIMAL = CONFORMANCE / "valid" / "001-minimal-containerdisk.json"
BLOCK = CONFORMANCE / "valid" / "029-pvc-block.json"


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(root, ["render", "--launcher-pod", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_prints_the_pod_as_json() -> None:
    code, out, _ = _run("-f", str(MINIMAL))
    assert code == 0
    pod = json.loads(out)
    assert pod["metadata"]["generateName"] == "virt-launcher-tiny-"
    assert pod["spec"]["containers"][0]["name"] == "compute"
    assert "kind" not in pod


def test_yaml_stdin_and_emulation() -> None:
    manifest = yaml.safe_dump(json.loads(MINIMAL.read_text()))
    code, out, _ = _run("-f", "-", "--domain-type", "qemu", stdin=manifest)
    assert code == 0
    compute = json.loads(out)["spec"]["containers"][0]
    assert "devices.kubevirt.io/kvm" not in compute["resources"]["limits"]
    assert "--allow-emulation" in compute["command"]


def test_block_volumes_become_devices() -> None:
    code, out, _ = _run("-f", str(BLOCK), "--block-volumes", "root")
    assert code == 0
    compute = json.loads(out)["spec"]["containers"][0]
    assert compute["volumeDevices"] == [{"name": "root", "devicePath": "/dev/root"}]
    code, out, _ = _run("-f", str(BLOCK))
    assert "volumeDevices" not in json.loads(out)["spec"]["containers"][0]


def test_refused_vmi_exits_1_with_causes() -> None:
    invalid = sorted(p for p in (CONFORMANCE / "invalid").glob("*.json") if p.name.count(".") == 1)[0]
    code, out, err = _run("-f", str(invalid))
    assert code == 1
    assert out == ""
    assert json.loads(err)[0]["field"]


def test_bad_label_exits_1_with_one_line() -> None:
    manifest = json.loads(MINIMAL.read_text())
    manifest["metadata"]["labels"] = {"logVerbosity": "loud"}
    code, out, err = _run("-f", "-", stdin=json.dumps(manifest))
    assert code == 1
    assert out == ""
    assert err.startswith("error: metadata.labels.logVerbosity")
    assert err.count("\n") == 1


def test_unreadable_input_exits_2(tmp_path: Path) -> None:
    code, _, err = _run("-f", str(tmp_path / "missing.yaml"))
    assert code == 2
    assert err.startswith("error: cannot read")
