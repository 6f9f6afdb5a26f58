"""The converter as the domain manager calls it: VMI JSON + virt-handler's options -> domain XML.

virt-handler sends node and cluster facts with each sync (``VirtualMachineOptions``); they become the
converter's :class:`ConverterContext` together with what the launcher knows itself (emulation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.virt_launcher.virtwrap.converter import (
    SMBIOS,
    ConverterContext,
    EFIConfiguration,
    convert_vmi_to_domain,
)

if TYPE_CHECKING:  # the conversion worker imports this module and needs none of the manager
    from kubevirt.virt_launcher.virtwrap.manager import Converter
from kubevirt_api.core.v1 import VirtualMachineInstance


def context_from_options(
    options: cmd_pb2.VirtualMachineOptions | None, *, use_emulation: bool, ovmf_path: str = ""
) -> ConverterContext:
    settings: dict[str, Any] = {"domain_type": "qemu" if use_emulation else "kvm"}
    if ovmf_path:
        settings["efi"] = EFIConfiguration(
            code=f"{ovmf_path}/OVMF_CODE.fd",
            vars=f"{ovmf_path}/OVMF_VARS.fd",
            secure_boot_code=f"{ovmf_path}/OVMF_CODE.secboot.fd",
            secure_boot_vars=f"{ovmf_path}/OVMF_VARS.secboot.fd",
        )
    if options is None:
        return ConverterContext(**settings)
    if options.HasField("VirtualMachineSMBios"):
        smbios = options.VirtualMachineSMBios
        settings["smbios"] = SMBIOS(
            manufacturer=smbios.manufacturer,
            family=smbios.family,
            product=smbios.product,
            sku=smbios.sku,
            version=smbios.version,
        )
    if options.MemBalloonStatsPeriod:
        settings["memballoon_stats_period"] = options.MemBalloonStatsPeriod
    if options.DisksInfo:
        settings["container_disk_formats"] = {name: info.format for name, info in options.DisksInfo.items()}
    if options.interfaceDomainAttachment:
        settings["network_binding_plugins"] = dict(options.interfaceDomainAttachment)
    if options.HasField("clusterConfig"):
        if options.clusterConfig.FreePageReportingDisabled:
            settings["free_page_reporting"] = False
        if options.clusterConfig.SerialConsoleLogDisabled:
            settings["serial_console_log"] = False
    return ConverterContext(**settings)


def make_converter(*, use_emulation: bool, ovmf_path: str = "") -> Converter:
    def convert(vmi: Mapping[str, Any], options: Any) -> str:
        typed = VirtualMachineInstance.from_dict(vmi)
        context = context_from_options(options, use_emulation=use_emulation, ovmf_path=ovmf_path)
        return convert_vmi_to_domain(typed, context).to_xml()

    return convert
