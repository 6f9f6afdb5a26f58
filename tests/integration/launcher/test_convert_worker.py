"""The conversion worker process: real converter, errors with field paths, restarts on demand."""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.virt_launcher import reaper
from kubevirt.virt_launcher.convert_worker import ConversionWorker
from kubevirt.virt_launcher.virtwrap.node import NodeFacts
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts, read_vmi

pytestmark = pytest.mark.timeout(120)

CASES = Path(__file__).parents[2] / "testdata" / "conformance" / "vmi" / "valid"


EMULATED = NodeFacts(emulation=True)


def kernel_boot_vmi() -> dict[str, Any]:
    vmi: dict[str, Any] = json.loads((CASES / "080-kernelboot-kernel-initrd-args.defaults.json").read_text())
    return vmi


def encoded(vmi: dict[str, Any]) -> VMIFacts:
    """The VMI as the command server hands it on: decoded once, its JSON kept."""
    return read_vmi(json.dumps(vmi).encode())


def test_worker_converts_and_reports_bad_fields() -> None:
    worker = ConversionWorker(stop_after_use=False)
    try:
        options = cmd_pb2.VirtualMachineOptions(
            VirtualMachineSMBios=cmd_pb2.SMBios(manufacturer="Acme", family="F", product="P")
        )
        root = etree.fromstring(worker(encoded(kernel_boot_vmi()), options, EMULATED).encode())
        assert root.get("type") == "qemu"
        assert root.findtext("name") == "default_kb1"
        assert root.find("sysinfo/system/entry[@name='manufacturer']").text == "Acme"  # type: ignore[union-attr]

        broken = copy.deepcopy(kernel_boot_vmi())
        broken["spec"]["domain"]["memory"]["guest"] = "lots"
        with pytest.raises(ValueError, match=r"spec\.domain\.memory\.guest"):
            worker(encoded(broken), None, EMULATED)
        # The worker survives a bad VMI and keeps converting.
        assert "<name>default_kb1</name>" in worker(encoded(kernel_boot_vmi()), None, EMULATED)

        # A worker that died is collected (its exit status known, no longer kept from the reaper) and
        # replaced by a fresh one.
        dead = worker._process
        assert dead is not None
        dead.kill()
        assert "<name>default_kb1</name>" in worker(encoded(kernel_boot_vmi()), None, EMULATED)
        assert dead.returncode == -signal.SIGKILL
        assert dead.stdout is not None
        assert dead.stdout.closed
        assert not reaper.owned(dead.pid)
        assert worker._process is not dead
    finally:
        worker.stop()


def test_worker_stops_after_use_and_starts_again() -> None:
    worker = ConversionWorker()
    worker.start()
    process = worker._process
    assert process is not None
    first = worker(encoded(kernel_boot_vmi()), None, NodeFacts())
    assert not worker.running  # released right after the conversion
    assert process.stdout is not None
    assert process.stdout.closed  # its pipes go with it
    assert process.returncode == 0
    assert not reaper.owned(process.pid)
    second = worker(encoded(kernel_boot_vmi()), None, NodeFacts())
    assert first == second
    assert 'type="kvm"' in first


def test_worker_uses_the_firmware_directory_it_was_given() -> None:
    vmi = json.loads((CASES / "040-firmware-efi-no-secureboot.defaults.json").read_text())
    worker = ConversionWorker()
    root = etree.fromstring(
        worker(encoded(vmi), None, NodeFacts(emulation=True, ovmf_dir="/opt/firmware")).encode()
    )
    assert root.findtext("os/loader") == "/opt/firmware/OVMF_CODE.fd"
    assert root.find("os/nvram").get("template") == "/opt/firmware/OVMF_VARS.fd"  # type: ignore[union-attr]


FORKED_WORKER_SCRIPT = """
import json, signal, sys
from kubevirt.virt_launcher import reaper
from kubevirt.virt_launcher.convert_worker import ConversionWorker, ForkedWorker
from kubevirt.virt_launcher.virtwrap.node import NodeFacts

vmi = sys.stdin.read().encode()
worker = ConversionWorker()
worker.start()
process = worker._process
assert isinstance(process, ForkedWorker), process  # single-threaded: a fork, not a fresh interpreter
# Its imports were not made here: the launcher stays without the typed API.
assert not [m for m in sys.modules if m.startswith("kubevirt_api")]
from kubevirt.virt_launcher.virtwrap.vmi import read_vmi
vmi = read_vmi(vmi)
first = worker(vmi, None, NodeFacts(emulation=True))
assert not worker.running and process.returncode == 0 and not reaper.owned(process.pid)
assert process.stdout is not None and process.stdout.closed

# One that dies is collected with its signal, and a fresh one converts.
keeper = ConversionWorker(stop_after_use=False)
keeper.start()
dead = keeper._process
assert dead is not None
dead.kill()
second = keeper(vmi, None, NodeFacts(emulation=True))
assert dead.returncode == -signal.SIGKILL and keeper._process is not dead
keeper.stop()
print(json.dumps([first, second]))
"""


def test_a_single_threaded_launcher_forks_its_worker() -> None:
    """The worker forked from the launcher's process converts exactly as a fresh interpreter does."""
    result = subprocess.run(
        [sys.executable, "-c", FORKED_WORKER_SCRIPT],
        input=json.dumps(kernel_boot_vmi()),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    forked, after_a_kill = json.loads(result.stdout)
    spawned = ConversionWorker()
    assert forked == after_a_kill == spawned(encoded(kernel_boot_vmi()), None, EMULATED)
