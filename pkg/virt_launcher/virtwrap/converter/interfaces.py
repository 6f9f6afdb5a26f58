"""``<interface>`` devices for the NICs libvirt attaches through a tap device.

Only the parts that come from the VMI are filled in here; the MAC address, tap name and MTU come from
the pod's network and are added by virt-launcher's network setup afterwards.
"""

from __future__ import annotations

from kubevirt_api.core.v1 import Interface

from .. import api
from .conversion import Conversion
from .disks import pci_address
from .errors import ConversionError

MAX_QUEUES = 256
TAP_ATTACHMENTS = frozenset({"tap", "managedTap"})


def _attachment(c: Conversion, iface: Interface) -> str | None:
    """``tap`` for NICs libvirt plugs into a tap device, ``""`` for the removed bindings (slirp,
    macvtap, passt: KubeVirt still writes them, typeless), ``None`` for NICs attached otherwise."""
    if iface.masquerade is not None or iface.bridge is not None:
        return "tap"
    if iface.binding is not None:
        attachment = c.context.interface_domain_attachment.get(iface.name, "")
        return "tap" if attachment in TAP_ATTACHMENTS else None
    if iface.sriov is not None:
        return None
    return ""


def configure_interfaces(c: Conversion) -> None:
    spec = c.vmi.spec
    networks = {network.name for network in spec.networks or []}
    multiqueue = bool(spec.domain.devices.network_interface_multiqueue)
    for index, iface in enumerate(spec.domain.devices.interfaces or []):
        if iface.state == "absent":
            continue  # being unplugged: neither the NIC nor its network is wanted any more
        field = f"spec.domain.devices.interfaces[{index}]"
        if iface.name not in networks:
            raise ConversionError(f"{field}.name", f"failed to find network {iface.name}")
        attachment = _attachment(c, iface)
        if attachment is None:
            continue
        out = api.Interface(type="ethernet" if attachment else "", alias=api.Alias.user_defined(iface.name))
        model = iface.model or "virtio"
        out.model = api.Model(type=c.virtio_model if model == "virtio" else model)
        if iface.pci_address:
            out.address = pci_address(iface.pci_address)
            if out.address is None:
                raise ConversionError(
                    f"{field}.pciAddress",
                    f"failed to configure interface {iface.name}: "
                    f"failed to parse pci address {iface.pci_address}",
                )
        if iface.state == "down":
            out.link = api.LinkState(state="down")
        if attachment and iface.boot_order is not None:
            out.boot = api.BootOrder(order=iface.boot_order)
        elif attachment:
            out.rom = api.Rom(enabled="no")  # no boot from this NIC: skip loading its option ROM
        if multiqueue and model == "virtio":
            out.driver = api.InterfaceDriver(name="vhost", queues=min(c.requested_vcpus, MAX_QUEUES))
        if iface.acpi_index is not None and iface.acpi_index > 0:
            out.acpi = api.ACPI(index=iface.acpi_index)
        c.domain.devices.interfaces.append(out)
