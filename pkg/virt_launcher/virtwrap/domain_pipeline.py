"""virt-launcher's domain pipeline for SyncVirtualMachine: VMI JSON in, the node's domain XML out.

Each step happens once: the VMI is parsed into the API types (:func:`parse_vmi`), the converter's
configurators and virt-launcher's metadata configurator build the ``api.Domain`` (:func:`build_domain`),
the node steps fit that model to the node (:mod:`.node`), and the model is serialised
(:func:`domain_xml`). virt-handler's per-sync facts (``VirtualMachineOptions``) and the node's
(:class:`NodeFacts`) become the converter's :class:`ConverterContext` in :func:`converter_context`.
"""

from __future__ import annotations

import json
from typing import Any

from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.virt_launcher.virtwrap import api
from kubevirt.virt_launcher.virtwrap.converter import (
    CONFIGURATORS,
    SMBIOS,
    ConverterContext,
    EFIConfiguration,
    convert_vmi_to_domain,
)
from kubevirt.virt_launcher.virtwrap.converter.conversion import Configurator
from kubevirt.virt_launcher.virtwrap.converter.metadata import configure_metadata
from kubevirt.virt_launcher.virtwrap.node import NodeFacts, fit_to_node, probe_devices
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts
from kubevirt_api.core.v1 import VirtualMachineInstance

LAUNCHER_CONFIGURATORS: tuple[Configurator, ...] = (*CONFIGURATORS, configure_metadata)


def parse_vmi(vmi_json: bytes | str) -> VirtualMachineInstance:
    """The request's VMI in the API types. Raises ``ValueError`` naming the field at fault."""
    try:
        document = json.loads(vmi_json)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"vmi: malformed VMI JSON: {err}") from None
    if not isinstance(document, dict):
        raise ValueError("vmi: the VMI JSON must be an object")
    return VirtualMachineInstance.from_dict(document)


def converter_context(options: cmd_pb2.VirtualMachineOptions | None, node: NodeFacts) -> ConverterContext:
    """What the converter needs besides the VMI: the node's facts and virt-handler's options."""
    settings: dict[str, Any] = {"domain_type": "qemu" if node.emulation else "kvm"}
    if node.block_volumes:
        settings["block_volumes"] = node.block_volumes
    if node.ovmf_dir:
        settings["efi"] = EFIConfiguration(
            code=f"{node.ovmf_dir}/OVMF_CODE.fd",
            vars=f"{node.ovmf_dir}/OVMF_VARS.fd",
            secure_boot_code=f"{node.ovmf_dir}/OVMF_CODE.secboot.fd",
            secure_boot_vars=f"{node.ovmf_dir}/OVMF_VARS.secboot.fd",
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
        settings["interface_domain_attachment"] = dict(options.interfaceDomainAttachment)
    if options.PreallocatedVolumes:
        settings["discard_ignore"] = frozenset(options.PreallocatedVolumes)
    if options.HasField("clusterConfig"):
        if options.clusterConfig.FreePageReportingDisabled:
            settings["free_page_reporting"] = False
        if options.clusterConfig.SerialConsoleLogDisabled:
            settings["serial_console_log"] = False
        # Only a handler that sends the cluster's settings says which display EFI guests get.
        settings["bochs_for_efi_guests"] = options.clusterConfig.BochsDisplayForEFIGuests
    return ConverterContext(**settings)


def build_domain(
    vmi: VirtualMachineInstance, options: cmd_pb2.VirtualMachineOptions | None, node: NodeFacts
) -> api.Domain:
    """The domain model for ``vmi`` on this node: converted, given KubeVirt's metadata, fitted."""
    domain = convert_vmi_to_domain(
        vmi, converter_context(options, node), configurators=LAUNCHER_CONFIGURATORS
    )
    fit_to_node(domain, probe_devices(domain, node))
    return domain


def domain_xml(vmi_json: bytes | str, options: cmd_pb2.VirtualMachineOptions | None, node: NodeFacts) -> str:
    """The whole pipeline; raises ``ValueError`` (a ``ConversionError`` or a parse error) naming the
    VMI field at fault."""
    return build_domain(parse_vmi(vmi_json), options, node).to_xml()


def convert_in_process(vmi: VMIFacts, options: cmd_pb2.VirtualMachineOptions | None, node: NodeFacts) -> str:
    """The pipeline as the domain manager's converter, in this process (the launcher itself hands the
    conversion to its worker process)."""
    return domain_xml(vmi.raw, options, node)
