"""Phase 2's part of the domain: the converter's tap interface completed with the pod's target, MAC, MTU."""

from __future__ import annotations

import json
from typing import Any

from lxml import etree

from kubevirt.network.launcher import TapInterface
from kubevirt.virt_launcher.network import PodNetworkConverter, complete_tap_interfaces
from kubevirt.virt_launcher.virtwrap.domain_pipeline import domain_xml
from kubevirt.virt_launcher.virtwrap.node import NodeFacts


def vmi(interfaces: list[dict[str, Any]], networks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "v", "namespace": "default", "uid": "u-1"},
        "spec": {
            "domain": {
                "devices": {"interfaces": interfaces},
                "resources": {"requests": {"memory": "128Mi"}},
                "machine": {"type": "q35"},
            },
            "networks": networks,
        },
    }


def test_the_pod_network_interface_gets_tap_mac_and_mtu() -> None:
    doc = vmi([{"name": "default", "masquerade": {}}], [{"name": "default", "pod": {}}])
    xml = domain_xml(json.dumps(doc), None, NodeFacts(emulation=True))
    completed = etree.fromstring(
        complete_tap_interfaces(xml, [TapInterface("default", "tap0", "0a:58:0a:f4:00:05", 1400)]).encode()
    )
    (nic,) = completed.findall("devices/interface")
    assert nic.get("type") == "ethernet"
    assert nic.find("alias").get("name") == "ua-default"
    assert (nic.find("target").get("dev"), nic.find("target").get("managed")) == ("tap0", "no")
    assert nic.find("mac").get("address") == "0a:58:0a:f4:00:05"
    assert nic.find("mtu").get("size") == "1400"


def test_vmis_off_the_pod_network_are_left_alone() -> None:
    calls: list[bytes] = []

    def converter(vmi_json: bytes, options: Any, node: NodeFacts) -> str:
        calls.append(vmi_json)
        return "<domain/>"

    wrapped = PodNetworkConverter(converter)
    doc = json.dumps(vmi([], [])).encode()
    assert wrapped(doc, None, NodeFacts()) == "<domain/>"  # no pod network: no phase 2, no import of it
    assert calls == [doc]
    wrapped.stop()
