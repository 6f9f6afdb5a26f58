"""Everything the converter needs that is not in the VMI: facts about the node, the cluster and the pod."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubevirt.virt_config import ClusterConfig

DEFAULT_OVMF_DIR = "/usr/share/OVMF"


@dataclass(frozen=True, slots=True)
class EFIConfiguration:
    """Firmware images for EFI boot, with and without SecureBoot."""

    code: str = f"{DEFAULT_OVMF_DIR}/OVMF_CODE.fd"
    vars: str = f"{DEFAULT_OVMF_DIR}/OVMF_VARS.fd"
    secure_boot_code: str = f"{DEFAULT_OVMF_DIR}/OVMF_CODE.secboot.fd"
    secure_boot_vars: str = f"{DEFAULT_OVMF_DIR}/OVMF_VARS.secboot.fd"

    def paths(self, *, secure_boot: bool) -> tuple[str, str]:
        """The (code, vars template) pair for the requested boot mode."""
        if secure_boot:
            return self.secure_boot_code, self.secure_boot_vars
        return self.code, self.vars


@dataclass(frozen=True, slots=True)
class SMBIOS:
    """The SMBIOS system values the node is configured with (KubeVirt's cluster config)."""

    manufacturer: str = "KubeVirt"
    family: str = "KubeVirt"
    product: str = "None"
    sku: str = ""
    version: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConverterContext:
    """Inputs of one conversion besides the (already defaulted) VMI.

    ``domain_type`` is ``kvm`` on a node with usable hardware virtualisation and ``qemu`` (TCG) where
    emulation is allowed instead. ``block_volumes`` names the volumes whose PVC or DataVolume is in
    block mode (for a hotplugged one: whose device node virt-handler made in the pod's hotplug
    directory). ``container_disk_formats`` maps a containerDisk volume to its image format (``qcow2``
    or ``raw``); ``None`` means every image is qcow2. ``free_page_reporting``,
    ``use_virtio_transitional`` and ``serial_console_log`` are taken from the VMI when ``None``.
    ``cluster`` is the cluster configuration (feature gates and the like) the VMI was admitted under.
    ``cpu_set`` lists the host CPUs the pod may pin to (dedicated CPU placement).
    ``interface_domain_attachment`` maps an interface to how the domain attaches it (virt-handler's
    ``interfaceDomainAttachment``): a binding plugin's NIC is a tap only where it says ``tap``.
    ``discard_ignore`` names the preallocated volumes, whose disks get no ``discard``.
    ``bochs_for_efi_guests`` is False where the cluster wants VGA for EFI guests.
    """

    architecture: str = "amd64"
    domain_type: str = "kvm"
    block_volumes: frozenset[str] = frozenset()
    container_disk_formats: Mapping[str, str] | None = None
    efi: EFIConfiguration = field(default_factory=EFIConfiguration)
    smbios: SMBIOS = field(default_factory=SMBIOS)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    free_page_reporting: bool | None = None
    use_virtio_transitional: bool | None = None
    serial_console_log: bool | None = None
    cpu_set: tuple[int, ...] = ()
    memballoon_stats_period: int = 10
    interface_domain_attachment: Mapping[str, str] = field(default_factory=dict)
    discard_ignore: frozenset[str] = frozenset()
    bochs_for_efi_guests: bool = True
