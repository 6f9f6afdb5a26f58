"""The conversion worker process: real converter, errors with field paths, restarts on demand."""

from __future__ import annotations

import copy
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.virt_launcher import reaper
from kubevirt.virt_launcher.convert_worker import ConversionWorker

pytestmark = pytest.mark.timeout(120)

CASES = Path(__file__).parents[2] / "testdata" / "conformance" / "vmi" / "valid"


def kernel_boot_vmi() -> dict[str, Any]:
    vmi: dict[str, Any] = json.loads((CASES / "080-kernelboot-kernel-initrd-args.defaults.json").read_text())
    return vmi


def test_worker_converts_and_reports_bad_fields() -> None:
    worker = ConversionWorker(use_emulation=True, stop_after_use=False)
    try:
        options = cmd_pb2.VirtualMachineOptions(
            VirtualMachineSMBios=cmd_pb2.SMBios(manufacturer="Acme", family="F", product="P")
        )
        root = etree.fromstring(worker(kernel_boot_vmi(), options).encode())
        assert root.get("type") == "qemu"
        assert root.findtext("name") == "default_kb1"
        assert root.find("sysinfo/system/entry[@name='manufacturer']").text == "Acme"  # type: ignore[union-attr]

        broken = copy.deepcopy(kernel_boot_vmi())
        broken["spec"]["domain"]["memory"]["guest"] = "lots"
        with pytest.raises(ValueError, match=r"spec\.domain\.memory\.guest"):
            worker(broken, None)
        # The worker survives a bad VMI and keeps converting.
        assert "<name>default_kb1</name>" in worker(kernel_boot_vmi(), None)

        # A worker that died is collected (its exit status known, no longer kept from the reaper) and
        # replaced by a fresh one.
        dead = worker._process
        assert dead is not None
        dead.kill()
        assert "<name>default_kb1</name>" in worker(kernel_boot_vmi(), None)
        assert dead.returncode == -signal.SIGKILL
        assert dead.stdout is not None
        assert dead.stdout.closed
        assert dead.pid not in reaper._owned
        assert worker._process is not dead
    finally:
        worker.stop()


def test_worker_stops_after_use_and_starts_again() -> None:
    worker = ConversionWorker(use_emulation=False)
    worker.start()
    process = worker._process
    assert process is not None
    first = worker(kernel_boot_vmi(), None)
    assert not worker.running  # released right after the conversion
    assert process.stdout is not None
    assert process.stdout.closed  # its pipes go with it
    assert process.returncode == 0
    assert process.pid not in reaper._owned
    second = worker(kernel_boot_vmi(), None)
    assert first == second
    assert 'type="kvm"' in first


def test_worker_uses_the_firmware_directory_it_was_given() -> None:
    vmi = json.loads((CASES / "040-firmware-efi-no-secureboot.defaults.json").read_text())
    worker = ConversionWorker(use_emulation=True, ovmf_path="/opt/firmware")
    root = etree.fromstring(worker(vmi, None).encode())
    assert root.findtext("os/loader") == "/opt/firmware/OVMF_CODE.fd"
    assert root.find("os/nvram").get("template") == "/opt/firmware/OVMF_VARS.fd"  # type: ignore[union-attr]
