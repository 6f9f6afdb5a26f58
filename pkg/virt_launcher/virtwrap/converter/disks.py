"""``<disk>`` devices: target naming, driver options, and where each kind of volume lives in the pod."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kubevirt import pod_paths
from kubevirt_api.core.v1 import Disk, Volume

from .. import api
from .conversion import Conversion, join_base, resource_quantity
from .errors import ConversionError
from .volume_status import VolumeStatuses, hotplug_block_path, hotplug_filesystem_path

_PRIVATE = pod_paths.VIRT_PRIVATE_DIR
ERROR_POLICIES = frozenset({"stop", "ignore", "report", "enospace"})
_BUS_PREFIX = {"virtio": "vd", "sata": "sd", "scsi": "sd", "usb": "sd"}  # any other bus: no prefix
# KubeVirt's pattern, whose unescaped dot accepts any separator before the function
_PCI_ADDRESS = re.compile(r"^([\da-fA-F]{4}):([\da-fA-F]{2}):([\da-fA-F]{2}).([0-7])$")


def device_suffix(index: int) -> str:
    """0 → a, 25 → z, 26 → aa: the Linux sd naming scheme."""
    suffix = ""
    index += 1
    while index > 0:
        index, rest = divmod(index - 1, 26)
        suffix = chr(ord("a") + rest) + suffix
    return suffix


class _DeviceNamer:
    """Hands out target device names per prefix, as KubeVirt's device namer: a disk keeps the device its
    volume status names (the guest knows it by it), every other disk gets the first free name of its
    prefix, and a repeated disk name keeps its first device."""

    __slots__ = ("_by_disk", "_lowest_free", "_used")

    def __init__(self, targets: Mapping[str, str], disks: Sequence[Disk]) -> None:
        self._by_disk: dict[tuple[str, str], str] = {}
        self._used: dict[str, set[str]] = {}
        self._lowest_free: dict[str, int] = {}
        for disk in disks:
            if disk.disk is None:  # only disk devices keep their device, as in KubeVirt
                continue
            target = targets.get(disk.name)
            if target:
                prefix = _BUS_PREFIX.get(disk.disk.bus or "", "")
                self._by_disk[(prefix, disk.name)] = target
                self._used.setdefault(prefix, set()).add(target)

    def name(self, prefix: str, disk_name: str) -> tuple[str, int]:
        key = (prefix, disk_name)
        existing = self._by_disk.get(key)
        if existing is not None:
            return existing, _device_index(prefix, existing)
        used = self._used.setdefault(prefix, set())
        index = self._lowest_free.get(prefix, 0)  # names are only ever taken: the lowest free one grows
        while prefix + device_suffix(index) in used:
            index += 1
        self._lowest_free[prefix] = index + 1
        name = prefix + device_suffix(index)
        used.add(name)
        self._by_disk[key] = name
        return name, index


def _device_index(prefix: str, name: str) -> int:
    """The index ``name`` has among ``prefix``'s names (``sdc`` → 2); 0 for a name not of that prefix,
    as KubeVirt falls back to."""
    suffix = name[len(prefix) :] if name.startswith(prefix) else ""
    if not suffix or not all("a" <= ch <= "z" for ch in suffix):
        return 0
    index = 0
    for ch in suffix:
        index = index * 26 + (ord(ch) - ord("a") + 1)
    return index - 1


def pci_address(text: str) -> api.Address | None:
    """``0000:05:00.0`` → a libvirt PCI address, or ``None`` when it does not parse."""
    match = _PCI_ADDRESS.match(text)
    if match is None:
        return None
    domain, bus, slot, function = match.groups()
    return api.Address(
        type="pci", domain=f"0x{domain}", bus=f"0x{bus}", slot=f"0x{slot}", function=f"0x{function}"
    )


def configure_disks(c: Conversion) -> None:
    spec = c.vmi.spec
    volumes: dict[str, tuple[int, Volume]] = {}
    for index, volume in enumerate(spec.volumes or []):
        volumes[volume.name] = (index, volume)  # a repeated name: the last one wins, as in KubeVirt
    statuses = VolumeStatuses.of(c.vmi)
    disks = spec.domain.devices.disks or []
    namer = _DeviceNamer(statuses.targets, disks)
    devices = c.domain.devices.disks
    for index, disk in enumerate(disks):
        field = f"spec.domain.devices.disks[{index}]"
        out = _convert_disk(c, disk, field, volumes, namer, statuses)
        # A hotplugged volume's disk joins the domain once virt-handler has put it into the pod.
        if statuses.in_domain(disk.name, empty_cdrom=disk.name not in volumes):
            devices.append(out)


def _convert_disk(
    c: Conversion,
    disk: Disk,
    field: str,
    volumes: dict[str, tuple[int, Volume]],
    namer: _DeviceNamer,
    statuses: VolumeStatuses,
) -> api.Disk:
    out = api.Disk(alias=api.Alias.user_defined(disk.name))
    target = out.target
    cache = disk.cache or None
    if disk.disk is not None or (disk.lun is None and disk.cdrom is None):
        spec = disk.disk
        out.device = "disk"
        target.bus = (spec.bus if spec else None) or None
        target.dev, index = namer.name(_BUS_PREFIX.get(target.bus or "", ""), disk.name)
        if target.bus == "scsi":
            out.address = _scsi_address(index)
        pci = spec.pci_address if spec else None
        if pci:
            if target.bus != "virtio":
                raise ConversionError(
                    f"{field}.disk.pciAddress",
                    f"setting a pci address is not allowed for non-virtio bus types, for disk {disk.name}",
                )
            out.address = pci_address(pci)
            if out.address is None:
                raise ConversionError(
                    f"{field}.disk.pciAddress",
                    f"failed to configure disk {disk.name}: failed to parse pci address {pci}",
                )
        if target.bus == "virtio":
            out.model = c.virtio_model
        if spec is not None and spec.readonly:
            out.readonly = api.ReadOnly()
        out.serial = disk.serial or None
        if disk.shareable:
            cache = cache or "none"
            if cache != "none":
                raise ConversionError(f"{field}.cache", f"a sharable disk requires cache = none got: {cache}")
            out.shareable = api.Shareable()
    elif disk.lun is not None:
        out.device = "lun"
        target.bus = disk.lun.bus or None
        target.dev, index = namer.name(_BUS_PREFIX.get(target.bus or "", ""), disk.name)
        if target.bus == "scsi":
            out.address = _scsi_address(index)
        if disk.lun.readonly:
            out.readonly = api.ReadOnly()
        if disk.lun.reservation:
            out.source.reservations = api.Reservations(
                managed="no",
                source=api.SourceReservations(type="unix", path=pod_paths.PR_HELPER_SOCKET, mode="client"),
            )
    else:
        cdrom = disk.cdrom
        assert cdrom is not None
        out.device = "cdrom"
        target.tray = cdrom.tray or None
        target.bus = cdrom.bus or None
        target.dev, _ = namer.name(_BUS_PREFIX.get(target.bus or "", ""), disk.name)
        if cdrom.readonly is None or cdrom.readonly:
            out.readonly = api.ReadOnly()
    driver = api.DiskDriver(name="qemu", cache=cache, io=disk.io or None)
    out.driver = driver
    if out.device != "cdrom" and disk.name not in c.context.discard_ignore:
        driver.discard = "unmap"
    if target.bus == "virtio" and c.vmi.spec.domain.devices.block_multi_queue:
        driver.queues = c.requested_vcpus
    if disk.boot_order is not None:
        out.boot = api.BootOrder(order=disk.boot_order)
    found = volumes.get(disk.name)
    if found is None:
        if out.device != "cdrom":
            raise ConversionError(field, f"no matching volume with name {disk.name} found")
        out.type = "block"  # an empty tray: a block device without media
        driver.type = "raw"
        driver.discard = "unmap"
    elif disk.name in statuses.hotplug:
        _set_hotplug_source(c, out, found[1], field)
    else:
        volume_index, volume = found
        _set_source(c, out, volume, volume_index, field, disk.name)
    if disk.block_size is not None and disk.block_size.custom is not None:
        out.blockio = api.BlockIO(
            logical_block_size=disk.block_size.custom.logical,
            physical_block_size=disk.block_size.custom.physical,
        )
    policy = disk.error_policy or "stop"
    if policy not in ERROR_POLICIES:
        raise ConversionError(f"{field}.errorPolicy", f"error policy {policy} not recognized")
    assert out.driver is not None  # a downwardMetrics volume replaces the driver
    out.driver.error_policy = policy
    return out


def _scsi_address(unit: int) -> api.Address:
    """Drive address on the one virtio-scsi controller (index 0)."""
    return api.Address(type="drive", bus="0", controller="0", unit=str(unit))


def _set_source(
    c: Conversion, disk: api.Disk, volume: Volume, volume_index: int, field: str, disk_name: str
) -> None:
    """Point the disk at the volume's file or device inside the pod."""
    name = volume.name
    driver = disk.driver
    assert driver is not None
    if volume.container_disk is not None:
        formats = c.context.container_disk_formats
        image_format = "qcow2" if formats is None else formats.get(name)
        if image_format is None:
            raise ConversionError(field, f"no disk info provided for volume {name}")
        _overlay(disk, driver, name)
        disk.backing_store = api.BackingStore(
            type="file",
            format=api.BackingStoreFormat(type=image_format),
            source=api.DiskSource(file=f"{pod_paths.CONTAINER_DISK_DIR}/disk_{volume_index}.img"),
        )
    elif volume.cloud_init_no_cloud is not None or volume.cloud_init_config_drive is not None:
        iso = "noCloud.iso" if volume.cloud_init_no_cloud is not None else "configdrive.iso"
        _raw_file(disk, driver, f"{pod_paths.CLOUD_INIT_DATA_DIR}/{c.namespace}/{c.vmi_name}/{iso}")
    elif volume.sysprep is not None:
        _raw_file(disk, driver, f"{_PRIVATE}/{pod_paths.SYSPREP_DISKS}/{name}.iso")
    elif volume.host_disk is not None:
        _raw_file(disk, driver, join_base(f"{pod_paths.VMI_DISKS_DIR}/{name}", volume.host_disk.path))
    elif volume.persistent_volume_claim is not None or volume.data_volume is not None:
        if name in c.context.block_volumes:
            disk.type = "block"
            disk.source.dev = f"/dev/{name}"
            driver.type = "raw"
        else:
            _raw_file(disk, driver, f"{pod_paths.VMI_DISKS_DIR}/{name}/disk.img")
        if name not in c.context.discard_ignore:  # preallocated: its blocks stay allocated
            driver.discard = "unmap"
    elif volume.ephemeral is not None:
        _overlay(disk, driver, name)
        if name in c.context.block_volumes:
            backing = api.BackingStore(type="block", source=api.DiskSource(dev=f"/dev/{name}"))
        else:
            source = api.DiskSource(file=f"{pod_paths.VMI_DISKS_DIR}/{name}/disk.img")
            backing = api.BackingStore(type="file", source=source)
        backing.format = api.BackingStoreFormat(type="raw")
        disk.backing_store = backing
    elif volume.empty_disk is not None:
        disk.type = "file"
        disk.source.file = f"{pod_paths.EMPTY_DISK_DIR}/{name}.qcow2"
        driver.type = "qcow2"
        driver.discard = "unmap"
    elif volume.config_map is not None:
        _raw_file(disk, driver, f"{_PRIVATE}/{pod_paths.CONFIG_MAP_DISKS}/{name}.iso")
    elif volume.secret is not None:
        _raw_file(disk, driver, f"{_PRIVATE}/{pod_paths.SECRET_DISKS}/{name}.iso")
    elif volume.downward_api is not None:
        _raw_file(disk, driver, f"{_PRIVATE}/{pod_paths.DOWNWARD_API_DISKS}/{name}.iso")
    elif volume.service_account is not None:
        _raw_file(disk, driver, f"{_PRIVATE}/{pod_paths.SERVICE_ACCOUNT_DISK}/service-account.iso")
    elif volume.downward_metrics is not None:
        # The metrics disk is always a read-only virtio file with a plain driver.
        disk.type = "file"
        disk.readonly = api.ReadOnly()
        disk.driver = api.DiskDriver(name="qemu", type="raw")
        disk.model = c.virtio_model
        disk.source = api.DiskSource(file=pod_paths.DOWNWARD_METRICS_DISK)
    else:
        raise ConversionError(field, f"disk {disk_name} references an unsupported source")


def _set_hotplug_source(c: Conversion, disk: api.Disk, volume: Volume, field: str) -> None:
    """Point a hotplugged volume's disk at what virt-handler puts into the pod: the claim's image, or
    the block device's node (a hostDisk is taken as a filesystem claim, as KubeVirt does)."""
    name = volume.name
    driver = disk.driver
    assert driver is not None
    if volume.persistent_volume_claim is None and volume.data_volume is None and volume.host_disk is None:
        raise ConversionError(field, f"hotplug disk {name} references an unsupported source")
    if volume.host_disk is None and name in c.context.block_volumes:
        disk.type = "block"
        disk.source.dev = hotplug_block_path(name)
        driver.type = "raw"
    else:
        _raw_file(disk, driver, hotplug_filesystem_path(name))
    if name not in c.context.discard_ignore:
        driver.discard = "unmap"


def _raw_file(disk: api.Disk, driver: api.DiskDriver, path: str) -> None:
    disk.type = "file"
    disk.source.file = path
    driver.type = "raw"


def _overlay(disk: api.Disk, driver: api.DiskDriver, name: str) -> None:
    """A qcow2 overlay in the pod's ephemeral storage, over a read-only backing image."""
    disk.type = "file"
    disk.source.file = f"{pod_paths.DISK_DATA_DIR}/{name}/disk.qcow2"
    driver.type = "qcow2"
    driver.discard = "unmap"


# ---------------------------------------------------------------- IO threads


def _thread_pool_limit(c: Conversion) -> int:
    domain = c.vmi.spec.domain
    policy = domain.io_threads_policy
    if policy is None or policy == "shared":
        return 1
    if policy == "auto":
        cpu = domain.cpu
        if cpu is not None and cpu.dedicated_cpu_placement and cpu.isolate_emulator_thread:
            return 1
        quantity = resource_quantity(c.vmi, "requests", "cpu") or resource_quantity(c.vmi, "limits", "cpu")
        return 2 * (quantity.value() if quantity is not None else 1)
    return 0


def configure_iothreads(c: Conversion) -> None:
    """``<iothreads>`` and each virtio disk's thread: shared, auto (round-robin) or dedicated."""
    domain_spec = c.vmi.spec.domain
    disks = domain_spec.devices.disks or []
    if domain_spec.io_threads_policy is None and not any(d.dedicated_io_thread for d in disks):
        return
    out_disks = c.domain.devices.disks
    pool = domain_spec.io_threads.supplemental_pool_thread_count if domain_spec.io_threads else None
    if domain_spec.io_threads_policy == "supplementalPool" and pool is not None:
        _share_supplemental_pool(c, pool)
        _give_scsi_controller_a_thread(c, 1)
        return
    dedicated = sum(1 for d in disks if d.dedicated_io_thread)
    auto = len(disks) - dedicated
    limit = _thread_pool_limit(c)
    if auto + dedicated > limit:
        auto = max(limit - dedicated, 1)
    if auto + dedicated:
        c.domain.iothreads = api.IOThreads(count=auto + dedicated)
    current_auto = 1
    current_dedicated = auto + 1
    # KubeVirt pairs the domain's disks with the spec's by position; a hotplugged disk not in the domain
    # yet shortens the domain's list (and shifts the pairs after it, as there).
    for disk, out in zip(disks, out_disks, strict=False):
        if out.target.bus != "virtio" or out.driver is None:
            continue
        if disk.dedicated_io_thread:
            out.driver.iothread = current_dedicated
            current_dedicated += 1
        else:
            out.driver.iothread = current_auto
            current_auto = current_auto % auto + 1
    _give_scsi_controller_a_thread(c, current_auto)


def _share_supplemental_pool(c: Conversion, pool: int) -> None:
    """Every virtio disk may use every thread of the pool."""
    if pool:
        c.domain.iothreads = api.IOThreads(count=pool)
    for out in c.domain.devices.disks:
        if out.target.bus == "virtio" and out.driver is not None:
            out.driver.iothreads = api.DiskIOThreads(
                iothreads=[api.DiskIOThread(id=i) for i in range(1, pool + 1)]
            )


def _give_scsi_controller_a_thread(c: Conversion, thread: int) -> None:
    """SCSI disks cannot have IO threads of their own: a dedicated one goes to the controller."""
    disks = c.vmi.spec.domain.devices.disks or []
    if any(
        d.dedicated_io_thread and o.target.bus == "scsi"
        for d, o in zip(disks, c.domain.devices.disks, strict=False)  # by position, as above
    ):
        for controller in c.domain.devices.controllers:
            if controller.type == "scsi":
                controller.driver = api.ControllerDriver(iothread=thread, queues=c.requested_vcpus)
