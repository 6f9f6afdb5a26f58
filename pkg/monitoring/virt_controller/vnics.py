"""The labels of ``kubevirt_vm_vnic_info`` and ``kubevirt_vmi_vnic_info``, from a VMI spec (or a VM's
template spec): one series per interface whose network is the pod network or a Multus network."""

from __future__ import annotations

from typing import Final

from kubevirt_api.view import View

__all__ = ["VNIC_LABELS", "vnic_labels"]

VNIC_LABELS: Final = ("name", "namespace", "vnic_name", "binding_type", "network", "binding_name", "model")
_CORE_BINDINGS: Final = ("masquerade", "bridge", "sriov")


def _binding(iface: View) -> tuple[str, str]:
    for name in _CORE_BINDINGS:
        if iface.has(name):
            return "core", name
    plugin = iface.optional_object("binding")
    if plugin is not None:
        return "plugin", plugin.string("name")
    return "", ""


def _network_name(iface_name: str, networks: list[View]) -> str | None:
    network = next((n for n in networks if n.string("name") == iface_name), None)
    if network is None:
        return None
    if network.has("pod"):
        return "pod networking"
    multus = network.optional_object("multus")
    return multus.string("networkName") if multus is not None else None


def vnic_labels(name: str, namespace: str, spec: View) -> list[tuple[str, ...]]:
    """Label values in :data:`VNIC_LABELS` order, one tuple per interface with a known network."""
    networks = spec.items("networks")
    found: list[tuple[str, ...]] = []
    for iface in spec.object("domain").object("devices").items("interfaces"):
        iface_name = iface.string("name")
        network = _network_name(iface_name, networks)
        if network is None:
            continue
        binding_type, binding_name = _binding(iface)
        model = iface.string("model") or "<none>"
        found.append((name, namespace, iface_name, binding_type, network, binding_name, model))
    return found
