"""The test guest's examples (examples/*test-guest*.yaml) are accepted as they stand and render a domain
with the disks, cloud-init and kernel boot they describe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubevirt.virtctl.root import root

EXAMPLES = Path(__file__).parents[3] / "examples"
NAMES = sorted(p.name for p in EXAMPLES.glob("*test-guest*.yaml"))


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(root, list(args))
    return result.exit_code, result.stdout


def test_there_are_vm_vmi_and_kernel_boot_examples() -> None:
    assert NAMES == [
        "vm-test-guest-alpine-compatible.yaml",
        "vm-test-guest-cirros-compatible.yaml",
        "vm-test-guest-fedora-compatible.yaml",
        "vm-test-guest-no-network.yaml",
        "vm-test-guest-pvc-root.yaml",
        "vm-test-guest.yaml",
        "vmi-test-guest-kernel-boot.yaml",
        "vmi-test-guest.yaml",
    ]


@pytest.mark.parametrize("name", NAMES)
def test_the_example_is_accepted_and_renders(name: str) -> None:
    code, out = run("validate", "-f", str(EXAMPLES / name))
    assert (code, json.loads(out)) == (0, [])
    code, domain = run("render", "-f", str(EXAMPLES / name))
    assert code == 0
    if "kernel-boot" in name:
        assert "/var/run/kubevirt/container-disks/kernel-boot/vmlinuz" in domain
    else:
        root_disks = (
            "/var/run/kubevirt/container-disks/disk_0.img",
            "disk.qcow2",
            "/var/run/kubevirt-private/vmi-disks/rootdisk/disk.img",
        )
        assert any(path in domain for path in root_disks)
        assert "noCloud.iso" in domain or "configdrive.iso" in domain
