"""``<os>``: the machine type, firmware (BIOS or EFI loader and NVRAM), kernel boot, SMBIOS mode."""

from __future__ import annotations

from .xmlmodel import XMLElement, attr, child, children, element, text, text_child


@element("type")
class OSType(XMLElement):
    arch: str | None = attr()
    machine: str | None = attr()
    os: str | None = text(go="OS")


@element("table")
class ACPITable(XMLElement):
    type: str | None = attr()
    path: str | None = text()


@element("acpi")
class OSACPI(XMLElement):
    tables: list[ACPITable] = children(ACPITable, go="Table")


@element("smbios")
class SMBios(XMLElement):
    mode: str | None = attr()


@element("boot")
class Boot(XMLElement):
    dev: str | None = attr()


@element("bootmenu")
class BootMenu(XMLElement):
    enable: str | None = attr()
    timeout: int | None = attr(as_type=int, go_pointer=True)


@element("bios")
class BIOS(XMLElement):
    useserial: str | None = attr(go="UseSerial")


@element("loader")
class Loader(XMLElement):
    readonly: str | None = attr(go="ReadOnly")
    secure: str | None = attr()
    type: str | None = attr()
    path: str | None = text()


@element("nvram")
class NVRam(XMLElement):
    template: str | None = attr()
    path: str | None = text(go="NVRam")


@element("os")
class OS(XMLElement):
    type: OSType = child(OSType, required=True)
    acpi: OSACPI | None = child(OSACPI, go="ACPI")
    smbios: SMBios | None = child(SMBios, go="SMBios")
    boot_order: list[Boot] = children(Boot)
    bootmenu: BootMenu | None = child(BootMenu, go="BootMenu")
    bios: BIOS | None = child(BIOS, go="BIOS")
    loader: Loader | None = child(Loader, go="BootLoader")
    nvram: NVRam | None = child(NVRam, go="NVRam")
    kernel: str | None = text_child()
    initrd: str | None = text_child()
    cmdline: str | None = text_child(go="KernelArgs")
