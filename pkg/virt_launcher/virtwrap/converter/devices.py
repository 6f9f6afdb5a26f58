"""The fixed and simple devices: controllers, guest agent channel, serial console, graphics, inputs,
memory balloon, rng, watchdog, sound, TPM, vsock, panic, USB redirection and virtiofs shares."""

from __future__ import annotations

from kubevirt import pod_paths
from kubevirt_api.core.v1 import Disk

from .. import api
from .conversion import Conversion
from .errors import ConversionError

GUEST_AGENT_CHANNEL = "org.qemu.guest_agent.0"
DOWNWARD_METRICS_CHANNEL = "org.github.vhostmd.1"
USB_REDIRECT_DEVICES = 4
VGA_VRAM_KIB = 16384


def _uses_usb(c: Conversion) -> bool:
    """KubeVirt's test for a USB controller on x86: a USB input, a USB disk, or USB redirection."""
    devices = c.vmi.spec.domain.devices
    if devices.client_passthrough is not None:
        return True
    if any(i.bus == "usb" for i in devices.inputs or []):
        return True
    return any(d.disk is not None and d.disk.bus == "usb" for d in devices.disks or [])


def _bus(disk: Disk) -> str | None:
    """The bus of a disk, cdrom or lun (KubeVirt's ``getBusFromDisk``)."""
    for device in (disk.lun, disk.disk, disk.cdrom):
        if device is not None:
            return device.bus
    return None


def configure_controllers(c: Conversion) -> None:
    devices = c.vmi.spec.domain.devices
    controllers = c.domain.devices.controllers
    controllers.append(api.Controller(type="usb", index="0", model="qemu-xhci" if _uses_usb(c) else "none"))
    # From the spec, as KubeVirt: a SCSI disk hotplugged later still needs its controller now.
    has_scsi = any(_bus(d) == "scsi" for d in devices.disks or [])
    if not devices.disable_hotplug or has_scsi:
        controllers.append(api.Controller(type="scsi", index="0", model=c.virtio_model))
    if devices.autoattach_serial_console is not False:  # the serial console's port lives on it
        controllers.append(api.Controller(type="virtio-serial", index="0", model=c.virtio_model))


def configure_channels(c: Conversion) -> None:
    channels = c.domain.devices.channels
    channels.append(
        api.Channel(type="unix", target=api.ChannelTarget(name=GUEST_AGENT_CHANNEL, type="virtio"))
    )
    if c.vmi.spec.domain.devices.downward_metrics is not None:
        channels.append(
            api.Channel(
                type="unix",
                source=api.ChannelSource(mode="bind", path=pod_paths.DOWNWARD_METRICS_SOCKET),
                target=api.ChannelTarget(name=DOWNWARD_METRICS_CHANNEL, type="virtio"),
            )
        )


def configure_serial_console(c: Conversion) -> None:
    devices = c.vmi.spec.domain.devices
    if devices.autoattach_serial_console is False:
        return
    socket = f"{pod_paths.vmi_private_dir(c.uid)}/{pod_paths.SERIAL_SOCKET}"
    serial = api.Serial(
        type="unix", target=api.SerialTarget(port=0), source=api.SerialSource(mode="bind", path=socket)
    )
    log = c.context.serial_console_log
    if log is None:
        log = devices.log_serial_console is not False
    if log:
        serial.log = api.SerialLog(file=f"{socket}-log", append="on")
    c.domain.devices.serials.append(serial)
    c.domain.devices.consoles.append(api.Console(type="pty", target=api.ConsoleTarget(type="serial", port=0)))


def configure_graphics(c: Conversion) -> None:
    domain_spec = c.vmi.spec.domain
    devices = domain_spec.devices
    if devices.autoattach_graphics_device is False:
        return
    firmware = domain_spec.firmware
    efi = firmware is not None and firmware.bootloader is not None and firmware.bootloader.efi is not None
    if devices.video is not None and devices.video.type:
        model = api.VideoModel(type=devices.video.type, heads=1, vram=VGA_VRAM_KIB)
    elif efi and c.context.bochs_for_efi_guests:
        model = api.VideoModel(type="bochs", heads=1)  # EFI framebuffer; VGA needs a legacy BIOS
    else:
        model = api.VideoModel(type="vga", heads=1, vram=VGA_VRAM_KIB)
    c.domain.devices.video.append(api.Video(model=model))
    c.domain.devices.graphics.append(
        api.Graphics(
            type="vnc",
            listen=api.GraphicsListen(
                type="socket", socket=f"{pod_paths.vmi_private_dir(c.uid)}/{pod_paths.VNC_SOCKET}"
            ),
        )
    )


def configure_inputs(c: Conversion) -> None:
    for index, spec in enumerate(c.vmi.spec.domain.devices.inputs or []):
        field = f"spec.domain.devices.inputs[{index}]"
        bus = spec.bus or "usb"
        if bus not in ("usb", "virtio"):
            raise ConversionError(f"{field}.bus", f"input contains unsupported bus {bus}")
        if spec.type != "tablet":
            raise ConversionError(f"{field}.type", f"input contains unsupported type {spec.type}")
        c.domain.devices.inputs.append(
            api.Input(
                type=spec.type,
                bus=bus,
                model="virtio" if bus == "virtio" else None,
                alias=api.Alias.user_defined(spec.name),
            )
        )


def free_page_reporting(c: Conversion) -> bool:
    """Free page reporting stays off where guest memory must stay put (hugepages, dedicated CPUs)."""
    if c.context.free_page_reporting is not None:
        return c.context.free_page_reporting
    domain_spec = c.vmi.spec.domain
    if domain_spec.memory is not None and domain_spec.memory.hugepages is not None:
        return False
    cpu = domain_spec.cpu
    if cpu is not None and (cpu.dedicated_cpu_placement or cpu.realtime is not None):
        return False
    annotations = (c.vmi.metadata.annotations if c.vmi.metadata else None) or {}
    return annotations.get("kubevirt.io/free-page-reporting-disabled") != "true"


def configure_memballoon(c: Conversion) -> None:
    if c.vmi.spec.domain.devices.autoattach_mem_balloon is False:
        c.domain.devices.ballooning = api.MemBalloon(model="none")
        return
    c.domain.devices.ballooning = api.MemBalloon(
        model=c.virtio_model,
        free_page_reporting="on" if free_page_reporting(c) else "off",
        stats=api.Stats(period=c.context.memballoon_stats_period),
    )


def configure_rng(c: Conversion) -> None:
    if c.vmi.spec.domain.devices.rng is not None:
        c.domain.devices.rng = api.Rng(
            model=c.virtio_model, backend=api.RngBackend(model="random", source="/dev/urandom")
        )


def configure_watchdog(c: Conversion) -> None:
    watchdog = c.vmi.spec.domain.devices.watchdog
    if watchdog is None:
        return
    # Each architecture has its one watchdog model: i6300esb on x86, diag288 on s390x.
    if c.context.architecture == "s390x":
        model, action = "diag288", watchdog.diag288.action if watchdog.diag288 else None
    else:
        model, action = "i6300esb", watchdog.i6300esb.action if watchdog.i6300esb else None
    if action is None and watchdog.i6300esb is None and watchdog.diag288 is None:
        raise ConversionError(
            "spec.domain.devices.watchdog",
            f"watchdog {watchdog.name} can't be mapped, no watchdog type specified",
        )
    c.domain.devices.watchdogs.append(
        api.Watchdog(model=model, action=action or "", alias=api.Alias.user_defined(watchdog.name))
    )


def configure_sound(c: Conversion) -> None:
    sound = c.vmi.spec.domain.devices.sound
    if sound is not None:
        model = "ac97" if sound.model == "ac97" else "ich9"
        c.domain.devices.sound_cards.append(
            api.SoundCard(model=model, alias=api.Alias.user_defined(sound.name))
        )


def configure_tpm(c: Conversion) -> None:
    tpm = c.vmi.spec.domain.devices.tpm
    if tpm is None or tpm.enabled is False:
        return
    if tpm.persistent:
        backend = api.TPMBackend(type="emulator", version="2.0", persistent_state="yes")
        c.domain.devices.tpms.append(api.TPM(model="tpm-crb", backend=backend))
    else:
        backend = api.TPMBackend(type="emulator", version="2.0")
        c.domain.devices.tpms.append(api.TPM(model="tpm-tis", backend=backend))


def configure_vsock(c: Conversion) -> None:
    status = c.vmi.status
    if status is not None and status.vsockcid is not None:
        # vhost-vsock only works as a virtio 1.0 device, whatever the VMI asks for
        c.domain.devices.vsock = api.VSOCK(
            model="virtio-non-transitional", cid=api.CID(auto="no", address=status.vsockcid)
        )


def configure_panic_devices(c: Conversion) -> None:
    for panic in c.vmi.spec.domain.devices.panic_devices or []:
        c.domain.devices.panic_devices.append(api.PanicDevice(model=panic.model or None))


def configure_usb_redirection(c: Conversion) -> None:
    if c.vmi.spec.domain.devices.client_passthrough is None:
        return
    for i in range(USB_REDIRECT_DEVICES):
        source = api.RedirectedDeviceSource(
            mode="bind", path=f"{pod_paths.vmi_private_dir(c.uid)}/{pod_paths.USB_REDIRECT_SOCKET_PREFIX}{i}"
        )
        c.domain.devices.redirs.append(api.RedirectedDevice(type="unix", bus="usb", source=source))


def configure_filesystems(c: Conversion) -> None:
    """virtiofs shares, each served by its virtiofsd through a socket in the pod."""
    for share in c.vmi.spec.domain.devices.filesystems or []:
        c.domain.devices.filesystems.append(
            api.FilesystemDevice(
                type="mount",
                access_mode="passthrough",
                driver=api.FilesystemDriver(type="virtiofs", queue="1024"),
                source=api.FilesystemSource(
                    dir="", socket=f"{pod_paths.VIRTIOFS_CONTAINERS_DIR}/{share.name}.sock"
                ),
                target=api.FilesystemTarget(dir=share.name),
            )
        )
