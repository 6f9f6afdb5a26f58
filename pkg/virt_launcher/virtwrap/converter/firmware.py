"""``<os>``: machine type, SMBIOS mode, BIOS/EFI firmware, boot menu, direct kernel boot."""

from __future__ import annotations

from kubevirt import pod_paths
from kubevirt_api.core.v1 import ACPI

from .. import api
from .conversion import Conversion, join_base
from .errors import ConversionError

ARCH_NAMES = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x"}
DEFAULT_MACHINES = {"amd64": "q35", "arm64": "virt", "ppc64le": "pseries", "s390x": "s390-ccw-virtio"}
ROOT_NVRAM_DIR = "/var/lib/libvirt/qemu/nvram"
BOOT_MENU_TIMEOUT_MS = 10000


def configure_os(c: Conversion) -> None:
    spec = c.vmi.spec
    machine = spec.domain.machine.type if spec.domain.machine else None
    os = c.domain.os
    os.type = api.OSType(
        arch=ARCH_NAMES.get(c.context.architecture, c.context.architecture),
        # KubeVirt's domain defaulter names the architecture's default machine when the VMI has none
        machine=machine or DEFAULT_MACHINES.get(c.context.architecture),
        os="hvm",
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
        nvram_dir = ROOT_NVRAM_DIR if c.is_root else pod_paths.NON_ROOT_NVRAM_DIR
        os.nvram = api.NVRam(template=variables, path=f"{nvram_dir}/{c.vmi_name}_VARS.fd")
    kernel_boot = firmware.kernel_boot
    if kernel_boot is not None:
        container = kernel_boot.container
        if container is not None and container.image:
            if container.kernel_path:
                os.kernel = join_base(pod_paths.KERNEL_BOOT_DIR, container.kernel_path)
            if container.initrd_path:
                os.initrd = join_base(pod_paths.KERNEL_BOOT_DIR, container.initrd_path)
        os.cmdline = kernel_boot.kernel_args or None
    if firmware.acpi is not None:
        os.acpi = _acpi_tables(c, firmware.acpi)


def _acpi_tables(c: Conversion, acpi: ACPI) -> api.OSACPI:
    """ACPI tables (SLIC, MSDM) the guest gets from secret volumes."""
    field = "spec.domain.firmware.acpi"
    if not acpi.slic_name_ref and not acpi.msdm_name_ref:
        raise ConversionError(field, "No ACPI tables were set. Expecting at least one.")
    tables = api.OSACPI()
    for table, volume_name in (("slic", acpi.slic_name_ref), ("msdm", acpi.msdm_name_ref)):
        if not volume_name:
            continue
        volume = next((v for v in c.vmi.spec.volumes or [] if v.name == volume_name), None)
        if volume is None:
            raise ConversionError(field, f"Firmware's volume for {table} was not found")
        if volume.secret is None:
            raise ConversionError(field, f"Firmware's volume type is unsupported for {table}")
        tables.tables.append(
            api.ACPITable(type=table, path=f"{pod_paths.SECRET_SOURCE_DIR}/{volume_name}/{table}.bin")
        )
    return tables


def configure_sysinfo(c: Conversion) -> None:
    """SMBIOS system table (firmware UUID and serial, node SMBIOS values) and the chassis table."""
    firmware = c.vmi.spec.domain.firmware
    system = []
    if firmware is not None:  # the defaults always give one, with the UUID
        system.append(api.Entry(name="uuid", value=firmware.uuid or ""))
        if firmware.serial:
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
        sysinfo.chassis = [
            api.Entry(name=name, value=getattr(chassis, name) or "")
            for name in ("manufacturer", "version", "serial", "asset", "sku")
        ]
    c.domain.sysinfo = sysinfo
