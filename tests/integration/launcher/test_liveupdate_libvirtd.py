"""CPU and memory hotplug on a real libvirtd's QEMU driver (TCG): the domain manager starts a VMI with room
for a second socket and a second gigabyte, then plugs both in as virt-handler asks after a hotplug
migration. A libvirt that wants memory slots (before 10.0) gets the node's adaptation of the room."""

from __future__ import annotations

import contextlib
import copy
import ctypes
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libvirt
import pytest
from lxml import etree

from kubevirt.virt_launcher.libvirtd import Libvirtd
from kubevirt.virt_launcher.virtwrap.domain_pipeline import convert_in_process
from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.node import NodeFacts
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts, vmi_facts

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(
        not (shutil.which("libvirtd") and shutil.which("qemu-system-x86_64")),
        reason="needs libvirtd and QEMU",
    ),
]

CAPS_CACHE = Path(os.environ.get("KUBEVIRT_CACHE", "/var/cache/kubevirt-py")) / "libvirt-qemu-capabilities"
TINY: dict[str, Any] = json.loads(
    (
        Path(__file__).parents[2] / "testdata/conformance/vmi/valid/001-minimal-containerdisk.defaults.json"
    ).read_text()
)
NODE = NodeFacts(emulation=True, slotless_max_memory=False)  # libvirt 9 wants slots with <maxMemory>
GiB = 1 << 30
_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37


@contextlib.contextmanager
def no_subreaper() -> Iterator[None]:
    """This process not a child subreaper (a test of virt-launcher-monitor may have made it one): it would
    adopt QEMU, which libvirtd daemonizes, and never reap it, so that destroying the domain waited on it
    forever."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    flag = ctypes.c_int(0)
    prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
    prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    try:
        yield
    finally:
        prctl(_PR_SET_CHILD_SUBREAPER, flag.value, 0, 0, 0)


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[libvirt.virConnect]:
    with no_subreaper():
        daemon = Libvirtd(tmp_path_factory.mktemp("libvirtd"), capabilities_cache=CAPS_CACHE)
        daemon.start()
        try:
            connection = libvirt.open(daemon.uri)
            yield connection
            connection.close()
        finally:
            daemon.stop()


def hotpluggable_vmi() -> dict[str, Any]:
    """One socket of up to two and 1Gi of up to 2Gi; nothing that needs the pod (no disk, no network, no
    console or display sockets): the guest only has to run."""
    vmi = copy.deepcopy(TINY)
    vmi["status"]["phase"] = "Scheduled"
    vmi["status"]["memory"] = {"guestAtBoot": "1Gi", "guestCurrent": "1Gi", "guestRequested": "1Gi"}
    spec = vmi["spec"]
    spec["domain"]["cpu"] = {"sockets": 1, "cores": 1, "threads": 1, "maxSockets": 2, "model": "host-model"}
    spec["domain"]["memory"] = {"guest": "1Gi", "maxGuest": "2Gi"}
    spec["domain"]["resources"] = {"requests": {"memory": "1Gi"}}
    devices = spec["domain"]["devices"]
    devices.update(disks=[], interfaces=[], autoattachGraphicsDevice=False, autoattachSerialConsole=False)
    spec.update(volumes=[], networks=[])
    return vmi


def facts(vmi: dict[str, Any]) -> VMIFacts:
    return vmi_facts(vmi, raw=json.dumps(vmi).encode())


def live(dom: libvirt.virDomain) -> etree._Element:
    return etree.fromstring(dom.XMLDesc(0).encode())


def test_vcpus_and_virtio_mem_are_plugged_into_the_running_guest(conn: libvirt.virConnect) -> None:
    manager = DomainManager(conn, convert_in_process, node=NODE)
    vmi = hotpluggable_vmi()
    manager.sync_vmi(facts(vmi))
    dom = conn.lookupByName("default_tiny")
    try:
        assert dom.isActive()
        assert dom.vcpusFlags(libvirt.VIR_DOMAIN_AFFECT_LIVE) == 1
        started = live(dom)
        assert started.find("maxMemory").get("slots") == "1"  # type: ignore[union-attr]
        assert started.find("devices/memory") is None

        vmi["spec"]["domain"]["cpu"]["sockets"] = 2
        manager.update_vcpus(facts(vmi))
        assert dom.vcpusFlags(libvirt.VIR_DOMAIN_AFFECT_LIVE) == 2
        assert dom.vcpusFlags(libvirt.VIR_DOMAIN_AFFECT_CONFIG) == 2  # a restart of the domain keeps them

        # Half the room first: the device is attached; then the rest: the device libvirt has is updated.
        vmi["spec"]["domain"]["memory"]["guest"] = "1536Mi"
        manager.update_guest_memory(facts(vmi))
        assert live(dom).findtext("devices/memory/target/requested") == str(512 << 10)
        vmi["spec"]["domain"]["memory"]["guest"] = "2Gi"
        manager.update_guest_memory(facts(vmi))

        devices = live(dom).findall("devices/memory")
        assert [device.get("model") for device in devices] == ["virtio-mem"]
        target = devices[0].find("target")
        assert target is not None
        sizes = {name: int(target.findtext(name) or 0) for name in ("size", "requested", "block")}
        assert sizes == {"size": GiB // 1024, "requested": GiB // 1024, "block": 2048}
        assert {target.find(name).get("unit") for name in sizes} == {"KiB"}  # type: ignore[union-attr]
        assert target.findtext("node") == "0"
        defined = etree.fromstring(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE).encode())
        assert defined.find("devices/memory[@model='virtio-mem']") is not None  # in the definition too

        # GetDomain hands virt-handler the device, as KubeVirt's domain JSON has it.
        domain = manager.get_domain()
        assert domain is not None
        device = domain["Spec"]["Devices"]["Memory"]
        assert device["Model"] == "virtio-mem"
        assert device["Target"]["Requested"] == {"Unit": "KiB", "Value": GiB // 1024}
        assert device["Target"]["Current"]["Unit"] == "KiB"  # what the guest took so far
    finally:
        dom.destroy()
        dom.undefine()
