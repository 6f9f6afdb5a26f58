"""The KubeVirt CR's settings virt-handler passes each launcher in ``VirtualMachineOptions``, with
KubeVirt's defaults: part of :class:`~kubevirt.virt_config.ClusterConfig`, read with the rest of the CR.

As in :mod:`kubevirt.virt_config.launcher`, a value of the wrong type rejects the configuration and a
well-typed but unusable one (an empty string, a period out of range) falls back to KubeVirt's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubevirt_api.view import View

DEFAULT_MEM_BALLOON_STATS_PERIOD = 10
# On the KubeVirt CR itself (not its configuration): x86 EFI guests get VGA instead of Bochs.
VGA_DISPLAY_FOR_EFI_GUESTS_ANNOTATION = "kubevirt.io/vga-display-efi-x86"
_UINT32_MAX = 2**32 - 1


@dataclass(frozen=True)
class SMBiosSettings:
    """``spec.configuration.smbios``; each field the CR leaves empty keeps KubeVirt's default."""

    manufacturer: str = "KubeVirt"
    product: str = "None"
    version: str = ""
    sku: str = ""
    family: str = "KubeVirt"

    @classmethod
    def from_configuration(cls, smbios: View) -> SMBiosSettings:
        default = cls()
        return cls(
            manufacturer=smbios.string("manufacturer", default=default.manufacturer),
            product=smbios.string("product", default=default.product),
            version=smbios.string("version", default=default.version),
            sku=smbios.string("sku", default=default.sku),
            family=smbios.string("family", default=default.family),
        )


@dataclass(frozen=True, kw_only=True)
class DomainSettings:
    """What every launcher's domain is built with besides its VMI."""

    smbios: SMBiosSettings = field(default_factory=SMBiosSettings)
    mem_balloon_stats_period: int = DEFAULT_MEM_BALLOON_STATS_PERIOD
    # virtualMachineOptions.disableFreePageReporting: set at all, whatever its value.
    free_page_reporting_disabled: bool = False
    vga_display_for_efi_guests: bool = False
    # network.binding: each binding plugin with a domainAttachmentType, to that type.
    binding_attachments: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_kubevirt(cls, kubevirt: View, configuration: View) -> DomainSettings:
        """The settings of the KubeVirt CR ``kubevirt`` and its ``spec.configuration``."""
        period = configuration.integer("memBalloonStatsPeriod", default=DEFAULT_MEM_BALLOON_STATS_PERIOD)
        bindings = configuration.object("network").object("binding")
        attachments = {name: bindings.object(name).string("domainAttachmentType") for name in bindings.data}
        return cls(
            smbios=SMBiosSettings.from_configuration(configuration.object("smbios")),
            # A uint32 in KubeVirt: a value out of its range keeps the default.
            mem_balloon_stats_period=period
            if 0 <= period <= _UINT32_MAX
            else DEFAULT_MEM_BALLOON_STATS_PERIOD,
            free_page_reporting_disabled=configuration.object("virtualMachineOptions").optional_object(
                "disableFreePageReporting"
            )
            is not None,
            vga_display_for_efi_guests=VGA_DISPLAY_FOR_EFI_GUESTS_ANNOTATION
            in kubevirt.object("metadata").string_map("annotations"),
            binding_attachments={name: kind for name, kind in attachments.items() if kind},
        )
