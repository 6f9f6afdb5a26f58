"""The KubeVirt CR's settings virt-handler passes each launcher in ``VirtualMachineOptions``, with
KubeVirt's defaults: part of :class:`~kubevirt.virt_config.ClusterConfig`, read with the rest of the CR.

As in :mod:`kubevirt.virt_config.launcher`, an unusable value falls back to KubeVirt's default instead of
rejecting the configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
    def from_configuration(cls, smbios: Mapping[str, Any]) -> SMBiosSettings:
        default = cls()

        def pick(name: str) -> str:
            value = smbios.get(name)
            return value if isinstance(value, str) and value else str(getattr(default, name))

        return cls(
            manufacturer=pick("manufacturer"),
            product=pick("product"),
            version=pick("version"),
            sku=pick("sku"),
            family=pick("family"),
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
    def from_kubevirt(cls, kubevirt: Mapping[str, Any], configuration: Mapping[str, Any]) -> DomainSettings:
        period = configuration.get("memBalloonStatsPeriod")
        options = _mapping(configuration.get("virtualMachineOptions"))
        bindings = _mapping(_mapping(configuration.get("network")).get("binding"))
        annotations = _mapping(_mapping(kubevirt.get("metadata")).get("annotations"))
        return cls(
            smbios=SMBiosSettings.from_configuration(_mapping(configuration.get("smbios"))),
            mem_balloon_stats_period=period
            if isinstance(period, int) and not isinstance(period, bool) and 0 <= period <= _UINT32_MAX
            else DEFAULT_MEM_BALLOON_STATS_PERIOD,
            free_page_reporting_disabled=options.get("disableFreePageReporting") is not None,
            vga_display_for_efi_guests=VGA_DISPLAY_FOR_EFI_GUESTS_ANNOTATION in annotations,
            binding_attachments={
                str(name): attachment
                for name, plugin in bindings.items()
                if isinstance(attachment := _mapping(plugin).get("domainAttachmentType"), str) and attachment
            },
        )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
