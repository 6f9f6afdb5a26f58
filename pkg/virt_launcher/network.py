"""Phase 2 of the pod network, around the converter: the domain's tap interfaces and the VM's DHCP.

The converter leaves the pod-dependent parts of a tap ``<interface>`` out; once the domain XML is
built, the pod's network (which phase 1 in virt-handler already set up) supplies the target tap
(``managed="no"``: libvirt opens it, never creates it), the MAC and the MTU, and the DHCP server for
the VM is started. The network library is imported only for VMIs on the pod network: it brings the
typed API and pyroute2, which the long-lived launcher otherwise does without.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kubevirt.virt_launcher.virtwrap import api
from kubevirt.virt_launcher.virtwrap.manager import Converter
from kubevirt.virt_launcher.virtwrap.node import NodeFacts

if TYPE_CHECKING:
    from kubevirt.network.launcher import LauncherNetwork, TapInterface

POD_BINDINGS = ("masquerade", "bridge")


def _on_pod_network(vmi: dict[str, Any]) -> bool:
    interfaces = ((vmi.get("spec") or {}).get("domain") or {}).get("devices", {}).get("interfaces") or []
    return any(isinstance(i, dict) and any(b in i for b in POD_BINDINGS) for i in interfaces)


def complete_tap_interfaces(xml: str, taps: list[TapInterface]) -> str:
    """The domain XML with each tap interface's target, MAC and MTU filled in."""
    domain = api.Domain.from_xml(xml)
    by_alias = {api.Alias.user_defined(tap.name).name: tap for tap in taps}
    for interface in domain.devices.interfaces if domain.devices else []:
        tap = by_alias.get(interface.alias.name if interface.alias else None)
        if tap is None:
            continue
        interface.target = api.InterfaceTarget(dev=tap.target, managed="no")
        interface.mac = api.MAC(address=tap.mac)
        interface.mtu = api.MTU(size=str(tap.mtu))
    return domain.to_xml()


class PodNetworkConverter:
    """The converter, followed by phase 2 for VMIs on the pod network."""

    def __init__(self, inner: Converter) -> None:
        self._inner = inner
        self._network: LauncherNetwork | None = None

    def __call__(self, vmi_json: bytes, options: Any, node: NodeFacts) -> str:
        xml = self._inner(vmi_json, options, node)
        vmi = json.loads(vmi_json)
        if not isinstance(vmi, dict) or not _on_pod_network(vmi):
            return xml
        from kubevirt.network.errors import NetworkError
        from kubevirt.network.launcher import LauncherNetwork

        if self._network is None:
            self._network = LauncherNetwork()
        try:
            taps = self._network.prepare(vmi)
        except (NetworkError, OSError) as err:
            raise ValueError(f"pod network: {err}") from err
        return complete_tap_interfaces(xml, taps)

    def stop(self) -> None:
        """Stops the DHCP servers (the launcher is exiting)."""
        if self._network is not None:
            self._network.stop()
