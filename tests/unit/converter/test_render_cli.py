"""``virtctl render``: XML on stdout, exit 1 with a one-line field error, exit 2 for unreadable input."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubevirt.virt_launcher.virtwrap.api import Domain
from kubevirt.virtctl.root import root

VALID = Path(__file__).resolve().parents[2] / "testdata" / "conformance" / "vmi" / "valid"
MINIMAL = VALID / "001-minimal-containerdisk.json"


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(root, ["render", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_renders_json_file_with_defaults_and_hotplug() -> None:
    code, out, _ = _run("-f", str(MINIMAL))
    assert code == 0
    domain = Domain.from_xml(out)
    assert domain.name == "default_tiny"
    assert domain.type == "kvm"
    assert domain.vcpu is not None
    assert domain.vcpu.cpus == 4


def test_yaml_from_stdin_with_options(tmp_path: Path) -> None:
    manifest = yaml.safe_dump(json.loads(MINIMAL.read_text()))
    code, out, _ = _run("-f", "-", "--rollout-strategy", "Stage", "--domain-type", "qemu", stdin=manifest)
    assert code == 0
    domain = Domain.from_xml(out)
    assert domain.type == "qemu"
    assert domain.vcpus is None
    assert domain.vcpu is not None
    assert domain.vcpu.cpus == 1


def test_block_volumes_and_feature_gates_reach_the_pipeline() -> None:
    efi = str(VALID / "040-firmware-efi-no-secureboot.json")
    nvram = Domain.from_xml(_run("-f", efi)[1]).os.nvram
    assert nvram is not None
    assert nvram.path == "/var/run/kubevirt-private/libvirt/qemu/nvram/efivm_VARS.fd"
    nvram = Domain.from_xml(_run("-f", efi, "--feature-gates", "Root,Snapshot")[1]).os.nvram
    assert nvram is not None
    assert nvram.path == "/var/lib/libvirt/qemu/nvram/efivm_VARS.fd"
    code, out, err = _run("-f", str(VALID / "029-pvc-block.json"), "--block-volumes", "root,scratch")
    assert code == 0, err
    disk = Domain.from_xml(out).devices.disks[0]
    assert disk.type == "block"
    assert disk.source.dev == "/dev/root"


def test_refusal_exits_1_naming_the_field(tmp_path: Path) -> None:
    vmi = json.loads(MINIMAL.read_text())
    vmi["spec"]["domain"]["devices"]["disks"].append({"name": "ghost", "disk": {"bus": "virtio"}})
    path = tmp_path / "vmi.json"
    path.write_text(json.dumps(vmi))
    code, out, err = _run("-f", str(path))
    assert code == 1
    assert out == ""
    assert "spec.domain.devices.disks[1]" in err


def test_bad_field_type_exits_1_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "vmi.yaml"
    path.write_text("metadata: {name: x}\nspec:\n  domain:\n    devices:\n      disks: {}\n")
    code, out, err = _run("-f", str(path))
    assert code == 1
    assert out == ""
    assert "spec.domain.devices.disks" in err


def test_unreadable_input_exits_2(tmp_path: Path) -> None:
    assert _run("-f", str(tmp_path / "missing.yaml"))[0] == 2
    broken = tmp_path / "broken.yaml"
    broken.write_text("spec: [unclosed\n")
    assert _run("-f", str(broken))[0] == 2
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("just a string\n")
    assert _run("-f", str(scalar))[0] == 2


def test_yaml_timestamps_stay_strings() -> None:
    manifest = yaml.safe_dump(json.loads(MINIMAL.read_text()))
    manifest = manifest.replace("metadata:\n", "metadata:\n  creationTimestamp: 2024-01-01T00:00:00Z\n", 1)
    manifest = manifest.replace("metadata:\n", "metadata:\n  annotations: {note: 2024-01-01}\n", 1)
    code, out, err = _run("-f", "-", stdin=manifest)
    assert (code, err) == (0, "")
    assert Domain.from_xml(out).name == "default_tiny"
