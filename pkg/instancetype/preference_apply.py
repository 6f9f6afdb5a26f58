"""A preference's defaults (``preferred*``) applied to a VMI spec wherever the spec leaves them unset.

Preferences never conflict: what the VM sets wins. The spec is changed in place.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel

from kubevirt_api.core.v1.domain import (
    BIOS,
    CPU,
    EFI,
    Bootloader,
    Clock,
    ClockOffset,
    DiskTarget,
    DomainSpec,
    FeatureHyperv,
    Features,
    Firmware,
    Interface,
    Machine,
)
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceSpec
from kubevirt_api.instancetype.v1beta1 import DevicePreferences, VirtualMachinePreferenceSpec
from kubevirt_api.k8s import meta_v1

__all__ = ["apply_device_preferences", "apply_preference"]

_VIRTIO: Final = "virtio"
# Device switches a preference may preset: (preference attribute, Devices attribute).
_DEVICE_SWITCHES: Final = (
    ("preferred_autoattach_graphics_device", "autoattach_graphics_device"),
    ("preferred_autoattach_mem_balloon", "autoattach_mem_balloon"),
    ("preferred_autoattach_pod_interface", "autoattach_pod_interface"),
    ("preferred_autoattach_serial_console", "autoattach_serial_console"),
    ("preferred_use_virtio_transitional", "use_virtio_transitional"),
    ("preferred_block_multi_queue", "block_multi_queue"),
    ("preferred_network_interface_multi_queue", "network_interface_multiqueue"),
    ("preferred_autoattach_input_device", "autoattach_input_device"),
)
_FEATURES: Final = (
    ("preferred_apic", "apic"),
    ("preferred_kvm", "kvm"),
    ("preferred_pvspinlock", "pvspinlock"),
    ("preferred_smm", "smm"),
)
_HYPERV_FEATURES: Final = (
    "evmcs",
    "frequencies",
    "ipi",
    "reenlightenment",
    "relaxed",
    "reset",
    "runtime",
    "spinlocks",
    "synic",
    "synictimer",
    "tlbflush",
    "vapic",
    "vpindex",
    "vendorid",
)


def apply_preference(
    preference: VirtualMachinePreferenceSpec, spec: VirtualMachineInstanceSpec, metadata: meta_v1.ObjectMeta
) -> None:
    _cpu_features(preference, spec.domain)
    apply_device_preferences(preference, spec)
    _features(preference, spec.domain)
    _firmware(preference, spec.domain)
    _machine(preference, spec.domain)
    _clock(preference, spec.domain)
    if not spec.subdomain and preference.preferred_subdomain is not None:
        spec.subdomain = preference.preferred_subdomain
    if (
        preference.preferred_termination_grace_period_seconds is not None
        and spec.termination_grace_period_seconds is None
    ):
        spec.termination_grace_period_seconds = preference.preferred_termination_grace_period_seconds
    _annotations(preference.annotations, metadata)


def _cpu_features(preference: VirtualMachinePreferenceSpec, domain: DomainSpec) -> None:
    if preference.cpu is None or not preference.cpu.preferred_cpu_features:
        return
    cpu = domain.cpu = domain.cpu or CPU()
    features = list(cpu.features or [])
    present = {feature.name for feature in features}
    features += [
        f.model_copy(deep=True) for f in preference.cpu.preferred_cpu_features if f.name not in present
    ]
    cpu.features = features


def apply_device_preferences(
    preference: VirtualMachinePreferenceSpec, spec: VirtualMachineInstanceSpec
) -> None:
    """The device part alone: virt-controller re-applies it before adding default devices to a VMI."""
    wanted = preference.devices
    if wanted is None:
        return
    devices = spec.domain.devices
    _fill_unset(devices, wanted, _DEVICE_SWITCHES)
    if wanted.preferred_disable_hotplug is not None:
        devices.disable_hotplug = wanted.preferred_disable_hotplug
    if wanted.preferred_sound_model and devices.sound is not None and not devices.sound.model:
        devices.sound.model = wanted.preferred_sound_model
    _fill_unset(devices, wanted, (("preferred_rng", "rng"), ("preferred_tpm", "tpm")))
    _disks(wanted, spec)
    _interfaces(wanted, spec)
    for device in spec.domain.devices.inputs or []:
        if wanted.preferred_input_bus and not device.bus:
            device.bus = wanted.preferred_input_bus
        if wanted.preferred_input_type and not device.type:
            device.type = wanted.preferred_input_type
    if wanted.preferred_panic_device_model is not None:
        for panic in spec.domain.devices.panic_devices or []:
            if panic.model is None:
                panic.model = wanted.preferred_panic_device_model


def _disks(wanted: DevicePreferences, spec: VirtualMachineInstanceSpec) -> None:
    for disk in spec.domain.devices.disks or []:
        if disk.disk is None and disk.cdrom is None and disk.lun is None:
            disk.disk = DiskTarget()
        if disk.disk is not None:
            if wanted.preferred_disk_bus and not disk.disk.bus:
                disk.disk.bus = wanted.preferred_disk_bus
            if wanted.preferred_disk_block_size is not None and disk.block_size is None:
                disk.block_size = wanted.preferred_disk_block_size.model_copy(deep=True)
            if wanted.preferred_disk_cache and not disk.cache:
                disk.cache = wanted.preferred_disk_cache
            if wanted.preferred_disk_io and not disk.io:
                disk.io = wanted.preferred_disk_io
            if (
                wanted.preferred_disk_dedicated_io_thread is not None
                and disk.dedicated_io_thread is None
                and disk.disk.bus == _VIRTIO
            ):
                disk.dedicated_io_thread = wanted.preferred_disk_dedicated_io_thread
        elif disk.cdrom is not None:
            if wanted.preferred_cdrom_bus and not disk.cdrom.bus:
                disk.cdrom.bus = wanted.preferred_cdrom_bus
        elif disk.lun is not None and wanted.preferred_lun_bus and not disk.lun.bus:
            disk.lun.bus = wanted.preferred_lun_bus


def _binding_unset(interface: Interface) -> bool:
    methods = (
        interface.bridge,
        interface.slirp,
        interface.masquerade,
        interface.sriov,
        interface.macvtap,
        interface.passt,
    )
    return all(method is None for method in methods) and interface.binding is None


def _on_pod_network(name: str, spec: VirtualMachineInstanceSpec) -> bool:
    for network in spec.networks or []:
        if network.name == name:
            return network.pod is not None
    return False


def _interfaces(wanted: DevicePreferences, spec: VirtualMachineInstanceSpec) -> None:
    for interface in spec.domain.devices.interfaces or []:
        if wanted.preferred_interface_model and not interface.model:
            interface.model = wanted.preferred_interface_model
        if (
            wanted.preferred_interface_masquerade is not None
            and _binding_unset(interface)
            and _on_pod_network(interface.name, spec)
        ):
            interface.masquerade = wanted.preferred_interface_masquerade.model_copy(deep=True)


def _fill_unset(target: object, source: object, pairs: tuple[tuple[str, str], ...]) -> None:
    """For each ``(preferred, actual)`` pair: the preferred value where the target has none."""
    for preferred, actual in pairs:
        value = getattr(source, preferred)
        if value is not None and getattr(target, actual) is None:
            setattr(target, actual, value.model_copy(deep=True) if isinstance(value, BaseModel) else value)


def _features(preference: VirtualMachinePreferenceSpec, domain: DomainSpec) -> None:
    wanted = preference.features
    if wanted is None:
        return
    features = domain.features = domain.features or Features()
    # ACPI is the one feature the preference overrides even when the VM sets it.
    if wanted.preferred_acpi is not None:
        features.acpi = wanted.preferred_acpi.model_copy(deep=True)
    if wanted.preferred_hyperv is not None:
        hyperv = features.hyperv = features.hyperv or FeatureHyperv()
        _fill_unset(hyperv, wanted.preferred_hyperv, tuple((name, name) for name in _HYPERV_FEATURES))
    _fill_unset(features, wanted, _FEATURES)


def _firmware(preference: VirtualMachinePreferenceSpec, domain: DomainSpec) -> None:
    wanted = preference.firmware
    if wanted is None:
        return
    firmware = domain.firmware = domain.firmware or Firmware()
    boot = firmware.bootloader = firmware.bootloader or Bootloader()
    if wanted.preferred_use_bios and boot.bios is None and boot.efi is None:
        boot.bios = BIOS()
    if (
        wanted.preferred_use_bios_serial is not None
        and boot.bios is not None
        and boot.bios.use_serial is None
    ):
        boot.bios.use_serial = wanted.preferred_use_bios_serial
    if boot.efi is None and boot.bios is None and wanted.preferred_efi is not None:
        boot.efi = wanted.preferred_efi.model_copy(deep=True)
        return
    # The deprecated EFI switches only act when preferredEfi did not.
    if wanted.preferred_use_efi and boot.efi is None and boot.bios is None:
        boot.efi = EFI()
    if wanted.preferred_use_secure_boot is not None and boot.efi is not None and boot.efi.secure_boot is None:
        boot.efi.secure_boot = wanted.preferred_use_secure_boot


def _machine(preference: VirtualMachinePreferenceSpec, domain: DomainSpec) -> None:
    if preference.machine is None or not preference.machine.preferred_machine_type:
        return
    machine = domain.machine = domain.machine or Machine()
    if not machine.type:
        machine.type = preference.machine.preferred_machine_type


def _clock(preference: VirtualMachinePreferenceSpec, domain: DomainSpec) -> None:
    wanted = preference.clock
    if wanted is None:
        return
    clock = domain.clock = domain.clock or Clock()
    if wanted.preferred_clock_offset is not None and clock.utc is None and clock.timezone is None:
        offset: ClockOffset = wanted.preferred_clock_offset.model_copy(deep=True)
        clock.utc, clock.timezone = offset.utc, offset.timezone
    if wanted.preferred_timer is not None and clock.timer is None:
        clock.timer = wanted.preferred_timer.model_copy(deep=True)


def _annotations(wanted: dict[str, str] | None, metadata: meta_v1.ObjectMeta) -> None:
    if metadata.annotations is None:
        metadata.annotations = {}
    for key, value in (wanted or {}).items():
        metadata.annotations.setdefault(key, value)
