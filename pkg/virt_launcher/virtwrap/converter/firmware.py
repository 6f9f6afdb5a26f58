"""``<os>``: machine type, SMBIOS mode, BIOS/EFI firmware, boot menu, direct kernel boot."""

from __future__ import annotations

import posixpath

from ..api import schema as api
from .conversion import Conversion

ARCH_NAMES = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x"}
NON_ROOT_NVRAM_DIR = "/var/run/kubevirt-private/libvirt/qemu/nvram"
ROOT_NVRAM_DIR = "/var/lib/libvirt/qemu/nvram"
KERNEL_BOOT_DIR = "/var/run/kubevirt/container-disks/kernel-boot"
BOOT_MENU_TIMEOUT_MS = 10000


def configure_os(c: Conversion) -> None:
    spec = c.vmi.spec
    machine = spec.domain.machine.type if spec.domain.machine else None
    os = c.domain.os
    os.type = api.OSType(
        arch=ARCH_NAMES.get(c.context.architecture, c.context.architecture), machine=machine or None, os="hvm"
    )
    if c.context.architecture != "s390x":
        os.smbios = api.SMBios(mode="sysinfo")
    if spec.start_strategy == "Paused":
        os.bootmenu = api.BootMenu(enable="yes", timeout=BOOT_MENU_TIMEOUT_MS)
    firmware = spec.domain.firmware
    if firmware is None:
        return
    bootloader = firmware.bootloader
    if bootloader is not None and bootloader.bios is not None and bootloader.bios.use_serial:
        os.bios = api.BIOS(useserial="yes")
    if bootloader is not None and bootloader.efi is not None:
        secure = bootloader.efi.secure_boot is None or bootloader.efi.secure_boot
        code, variables = c.context.efi.paths(secure_boot=secure)
        os.loader = api.Loader(readonly="yes", secure="yes" if secure else "no", type="pflash", path=code)
        nvram_dir = ROOT_NVRAM_DIR if c.is_root else NON_ROOT_NVRAM_DIR
        os.nvram = api.NVRam(template=variables, path=f"{nvram_dir}/{c.vmi_name}_VARS.fd")
    kernel_boot = firmware.kernel_boot
    if kernel_boot is not None and kernel_boot.container is not None:
        container = kernel_boot.container
        if container.kernel_path:
            os.kernel = f"{KERNEL_BOOT_DIR}/{posixpath.basename(container.kernel_path)}"
        if container.initrd_path:
            os.initrd = f"{KERNEL_BOOT_DIR}/{posixpath.basename(container.initrd_path)}"
        if kernel_boot.kernel_args:
            os.cmdline = kernel_boot.kernel_args


def configure_sysinfo(c: Conversion) -> None:
    """SMBIOS system table (firmware UUID and serial, node SMBIOS values) and the chassis table."""
    firmware = c.vmi.spec.domain.firmware
    system = [api.Entry(name="uuid", value=(firmware.uuid if firmware else None) or "")]
    if firmware is not None and firmware.serial:
        system.append(api.Entry(name="serial", value=firmware.serial))
    smbios = c.context.smbios
    system += [
        api.Entry(name="manufacturer", value=smbios.manufacturer),
        api.Entry(name="family", value=smbios.family),
        api.Entry(name="product", value=smbios.product),
        api.Entry(name="sku", value=smbios.sku),
        api.Entry(name="version", value=smbios.version),
    ]
    sysinfo = api.SysInfo(type="smbios", system=system)
    chassis = c.vmi.spec.domain.chassis
    if chassis is not None:
        for name in ("manufacturer", "version", "serial", "asset", "sku"):
            value = getattr(chassis, name)
            if value:
                sysinfo.chassis.append(api.Entry(name=name, value=value))
    c.domain.sysinfo = sysinfo
