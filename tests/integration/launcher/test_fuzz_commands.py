"""Fuzz virt-launcher's commands with arbitrary VMI JSON: every answer is a success or a clean refusal.

The servicer runs against libvirt's test driver with the real converter (its domain type switched to
the driver's own), so a request goes through parsing, the VMI checks, conversion and libvirt. A clean
refusal is ``success=false`` with a message; ``internal error`` means something raised that should not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libvirt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.virt_launcher.virtwrap.cmd_server.server import CommandServer
from kubevirt.virt_launcher.virtwrap.converter import ConversionError
from kubevirt.virt_launcher.virtwrap.domain_pipeline import domain_xml
from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.migration import Migrator
from kubevirt.virt_launcher.virtwrap.node import NodeFacts
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts
from kubevirt_api.base import ApiParseError
from kubevirt_testing.fuzz_inputs import CONFORMANCE, FUZZ_SETTINGS, VMI_SEEDS, json_values, mutated

DEFAULTED_SEEDS = [
    json.loads(path.read_text()) for path in sorted((CONFORMANCE / "vmi" / "valid").glob("*.defaults.json"))
]
VMI_COMMANDS = [
    "SyncVirtualMachine",
    "PauseVirtualMachine",
    "UnpauseVirtualMachine",
    "ShutdownVirtualMachine",
    "KillVirtualMachine",
    "DeleteVirtualMachine",
    "ResetVirtualMachine",
    "SoftRebootVirtualMachine",
    "UnfreezeVirtualMachine",
    "SyncMigrationTarget",
    "CancelVirtualMachineMigration",
    "FinalizeVirtualMachineMigration",
    "SignalTargetPodCleanup",
    "HotplugHostDevices",
]
EMULATION = NodeFacts(emulation=True)


def converter_for_the_test_driver(vmi: VMIFacts, options: Any, node: NodeFacts) -> str:
    """The real domain, with the test driver's domain type."""
    xml = domain_xml(vmi.raw, options, EMULATION)
    return xml.replace('<domain type="qemu"', '<domain type="test"', 1)


@pytest.fixture(scope="module")
def servicer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CommandServer]:
    libvirt.registerErrorHandler(lambda *_: None, None)
    node = tmp_path_factory.mktemp("fuzz-node") / "node.xml"
    node.write_text("<node/>")
    conn = libvirt.open(f"test://{node}")
    manager = DomainManager(conn, converter_for_the_test_driver)
    yield CommandServer(manager, Migrator(manager, tmp_path_factory.mktemp("fuzz-share")))
    conn.close()


@st.composite
def vmi_payloads(draw: st.DrawFn) -> bytes:
    shape = draw(st.sampled_from(["defaulted", "defaulted", "defaulted", "raw", "json", "bytes"]))
    if shape == "bytes":
        return draw(st.binary(max_size=300))
    if shape == "json":
        return json.dumps(draw(json_values)).encode()
    document = draw(mutated(DEFAULTED_SEEDS if shape == "defaulted" else VMI_SEEDS, deep=True))
    return json.dumps(document).encode()


def _clean(response: Any) -> None:
    assert isinstance(response.success, bool)
    assert not response.message.startswith("internal error"), response.message


@pytest.mark.parametrize("command", VMI_COMMANDS)
@FUZZ_SETTINGS
@given(payload=vmi_payloads())
def test_vmi_commands_answer_or_refuse_cleanly(servicer: CommandServer, command: str, payload: bytes) -> None:
    request = cmd_pb2.VMIRequest(vmi=cmd_pb2.VMI(vmiJson=payload))
    _clean(getattr(servicer, command)(request, None))


@FUZZ_SETTINGS
@given(payload=vmi_payloads(), options=st.one_of(st.binary(max_size=200), json_values.map(json.dumps)))
def test_migrate_answers_or_refuses_cleanly(servicer: CommandServer, payload: bytes, options: Any) -> None:
    raw = options.encode() if isinstance(options, str) else options
    request = cmd_pb2.MigrationRequest(vmi=cmd_pb2.VMI(vmiJson=payload), options=raw)
    _clean(servicer.MigrateVirtualMachine(request, None))


@FUZZ_SETTINGS
@given(document=mutated(DEFAULTED_SEEDS, deep=True))
def test_the_converter_answers_a_domain_or_a_field_error(document: Any) -> None:
    try:
        outcome = domain_xml(json.dumps(document).encode(), None, EMULATION)
    except (ApiParseError, ConversionError) as err:
        outcome = f"refused: {err}"
    assert outcome.startswith(("<domain", "refused: "))


def test_the_seeds_are_present() -> None:
    assert len(DEFAULTED_SEEDS) == 54
    assert Path(CONFORMANCE).is_dir()
