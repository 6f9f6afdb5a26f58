"""CPU and memory hotplug in the launcher: the virtio-mem device built from the VMI, and the domain
manager's and command server's calls into libvirt (against a recording fake domain)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import libvirt
import pytest

from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.virt_launcher.virtwrap import api
from kubevirt.virt_launcher.virtwrap.cmd_server.server import CommandServer
from kubevirt.virt_launcher.virtwrap.errors import (
    DomainNotFoundError,
    InvalidRequestError,
    LibvirtCallError,
    WrongStateError,
)
from kubevirt.virt_launcher.virtwrap.liveupdate import memory_device, requested_vcpus
from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.migration import Migrator
from kubevirt.virt_launcher.virtwrap.node import NodeFacts
from kubevirt.virt_launcher.virtwrap.vmi import InvalidVMIError, VMIFacts, vmi_facts

GiB = 1 << 30
LIVE_AND_CONFIG = libvirt.VIR_DOMAIN_AFFECT_LIVE | libvirt.VIR_DOMAIN_AFFECT_CONFIG
DOMAIN = "ns_vm"
LIVE_DEVICE = """<memory model='virtio-mem'>
      <target>
        <size unit='KiB'>1048576</size>
        <node>0</node>
        <block unit='KiB'>2048</block>
        <requested unit='KiB'>524288</requested>
        <current unit='KiB'>524288</current>
      </target>
      <alias name='virtiomem0'/>
      <address type='pci' domain='0x0000' bus='0x03' slot='0x00' function='0x0'/>
    </memory>"""


def vmi(**domain: Any) -> dict[str, Any]:
    spec_domain = {
        "cpu": {"sockets": 2, "cores": 2, "threads": 1, "maxSockets": 4},
        "memory": {"guest": "2Gi", "maxGuest": "3Gi"},
        **domain,
    }
    return {
        "metadata": {"name": "vm", "namespace": "ns", "uid": "u1"},
        "spec": {"domain": spec_domain},
        "status": {"phase": "Running", "memory": {"guestAtBoot": "1Gi"}},
    }


def facts(the_vmi: dict[str, Any]) -> VMIFacts:
    return vmi_facts(the_vmi, raw=json.dumps(the_vmi).encode())


class FakeDomain:
    def __init__(self, *, devices: str = "", active: bool = True) -> None:
        self.devices = devices
        self.active = active
        self.calls: list[tuple[str, Any, int]] = []
        self.refuse: libvirt.libvirtError | None = None

    def name(self) -> str:
        return DOMAIN

    def isActive(self) -> bool:  # noqa: N802
        return self.active

    def XMLDesc(self, flags: int = 0) -> str:  # noqa: N802
        return f"<domain type='qemu'><name>{DOMAIN}</name><devices>{self.devices}</devices></domain>"

    def _call(self, name: str, argument: Any, flags: int) -> int:
        if self.refuse is not None:
            raise self.refuse
        self.calls.append((name, argument, flags))
        return 0

    def setVcpusFlags(self, count: int, flags: int) -> int:  # noqa: N802
        return self._call("setVcpusFlags", count, flags)

    def attachDeviceFlags(self, xml: str, flags: int) -> int:  # noqa: N802
        return self._call("attachDeviceFlags", xml, flags)

    def updateDeviceFlags(self, xml: str, flags: int) -> int:  # noqa: N802
        return self._call("updateDeviceFlags", xml, flags)


class FakeConn:
    def __init__(self, dom: FakeDomain | None) -> None:
        self.dom = dom

    def lookupByName(self, name: str) -> FakeDomain:  # noqa: N802
        if self.dom is None or name != DOMAIN:
            error = libvirt.libvirtError("no domain")
            error.err = (libvirt.VIR_ERR_NO_DOMAIN, 0, "Domain not found", 0, "", "", "", 0, 0)
            raise error
        return self.dom


def manager_of(dom: FakeDomain | None) -> tuple[DomainManager, list[str]]:
    changes: list[str] = []
    conn: Any = FakeConn(dom)
    manager = DomainManager(
        conn, lambda *_: "", node=NodeFacts(), on_domain_change=lambda: changes.append("x")
    )
    return manager, changes


def test_the_vcpu_count_is_the_topologys_and_else_the_cpu_resources() -> None:
    assert requested_vcpus(facts(vmi()).view) == 4
    assert requested_vcpus(facts(vmi(cpu={"sockets": 3})).view) == 3  # cores and threads count as 1
    limits = {"requests": {"cpu": "2"}, "limits": {"cpu": "3"}}
    assert requested_vcpus(facts(vmi(cpu={}, resources=limits)).view) == 3
    assert requested_vcpus(facts(vmi(cpu={}, resources={"requests": {"cpu": "1500m"}})).view) == 2
    assert requested_vcpus(facts(vmi(cpu={})).view) == 1


def test_the_virtio_mem_device_holds_the_room_above_the_boot_memory() -> None:
    device = memory_device(facts(vmi()).view)
    assert device == api.MemoryDevice(
        model="virtio-mem",
        target=api.MemoryTarget(
            size=api.Memory(unit="b", value=2 * GiB),  # maxGuest 3Gi - 1Gi at boot
            node="0",
            block=api.Memory(unit="b", value=2 << 20),
            requested=api.Memory(unit="b", value=GiB),  # guest 2Gi - 1Gi at boot
        ),
    )
    hugepages = vmi(memory={"guest": "2Gi", "maxGuest": "3Gi", "hugepages": {"pageSize": "1Gi"}})
    target = memory_device(facts(hugepages).view).target
    assert target is not None
    assert target.block == api.Memory(unit="b", value=GiB)


@pytest.mark.parametrize(
    ("memory", "at_boot", "error"),
    [
        ({"guest": "2Gi"}, "1Gi", "spec.domain.memory.maxGuest: required for memory hotplug"),
        ({"guest": "2Gi", "maxGuest": "3Gi"}, None, "status.memory.guestAtBoot: required for memory hotplug"),
        ({"guest": "4Gi", "maxGuest": "3Gi"}, "1Gi", "memory hotplug needs guestAtBoot"),
        ({"guest": "512Mi", "maxGuest": "3Gi"}, "1Gi", "memory hotplug needs guestAtBoot"),
    ],
)
def test_a_vmi_without_hotplug_room_is_refused(
    memory: dict[str, str], at_boot: str | None, error: str
) -> None:
    the_vmi = vmi(memory=memory)
    the_vmi["status"]["memory"] = {"guestAtBoot": at_boot} if at_boot else {}
    with pytest.raises(InvalidRequestError, match=error):
        memory_device(facts(the_vmi).view)


def test_a_malformed_quantity_names_its_field() -> None:
    with pytest.raises(InvalidVMIError, match=r"spec\.domain\.memory\.guest: not a quantity"):
        memory_device(facts(vmi(memory={"guest": "lots", "maxGuest": "3Gi"})).view)


def test_vcpus_are_set_live_and_in_the_definition() -> None:
    dom = FakeDomain()
    manager, changes = manager_of(dom)
    manager.update_vcpus(facts(vmi()))
    assert dom.calls == [("setVcpusFlags", 4, LIVE_AND_CONFIG)]
    assert changes == ["x"]  # virt-handler hears of the new vCPUs


def test_a_domain_without_virtio_mem_gets_the_device_attached() -> None:
    dom = FakeDomain()
    manager, changes = manager_of(dom)
    manager.update_guest_memory(facts(vmi()))
    [(name, xml, flags)] = dom.calls
    assert (name, flags) == ("attachDeviceFlags", LIVE_AND_CONFIG)
    assert api.MemoryDevice.from_xml(xml) == memory_device(facts(vmi()).view)
    assert changes == ["x"]


def test_a_domain_with_virtio_mem_has_its_requested_size_changed_live() -> None:
    dom = FakeDomain(devices=LIVE_DEVICE)
    manager, _ = manager_of(dom)
    manager.update_guest_memory(facts(vmi(memory={"guest": "1536Mi", "maxGuest": "2Gi"})))
    [(name, xml, flags)] = dom.calls
    assert (name, flags) == ("updateDeviceFlags", libvirt.VIR_DOMAIN_DEVICE_MODIFY_LIVE)
    sent = api.MemoryDevice.from_xml(xml)
    expected = api.Domain.from_xml(dom.XMLDesc()).devices.memory
    assert expected is not None
    assert expected.target is not None
    # libvirt's own device, alias and address included, with only the requested size changed
    expected.target.requested = api.Memory(unit="b", value=512 << 20)
    assert sent == expected


def test_hotplug_needs_a_running_domain_and_reports_libvirts_refusal() -> None:
    manager, changes = manager_of(FakeDomain(active=False))
    with pytest.raises(WrongStateError, match="failed to update vCPUs: domain ns_vm is not running"):
        manager.update_vcpus(facts(vmi()))
    manager, changes = manager_of(None)
    with pytest.raises(DomainNotFoundError, match="Domain ns_vm not found"):
        manager.update_guest_memory(facts(vmi()))
    dom = FakeDomain()
    dom.refuse = libvirt.libvirtError("refused")
    dom.refuse.err = (libvirt.VIR_ERR_OPERATION_INVALID, 0, "no NUMA node", 0, "", "", "", 0, 0)
    manager, changes = manager_of(dom)
    with pytest.raises(LibvirtCallError, match="failed to update Guest Memory: no NUMA node"):
        manager.update_guest_memory(facts(vmi()))
    assert changes == []


def test_the_command_server_runs_both_hotplug_commands(tmp_path: Path) -> None:
    dom = FakeDomain()
    manager, _ = manager_of(dom)
    server = CommandServer(manager, Migrator(manager, tmp_path))

    def request(the_vmi: dict[str, Any]) -> cmd_pb2.VMIRequest:
        return cmd_pb2.VMIRequest(vmi=cmd_pb2.VMI(vmiJson=json.dumps(the_vmi).encode()))

    assert server.SyncVirtualMachineCPUs(request(vmi()), None).success
    assert server.SyncVirtualMachineMemory(request(vmi()), None).success
    assert [name for name, _, _ in dom.calls] == ["setVcpusFlags", "attachDeviceFlags"]
    no_room = copy.deepcopy(vmi())
    del no_room["spec"]["domain"]["memory"]["maxGuest"]
    reply = server.SyncVirtualMachineMemory(request(no_room), None)
    assert not reply.success
    assert reply.message == "spec.domain.memory.maxGuest: required for memory hotplug"


def test_kubevirts_functional_test_annotation_makes_the_memory_hotplug_fail(tmp_path: Path) -> None:
    dom = FakeDomain()
    manager, _ = manager_of(dom)
    server = CommandServer(manager, Migrator(manager, tmp_path))
    marked = copy.deepcopy(vmi())
    marked["metadata"].setdefault("annotations", {})["kubevirt.io/func-test-memory-hotplug-fail"] = ""
    reply = server.SyncVirtualMachineMemory(
        cmd_pb2.VMIRequest(vmi=cmd_pb2.VMI(vmiJson=json.dumps(marked).encode())), None
    )
    assert (reply.success, reply.message) == (False, "kubevirt.io/func-test-memory-hotplug-fail")
    assert dom.calls == []  # the domain is left as it was
