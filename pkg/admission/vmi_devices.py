"""VMI spec rules about disks and other devices (part of ``ValidateVirtualMachineInstanceSpec``)."""

from __future__ import annotations

import re

from kubevirt.admission import causes as c
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.hardware import is_pci_address
from kubevirt.admission.json_fields import flag, has, integer, items, obj, opt_flag, opt_obj, text
from kubevirt.admission.k8s_names import dns1123_label
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON

MAX_STR_LEN = 256
MIN_CUSTOM_BLOCK_SIZE = 512
MAX_CUSTOM_BLOCK_SIZE = 2097152
_VALID_SERIAL = re.compile(r"^[A-Za-z0-9_.+-]+$")
_SUPPORTED_BUSES = "[virtio scsi sata usb]"
_CACHE_MODES = {"none", "writethrough", "writeback"}
_IO_MODES = {"native", "threads"}
_ERROR_POLICIES = {"stop", "ignore", "report", "enospace"}
_PANIC_MODELS = {"hyperv", "isa", "pvpanic"}
_TARGETS = ("disk", "lun", "cdrom")


def valid_serial(value: str) -> bool:
    return bool(_VALID_SERIAL.match(value))


def disk_target(disk: JSON) -> tuple[str, JSON]:
    """The disk's device kind (``disk``, ``lun``, ``cdrom``, or ``""``) and its settings."""
    for kind in _TARGETS:
        target = opt_obj(disk, kind)
        if target is not None:
            return kind, target
    return "", {}


def _disk(field: Path, i: int, disk: JSON, disks: list[JSON]) -> list[StatusCause]:
    out: list[StatusCause] = []
    name = text(disk, "name")
    # Unique names, against every earlier disk.
    for j in range(i):
        if text(disks[j], "name") == name:
            out.append(
                c.invalid(
                    field.index(i).child("name"),
                    f"{field.index(i)} and {field.index(j)} must not have the same Name.",
                )
            )
    if sum(1 for kind in _TARGETS if has(disk, kind)) > 1:
        out.append(c.invalid(field.index(i), f"{field.index(i)} can only have a single target type defined"))
    # KubeVirt builds this path from the devices path again (".disks.domain.devices.disks.disk[i]").
    disk_dev = opt_obj(disk, "disk")
    if disk_dev is not None and text(disk_dev, "pciAddress"):
        odd = field.child("domain", "devices", "disks", "disk").index(i)
        address = text(disk_dev, "pciAddress")
        if text(disk_dev, "bus") != "virtio":
            out.append(
                c.invalid(
                    odd.child("pciAddress"),
                    f"disk {odd.child('name')} - setting a PCI "
                    "address is only possible with bus type virtio.",
                )
            )
        if not is_pci_address(address):
            out.append(
                c.invalid(
                    odd.child("pciAddress"),
                    f"disk {odd.child('name')} has malformed PCI address ({address}).",
                )
            )
    boot_order = disk.get("bootOrder")
    if isinstance(boot_order, int) and not isinstance(boot_order, bool) and boot_order < 1:
        out.append(
            c.invalid(
                field.index(i).child("bootOrder"), f"{field.index(i)} must have a boot order > 0, if supplied"
            )
        )
    out.extend(_bus(field, i, disk))
    serial = text(disk, "serial")
    if serial and not valid_serial(serial):
        out.append(
            c.invalid(
                field.index(i).child("serial"),
                f"{field.index(i)} must be made up of the following characters [A-Za-z0-9_.+-], if specified",
            )
        )
    if serial and len(serial) > MAX_STR_LEN:
        out.append(
            c.invalid(
                field.index(i).child("serial"),
                f"{field.index(i)} must be less than or equal to {MAX_STR_LEN} in length, if specified",
            )
        )
    cache = text(disk, "cache")
    if cache and cache not in _CACHE_MODES:
        out.append(
            c.invalid(
                field.index(i).child("cache"), f"{field.index(i).child('cache')} has invalid value {cache}"
            )
        )
    io = text(disk, "io")
    if io and io not in _IO_MODES:
        out.append(
            c.not_supported(
                field.child("domain", "devices", "disks").index(i).child("io"),
                f"Disk IO mode for {field} is not supported. Supported modes are: native, threads.",
            )
        )
    if has(disk, "errorPolicy") and text(disk, "errorPolicy") not in _ERROR_POLICIES:
        policy_field = field.index(i).child("errorPolicy")
        out.append(c.invalid(policy_field, f'{policy_field} has invalid value "{text(disk, "errorPolicy")}"'))
    for message in dns1123_label(name):
        out.append(c.invalid(field.child("domain", "devices", "disks").index(i).child("name"), message))
    out.extend(_block_size(field, i, disk))
    return out


def _bus(field: Path, i: int, disk: JSON) -> list[StatusCause]:
    kind, target = disk_target(disk)
    bus = text(target, "bus")
    out: list[StatusCause] = []
    if bus:
        if bus == "ide":
            out.append(c.invalid(field.index(i).child(kind, "bus"), "IDE bus is not supported"))
        elif bus == "virtio":
            if kind == "cdrom":
                out.append(
                    c.invalid(
                        field.index(i).child("cdrom", "bus"), "Bus type virtio is invalid for CD-ROM device"
                    )
                )
        elif bus == "sata":
            if kind == "disk" and flag(target, "readonly"):
                out.append(
                    c.invalid(
                        field.index(i).child("disk", "bus"), "sata hard-disks do not support read-only."
                    )
                )
        elif bus not in ("scsi", "usb"):
            out.append(
                c.invalid(
                    field.index(i).child(kind, "bus"),
                    f"{field.index(i)} is set with an unrecognized "
                    f"bus {bus}, must be one of: {_SUPPORTED_BUSES}",
                )
            )
    if opt_flag(disk, "dedicatedIOThread") and bus != "virtio":
        out.append(
            c.not_supported(
                field.child("domain", "devices", "disks").index(i),
                f"IOThreads are not supported for disks on a {bus} bus",
            )
        )
    return out


def _block_size(field: Path, i: int, disk: JSON) -> list[StatusCause]:
    block = obj(disk, "blockSize")
    custom = opt_obj(block, "custom")
    if custom is None:
        return []
    match_volume = opt_obj(block, "matchVolume")
    if match_volume is not None and opt_flag(match_volume, "enabled") is not False:
        return [
            c.invalid(
                field.index(i).child("blockSize"),
                "Block size matching can't be enabled together with a custom value",
            )
        ]
    logical, physical = integer(custom, "logical"), integer(custom, "physical")
    custom_field = field.index(i).child("blockSize", "custom")
    if logical > physical:
        return [
            c.invalid(
                custom_field.child("logical"),
                f"Logical size {logical} must be the same or less than the physical size of {physical}",
            )
        ]
    out: list[StatusCause] = []
    for which, size in (("logical", logical), ("physical", physical)):
        where = custom_field.child(which)
        if size < MIN_CUSTOM_BLOCK_SIZE:
            message = (
                f"Provided size of {size} is less than the supported minimum size of {MIN_CUSTOM_BLOCK_SIZE}"
            )
            out.append(c.invalid(where, message))
        elif size > MAX_CUSTOM_BLOCK_SIZE:
            message = (
                f"Provided size of {size} is greater than the "
                f"supported maximum size of {MAX_CUSTOM_BLOCK_SIZE}"
            )
            out.append(c.invalid(where, message))
        elif size & (size - 1):
            out.append(c.invalid(where, f"Provided size of {size} is not a power of 2"))
    return out


def disks(field: Path, disk_list: list[JSON]) -> list[StatusCause]:
    """``validateDisks``; ``field`` is the disks path."""
    out: list[StatusCause] = []
    for i, disk in enumerate(disk_list):
        out.extend(_disk(field, i, disk, disk_list))
    return out


def boot_order(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    """Disks match volumes, LUN/downwardMetrics mapping, and unique boot orders across devices."""
    out: list[StatusCause] = []
    volumes = {text(v, "name"): v for v in items(spec, "volumes")}
    seen: set[int] = set()
    disks_field = field.child("domain", "devices", "disks")
    for i, disk in enumerate(items(obj(obj(spec, "domain"), "devices"), "disks")):
        name = text(disk, "name")
        volume = volumes.get(name)
        if volume is None:
            if not has(disk, "cdrom"):
                out.append(
                    c.invalid(
                        disks_field.index(i).child("name"),
                        f"{disks_field.index(i).child('Name')} '{name}' not found.",
                    )
                )
            elif not config.enabled("DeclarativeHotplugVolumes"):
                out.append(
                    c.invalid(
                        disks_field.index(i).child("name"),
                        "DeclarativeHotplugVolumes feature gate not "
                        "enabled, cannot define an empty CD-ROM disk",
                    )
                )
        if (
            has(disk, "lun")
            and volume is not None
            and not has(volume, "persistentVolumeClaim")
            and not has(volume, "dataVolume")
        ):
            lun = disks_field.index(i).child("lun")
            out.append(
                c.invalid(lun, f"{lun} can only be mapped to a DataVolume or PersistentVolumeClaim volume.")
            )
        if volume is not None and has(volume, "downwardMetrics"):
            disk_dev = opt_obj(disk, "disk")
            if disk_dev is None:
                where = disks_field.index(i).child("disk")
                out.append(
                    c.required(
                        where,
                        f"DownwardMetrics volume must be mapped to a disk, but disk is not set on {where}.",
                    )
                )
            elif text(disk_dev, "bus") not in ("", "virtio"):
                where = disks_field.index(i).child("disk", "bus")
                message = (
                    "DownwardMetrics volume must be mapped to virtio "
                    f"bus, but {where} is set to {text(disk_dev, 'bus')}"
                )
                out.append(c.invalid(where, message))
        order = disk.get("bootOrder")
        if isinstance(order, int) and not isinstance(order, bool):
            if order in seen:
                where = disks_field.index(i).child("bootOrder")
                out.append(c.invalid(where, f"Boot order for {where} already set for a different device."))
            seen.add(order)
    ifaces_field = field.child("domain", "devices", "interfaces")
    for i, iface in enumerate(items(obj(obj(spec, "domain"), "devices"), "interfaces")):
        order = iface.get("bootOrder")
        if not isinstance(order, int) or isinstance(order, bool):
            continue
        if order < 1:
            # KubeVirt prints the spec path with only the index here.
            out.append(
                c.invalid(
                    ifaces_field.index(i).child("bootOrder"),
                    f"{field.index(i)} must have a boot order > 0, if supplied",
                )
            )
        else:
            if order in seen:
                where = ifaces_field.index(i).child("bootOrder")
                out.append(c.invalid(where, f"Boot order for {where} already set for a different device."))
            seen.add(order)
    return out


def inputs(field: Path, devices: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    for i, device in enumerate(items(devices, "inputs")):
        where = field.child("domain", "devices", "inputs").index(i)
        if text(device, "bus") not in ("virtio", "usb", ""):
            out.append(c.invalid(where.child("bus"), "Input device can have only virtio or usb bus."))
        if text(device, "type") != "tablet":
            out.append(c.invalid(where.child("type"), "Input device can have only tablet type."))
    return out


def sound(field: Path, devices: JSON) -> list[StatusCause]:
    device = opt_obj(devices, "sound")
    if device is None:
        return []
    out: list[StatusCause] = []
    if text(device, "model") not in ("", "ich9", "ac97"):
        out.append(
            c.invalid(field.child("Sound"), "Sound device type is not supported. Options: 'ich9' or 'ac97'")
        )
    if not text(device, "name"):
        out.append(c.invalid(field.child("Sound"), "Sound device requires a name field."))
    return out


def gpus_ramfb(field: Path, devices: JSON) -> list[StatusCause]:
    count = 0
    for gpu in items(devices, "gpus"):
        display = opt_obj(obj(gpu, "virtualGPUOptions"), "display")
        if display is None or opt_flag(display, "enabled") is False:
            continue
        ramfb = opt_obj(display, "ramFB")
        if ramfb is None or opt_flag(ramfb, "enabled") is True:
            count += 1
    if count > 1:
        return [c.invalid(field.child("GPUs"), "configuring multiple displays with ramfb is not valid ")]
    return []


def host_devices(field: Path, devices: JSON, config: ClusterConfig) -> list[StatusCause]:
    if devices.get("hostDevices") is not None and not config.enabled("HostDevices"):
        return [
            c.invalid(
                field.child("HostDevices"), "Host Devices feature gate is not enabled in kubevirt-config"
            )
        ]
    return []


def vsock(field: Path, devices: JSON, config: ClusterConfig) -> list[StatusCause]:
    if opt_flag(devices, "autoattachVSOCK") and not config.enabled("VSOCK"):
        return [
            c.invalid(
                field.child("domain", "devices", "autoattachVSOCK"),
                "VSOCK feature gate is not enabled in kubevirt-config",
            )
        ]
    return []


def persistent_reservation(field: Path, devices: JSON, config: ClusterConfig) -> list[StatusCause]:
    reserved = any(flag(obj(disk, "lun"), "reservation") for disk in items(devices, "disks"))
    if reserved and not config.enabled("PersistentReservation"):
        return [
            c.invalid(
                field.child("domain", "devices", "disks", "luns", "reservation"),
                "PersistentReservation feature gate is not enabled in kubevirt-config",
            )
        ]
    return []


def downward_metrics_device(field: Path, devices: JSON, config: ClusterConfig) -> list[StatusCause]:
    if has(devices, "downwardMetrics") and not config.enabled("DownwardMetrics"):
        return [
            c.invalid(
                field.child("domain", "devices", "downwardMetrics"),
                "downwardMetrics virtio serial is not allowed: DownwardMetrics feature gate is not enabled",
            )
        ]
    return []


def video(field: Path, devices: JSON, config: ClusterConfig) -> list[StatusCause]:
    if not has(devices, "video"):
        return []
    if not config.enabled("VideoConfig"):
        return [
            c.invalid(
                field.child("video"),
                "Video configuration is specified but the VideoConfig feature gate is not enabled",
            )
        ]
    if opt_flag(devices, "autoattachGraphicsDevice") is False:
        return [
            c.invalid(
                field.child("video"),
                "Video configuration is not allowed when autoattachGraphicsDevice is set to false",
            )
        ]
    return []


def panic_devices(field: Path, spec: JSON, devices: JSON, config: ClusterConfig) -> list[StatusCause]:
    panic = items(devices, "panicDevices")
    if not panic:
        return []
    where = field.child("domain", "devices", "panicDevices")
    if not config.enabled("PanicDevices"):
        return [c.invalid(where, "Panic Devices feature gate is not enabled in kubevirt-config")]
    out: list[StatusCause] = []
    architecture = text(spec, "architecture") or config.default_architecture
    if architecture == "s390x":
        out.append(c.invalid(where, f"custom panic devices are not supported on {architecture} architecture"))
    for i, device in enumerate(panic):
        if has(device, "model") and text(device, "model") not in _PANIC_MODELS:
            out.append(
                c.invalid(where.index(i).child("model"), f"invalid PanicDeviceModel({text(device, 'model')})")
            )
    return out


def amd64_settings(field: Path, devices: JSON) -> list[StatusCause]:
    """``ValidateVirtualMachineInstanceAmd64Setting``: watchdog model and video type."""
    out: list[StatusCause] = []
    watchdog = opt_obj(devices, "watchdog")
    if watchdog is not None and not (has(watchdog, "i6300esb") and not has(watchdog, "diag288")):
        out.append(
            c.not_supported(
                field.child("domain", "devices", "watchdog"), "amd64 only supports I6300ESB watchdog device"
            )
        )
    video_dev = opt_obj(devices, "video")
    if video_dev is not None and text(video_dev, "type") not in ("vga", "cirrus", "virtio", "ramfb", "bochs"):
        out.append(
            c.not_supported(
                field.child("domain", "devices", "video", "type"),
                f"video model '{text(video_dev, 'type')}' is not supported on amd64 architecture",
            )
        )
    return out


def arm64_settings(field: Path, spec: JSON) -> list[StatusCause]:
    """KubeVirt's arm64 settings checks: UEFI without SecureBoot, host-passthrough, virtio or scsi disks."""
    domain = obj(spec, "domain")
    devices = obj(domain, "devices")
    out: list[StatusCause] = []
    bootloader = opt_obj(obj(domain, "firmware"), "bootloader")
    if bootloader is not None:
        if has(bootloader, "bios"):
            out.append(
                c.not_supported(
                    field.child("domain", "firmware", "bootloader", "bios"),
                    "Arm64 does not support bios boot, please change to uefi boot",
                )
            )
        efi = opt_obj(bootloader, "efi")
        if efi is not None and opt_flag(efi, "secureBoot") is not False:
            out.append(
                c.not_supported(
                    field.child("domain", "firmware", "bootloader", "efi", "secureboot"),
                    "UEFI secure boot is currently not supported on aarch64 Arch",
                )
            )
    model = text(obj(domain, "cpu"), "model")
    if model and model != "host-passthrough":
        out.append(
            c.not_supported(
                field.child("domain", "cpu", "model"),
                "currently, host-passthrough is the only model supported on Arm64",
            )
        )
    for i, disk in enumerate(items(devices, "disks")):
        for kind in _TARGETS:
            target = opt_obj(disk, kind)
            if target is not None and text(target, "bus") not in ("", "virtio", "scsi"):
                out.append(
                    c.not_supported(
                        field.child("domain", "devices", "disks").index(i).child(kind, "bus"),
                        "Arm64 not support this disk bus type, please use virtio or scsi",
                    )
                )
    if has(devices, "watchdog"):
        out.append(
            c.not_supported(field.child("domain", "devices", "watchdog"), "Arm64 not support Watchdog device")
        )
    if has(devices, "sound"):
        out.append(
            c.not_supported(field.child("domain", "devices", "sound"), "Arm64 not support sound device")
        )
    video_dev = opt_obj(devices, "video")
    if video_dev is not None and text(video_dev, "type") not in ("virtio", "ramfb"):
        out.append(
            c.not_supported(
                field.child("domain", "devices", "video", "type"),
                f"video model '{text(video_dev, 'type')}' is not supported on arm64 architecture",
            )
        )
    return out
