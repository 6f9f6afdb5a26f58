"""The ``VirtualMachineOptions`` virt-handler sends with SyncVirtualMachine (KubeVirt's
``virtualMachineOptions``): what the handler knows from the cluster configuration and the VMI's status,
so the launcher builds the domain from it instead of guessing.

The NUMA topology KubeVirt adds from libvirt's capabilities is left out: this handler does not read
those capabilities, and this launcher builds no NUMA placement from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON, View, VMIView

EXPAND_DISKS_GATE = "ExpandDisks"
_TAP, _MANAGED_TAP = "tap", "managedTap"


def preallocated_volumes(vmi: VMIView) -> list[str]:
    """The volumes whose claim was preallocated (the launcher does not let the guest discard on them)."""
    return [
        volume.string("name")
        for volume in vmi.volume_statuses()
        if volume.object("persistentVolumeClaimInfo").boolean("preallocated")
    ]


def domain_attachment_by_interface(interfaces: Iterable[View], bindings: Mapping[str, str]) -> dict[str, str]:
    """Interface name -> how the domain attaches it: ``tap`` for masquerade and bridge (and the removed
    macvtap), a binding plugin's configured type otherwise (``managedTap`` is a tap to the domain)."""
    found = {}
    for iface in interfaces:
        name = iface.string("name")
        if any(iface.has(key) for key in ("masquerade", "bridge", "macvtap")):
            found[name] = _TAP
        elif (binding := iface.optional_object("binding")) is not None:
            attachment = bindings.get(binding.string("name"))
            if attachment:
                found[name] = _TAP if attachment == _MANAGED_TAP else attachment
    return found


def virtual_machine_options(vmi: JSON, config: ClusterConfig) -> cmd_pb2.VirtualMachineOptions:
    domain = config.domain
    smbios = domain.smbios
    expand = config.enabled(EXPAND_DISKS_GATE)
    view = VMIView(vmi)
    return cmd_pb2.VirtualMachineOptions(
        VirtualMachineSMBios=cmd_pb2.SMBios(
            manufacturer=smbios.manufacturer,
            product=smbios.product,
            version=smbios.version,
            sku=smbios.sku,
            family=smbios.family,
        ),
        MemBalloonStatsPeriod=domain.mem_balloon_stats_period,
        PreallocatedVolumes=preallocated_volumes(view),
        # The deprecated top-level field too, for launchers that still read it.
        ExpandDisksEnabled=expand,
        clusterConfig=cmd_pb2.ClusterConfig(
            ExpandDisksEnabled=expand,
            FreePageReportingDisabled=domain.free_page_reporting_disabled,
            BochsDisplayForEFIGuests=not domain.vga_display_for_efi_guests,
            SerialConsoleLogDisabled=config.launcher.serial_console_log_disabled,
        ),
        interfaceDomainAttachment=domain_attachment_by_interface(
            view.interfaces(), domain.binding_attachments
        ),
    )
