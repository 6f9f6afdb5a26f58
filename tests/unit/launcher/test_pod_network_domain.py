"""Phase 2's part of the domain: the converter's tap interface completed with the pod's target, MAC, MTU."""

from __future__ import annotations

import json
from typing import Any

from lxml import etree

from kubevirt.virt_launcher.network import PodNetworkConverter, on_pod_network
from kubevirt.virt_launcher.virtwrap.domain_pipeline import domain_xml
from kubevirt.virt_launcher.virtwrap.node import NodeFacts, PodTap
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts, read_vmi


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
    tap = PodTap("default", "tap0", "0a:58:0a:f4:00:05", 1400)
    # The taps reach the conversion worker as the pod's facts, through its JSON.
    node = NodeFacts.from_json(NodeFacts(emulation=True, pod_taps=(tap,)).to_json())
    completed = etree.fromstring(domain_xml(json.dumps(doc), None, node).encode())
    (nic,) = completed.findall("devices/interface")
    assert nic.get("type") == "ethernet"
    assert nic.find("alias").get("name") == "ua-default"
    assert (nic.find("target").get("dev"), nic.find("target").get("managed")) == ("tap0", "no")
    assert nic.find("mac").get("address") == "0a:58:0a:f4:00:05"
    assert nic.find("mtu").get("size") == "1400"


def test_an_interface_without_a_tap_keeps_what_the_converter_made() -> None:
    doc = vmi([{"name": "default", "masquerade": {}}], [{"name": "default", "pod": {}}])
    node = NodeFacts(emulation=True, pod_taps=(PodTap("other", "tap9", "0a:58:0a:f4:00:09", 9000),))
    (nic,) = etree.fromstring(domain_xml(json.dumps(doc), None, node).encode()).findall("devices/interface")
    assert nic.find("target") is None
    assert nic.find("mtu") is None


def test_vmis_off_the_pod_network_are_left_alone() -> None:
    calls: list[tuple[VMIFacts, NodeFacts]] = []

    def converter(vmi: VMIFacts, options: Any, node: NodeFacts) -> str:
        calls.append((vmi, node))
        return "<domain/>"

    wrapped = PodNetworkConverter(converter)
    facts = read_vmi(json.dumps(vmi([], [])).encode())
    assert wrapped(facts, None, NodeFacts()) == "<domain/>"  # no pod network: no phase 2, no import of it
    assert calls == [(facts, NodeFacts())]
    wrapped.stop()


def test_pod_network_bindings_are_found_from_the_view() -> None:
    on_pod = read_vmi(json.dumps(vmi([{"name": "default", "bridge": {}}], [])).encode())
    off_pod = read_vmi(json.dumps(vmi([{"name": "sriov", "sriov": {}}], [])).encode())
    assert on_pod_network(on_pod.view)
    assert not on_pod_network(off_pod.view)
