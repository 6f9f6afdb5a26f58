"""Phase 2 of the pod network, before the conversion: the domain's tap interfaces and the VM's DHCP.

The converter leaves the pod-dependent parts of a tap ``<interface>`` out; the pod's network (which
phase 1 in virt-handler already set up) supplies the target tap (``managed="no"``: libvirt opens it,
never creates it), the MAC and the MTU as facts of the pod (:class:`PodTap`), which the domain pipeline
fills in, and the DHCP server for the VM is started. The network library is imported only for VMIs on
the pod network: it brings the typed API and pyroute2, which the long-lived launcher otherwise does
without.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from kubevirt.virt_launcher.virtwrap.manager import Converter
from kubevirt.virt_launcher.virtwrap.node import NodeFacts, PodTap
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts
from kubevirt_api.view import VMIView

if TYPE_CHECKING:
    from kubevirt.network.launcher import LauncherNetwork

POD_BINDINGS = ("masquerade", "bridge")


def on_pod_network(vmi: VMIView) -> bool:
    """Whether an interface of ``vmi`` is bound to the pod network (masquerade or bridge)."""
    return any(any(interface.has(b) for b in POD_BINDINGS) for interface in vmi.interfaces())


class PodNetworkConverter:
    """Phase 2 for VMIs on the pod network, then the converter."""

    def __init__(self, inner: Converter) -> None:
        self._inner = inner
        self._network: LauncherNetwork | None = None

    def __call__(self, vmi: VMIFacts, options: Any, node: NodeFacts) -> str:
        if on_pod_network(vmi.view):
            node = dataclasses.replace(node, pod_taps=self._prepare(vmi.view))
        return self._inner(vmi, options, node)

    def _prepare(self, vmi: VMIView) -> tuple[PodTap, ...]:
        from kubevirt.network.errors import NetworkError
        from kubevirt.network.launcher import LauncherNetwork

        if self._network is None:
            self._network = LauncherNetwork()
        try:
            taps = self._network.prepare(vmi.data)
        except (NetworkError, OSError) as err:
            raise ValueError(f"pod network: {err}") from err
        return tuple(PodTap(tap.name, tap.target, tap.mac, tap.mtu) for tap in taps)

    def stop(self) -> None:
        """Stops the DHCP servers (the launcher is exiting)."""
        if self._network is not None:
            self._network.stop()
