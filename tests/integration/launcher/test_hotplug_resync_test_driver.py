"""SyncVirtualMachine on a running domain converts the VMI again only for hotplugged volumes, and only
when what their disks depend on changed (the conversion runs in a worker process the launcher starts for
it). Against libvirt's test driver, with a counting stand-in for the converter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libvirt
import pytest

from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.node import NodeFacts
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts, read_vmi
from kubevirt_testing.driver_domain import driver_domain_xml

pytestmark = pytest.mark.timeout(60)


class CountingConverter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, facts: VMIFacts, options: Any, node: NodeFacts) -> str:
        self.calls += 1
        return driver_domain_xml(facts, options, node)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[libvirt.virConnect]:
    libvirt.registerErrorHandler(lambda *_: None, None)
    node = tmp_path / "node.xml"
    node.write_text("<node/>")
    connection = libvirt.open(f"test://{node}")
    yield connection
    connection.close()


def vmi(*statuses: dict[str, Any], phase: str = "Running") -> VMIFacts:
    document = {
        "metadata": {"name": "vm", "namespace": "ns", "uid": "uid-vm"},
        "spec": {
            "volumes": [{"name": s["name"], "persistentVolumeClaim": {"claimName": "c"}} for s in statuses]
        },
        "status": {"phase": phase, "volumeStatus": list(statuses)},
    }
    return read_vmi(json.dumps(document).encode())


def hotplug(phase: str) -> dict[str, Any]:
    return {"name": "data", "target": "", "phase": phase, "hotplugVolume": {"attachPodName": "hp-volume-x"}}


def test_the_vmi_is_converted_again_only_when_its_hotplugged_disks_may_change(
    conn: libvirt.virConnect,
) -> None:
    converter = CountingConverter()
    manager = DomainManager(conn, converter)
    manager.sync_vmi(vmi(phase="Scheduled"))  # defined and started
    assert converter.calls == 1
    manager.sync_vmi(vmi())
    manager.sync_vmi(vmi({"name": "data", "target": "vdb"}))  # no hotplugged volume: nothing to check
    assert converter.calls == 1

    manager.sync_vmi(vmi(hotplug("AttachedToNode")))
    assert converter.calls == 2
    manager.sync_vmi(vmi(hotplug("AttachedToNode")))  # nothing changed since: settled
    assert converter.calls == 2
    manager.sync_vmi(vmi(hotplug("MountedToPod")))
    assert converter.calls == 3
