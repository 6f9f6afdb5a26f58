"""The virt-launcher pod's volumes, and the compute container's mounts and block devices.

The fixed emptyDirs come first (``private``, ``public``, ``sockets``, …); then, in KubeVirt's order, the
VMI's config volumes (secrets, config maps, downward API), its storage (PVCs, DataVolumes, ephemeral
volumes, host disks, downward metrics, cloud-init and sysprep secrets), access credentials, backend
storage, hugepages, the hotplug directory, network device info and virtiofs.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubevirt import pod_paths
from kubevirt.virt_controller.services import vmi_facts
from kubevirt.virt_controller.services.errors import PvcNotFoundError, TemplateError
from kubevirt.virt_controller.services.parameters import PvcLookup, TemplateParameters
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.volumes import Volume
from kubevirt_api.view import JSON

HOTPLUG_DISKS_VOLUME = "hotplug-disks"
VIRT_BIN_VOLUME = "virt-bin-share-dir"
VIRTIOFS_CONTAINERS_VOLUME = "virtiofs-containers"
HOST_TO_CONTAINER = "HostToContainer"

SERVICE_ACCOUNT_SOURCE_DIR = "/var/run/secrets/kubernetes.io/serviceaccount/"
NETWORK_INFO_VOLUME = "network-info-annotation"
NETWORK_INFO_MOUNT_PATH = "/etc/podinfo"
NETWORK_INFO_ANNOTATION = "kubevirt.io/network-info"
HUGEPAGES_DIR = "/dev/hugepages"
BACKEND_STORAGE_VOLUME = "vm-state"
_HOST_PATH_TYPES = {"Disk": "Directory", "DiskOrCreate": "DirectoryOrCreate"}


def empty_dir(name: str) -> JSON:
    return {"name": name, "emptyDir": {}}


def mount(name: str, path: str, **extra: Any) -> JSON:
    return {"name": name, "mountPath": path, **extra}


def config_map_source_path(volume_name: str) -> str:
    return posixpath.join(pod_paths.CONFIG_MAP_SOURCE_DIR, volume_name)


def secret_source_path(volume_name: str) -> str:
    return posixpath.join(pod_paths.SECRET_SOURCE_DIR, volume_name)


def downward_api_source_path(volume_name: str) -> str:
    return posixpath.join(pod_paths.DOWNWARD_API_SOURCE_DIR, volume_name)


@dataclass
class VolumeLayout:
    """What the volume rules produce for the pod."""

    volumes: list[JSON] = field(default_factory=list)
    mounts: list[JSON] = field(default_factory=list)
    devices: list[JSON] = field(default_factory=list)
    shared_filesystem_paths: list[str] = field(default_factory=list)


def render_volumes(
    vmi: VirtualMachineInstance,
    params: TemplateParameters,
    find_pvc: PvcLookup,
    *,
    image_volumes: bool = False,
    backend_storage_pvc: str = "",
) -> VolumeLayout:
    """Pod volumes (fixed ones first) and the compute container's mounts and devices."""
    extra = VolumeLayout()
    _config_volumes(vmi, extra)
    _storage_volumes(vmi, find_pvc, extra)
    _access_credentials(vmi, extra)
    _backend_storage(vmi, backend_storage_pvc, extra)
    if image_volumes:
        _image_volumes(vmi, extra)
    if vmi_facts.has_hugepages(vmi):
        extra.volumes.append({"name": "hugepages", "emptyDir": {"medium": "HugePages"}})
        extra.mounts.append(mount("hugepages", HUGEPAGES_DIR))
        extra.volumes.append(empty_dir("hugetblfs-dir"))
        extra.mounts.append(mount("hugetblfs-dir", posixpath.join(HUGEPAGES_DIR, "libvirt/qemu")))
    if not vmi_facts.devices(vmi).disable_hotplug:
        extra.mounts.append(
            mount(HOTPLUG_DISKS_VOLUME, params.hotplug_disk_dir, mountPropagation=HOST_TO_CONTAINER)
        )
        extra.volumes.append(empty_dir(HOTPLUG_DISKS_VOLUME))
    if vmi_facts.has_sriov_interface(vmi):
        extra.mounts.append(mount(NETWORK_INFO_VOLUME, NETWORK_INFO_MOUNT_PATH))
        extra.volumes.append(_network_info_volume())
    if vmi_facts.has_virtiofs(vmi):
        extra.mounts.append(mount(VIRTIOFS_CONTAINERS_VOLUME, pod_paths.VIRTIOFS_CONTAINERS_DIR))
        extra.volumes.append(empty_dir(VIRTIOFS_CONTAINERS_VOLUME))

    volumes = [
        empty_dir(name)
        for name in (
            pod_paths.PRIVATE_VOLUME,
            "public",
            pod_paths.SOCKETS,
            VIRT_BIN_VOLUME,
            "libvirt-runtime",
            "ephemeral-disks",
        )
    ]
    mounts = [
        mount(pod_paths.PRIVATE_VOLUME, pod_paths.VIRT_PRIVATE_DIR),
        mount("public", pod_paths.VIRT_SHARE_DIR),
        mount("ephemeral-disks", params.ephemeral_disk_dir),
        mount("libvirt-runtime", pod_paths.LIBVIRT_RUNTIME_DIR),
        mount(pod_paths.SOCKETS, posixpath.join(params.virt_share_dir, pod_paths.SOCKETS)),
    ]
    if not image_volumes:
        volumes.append(empty_dir(pod_paths.CONTAINER_DISKS))
        mounts.append(
            mount(pod_paths.CONTAINER_DISKS, params.container_disk_dir, mountPropagation=HOST_TO_CONTAINER)
        )
    return VolumeLayout(
        volumes=volumes + extra.volumes,
        mounts=mounts + extra.mounts,
        devices=extra.devices,
        shared_filesystem_paths=extra.shared_filesystem_paths,
    )


def _config_volumes(vmi: VirtualMachineInstance, out: VolumeLayout) -> None:
    """Secrets, config maps and downward API volumes; mounted only when a disk uses them."""
    by_name: dict[str, Volume] = {}
    for volume in vmi.spec.volumes or []:
        by_name[volume.name] = volume
        if volume.secret is not None:
            source = _drop_none({"secretName": volume.secret.secret_name, "optional": volume.secret.optional})
            out.volumes.append({"name": volume.name, "secret": source})
        if volume.config_map is not None:
            source = _drop_none({"name": volume.config_map.name, "optional": volume.config_map.optional})
            out.volumes.append({"name": volume.name, "configMap": source})
        if volume.downward_api is not None:
            items = [item.to_dict() for item in volume.downward_api.fields_ or []]
            out.volumes.append({"name": volume.name, "downwardAPI": _drop_none({"items": items or None})})
    for disk in vmi_facts.devices(vmi).disks or []:
        found = by_name.get(disk.name)
        if found is None:
            continue
        if found.secret is not None:
            out.mounts.append(mount(found.name, secret_source_path(found.name), readOnly=True))
        if found.config_map is not None:
            out.mounts.append(mount(found.name, config_map_source_path(found.name), readOnly=True))
        if found.downward_api is not None:
            out.mounts.append(mount(found.name, downward_api_source_path(found.name), readOnly=True))


def _hotplugged(vmi: VirtualMachineInstance) -> set[str]:
    names = {
        status.name
        for status in (vmi.status.volume_status if vmi.status is not None else None) or []
        if status.hotplug_volume is not None
    }
    for volume in vmi.spec.volumes or []:
        if (volume.data_volume is not None and volume.data_volume.hotpluggable) or (
            volume.persistent_volume_claim is not None and volume.persistent_volume_claim.hotpluggable
        ):
            names.add(volume.name)
    return names


def attached_claim_names(vmi: VirtualMachineInstance) -> list[str]:
    """The claims the launcher pod mounts from the start (hotplugged ones come later): those of the
    PersistentVolumeClaim and DataVolume volumes that are not hotpluggable, in volume order."""
    names = []
    for volume in vmi.spec.volumes or []:
        claim = volume.persistent_volume_claim
        if claim is not None and not claim.hotpluggable:
            names.append(claim.claim_name)
        data_volume = volume.data_volume
        if data_volume is not None and not data_volume.hotpluggable:
            names.append(data_volume.name)
    return names


def _storage_volumes(vmi: VirtualMachineInstance, find_pvc: PvcLookup, out: VolumeLayout) -> None:
    hotplugged = _hotplugged(vmi)
    for volume in vmi.spec.volumes or []:
        if volume.name in hotplugged:
            continue
        if volume.persistent_volume_claim is not None:
            claim = volume.persistent_volume_claim
            _claim_storage(volume.name, claim.claim_name, find_pvc, out)
            source = _drop_none({"claimName": claim.claim_name, "readOnly": claim.read_only or None})
            out.volumes.append({"name": volume.name, "persistentVolumeClaim": source})
        if volume.ephemeral is not None and volume.ephemeral.persistent_volume_claim is not None:
            ephemeral = volume.ephemeral.persistent_volume_claim
            _claim_storage(volume.name, ephemeral.claim_name, find_pvc, out)
            source = _drop_none({"claimName": ephemeral.claim_name, "readOnly": ephemeral.read_only or None})
            out.volumes.append({"name": volume.name, "persistentVolumeClaim": source})
        if volume.host_disk is not None:
            out.mounts.append(mount(volume.name, posixpath.join(pod_paths.VMI_DISKS_DIR, volume.name)))
            host_path = {
                "path": _go_dir(volume.host_disk.path),
                "type": _HOST_PATH_TYPES.get(volume.host_disk.type, ""),
            }
            out.volumes.append({"name": volume.name, "hostPath": host_path})
        if volume.data_volume is not None:
            _claim_storage(volume.name, volume.data_volume.name, find_pvc, out)
            source = {"claimName": volume.data_volume.name}
            out.volumes.append({"name": volume.name, "persistentVolumeClaim": source})
        if volume.downward_metrics is not None:
            out.volumes.append({"name": volume.name, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}})
            out.mounts.append(mount(volume.name, pod_paths.DOWNWARD_METRICS_DISK_DIR))
        if volume.cloud_init_no_cloud is not None:
            _cloud_init_secrets(volume.name, volume.cloud_init_no_cloud, out)
        if volume.sysprep is not None:
            _sysprep(volume, out)
        if volume.cloud_init_config_drive is not None:
            _cloud_init_secrets(volume.name, volume.cloud_init_config_drive, out)


def _claim_storage(volume_name: str, claim_name: str, find_pvc: PvcLookup, out: VolumeLayout) -> None:
    """A block PVC becomes a device at /dev/<volume>; a filesystem PVC a mount under vmi-disks."""
    pvc = find_pvc(claim_name)
    if pvc is None:
        raise PvcNotFoundError(f"didn't find PVC {claim_name}")
    spec = pvc.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    if spec.get("volumeMode") == "Block":
        out.devices.append({"name": volume_name, "devicePath": posixpath.join("/dev", volume_name)})
        return
    path = posixpath.join(pod_paths.VMI_DISKS_DIR, volume_name)
    out.mounts.append(mount(volume_name, path))
    modes = spec.get("accessModes")
    if isinstance(modes, list) and "ReadWriteMany" in modes:
        out.shared_filesystem_paths.append(path)


def _cloud_init_secrets(volume_name: str, source: Any, out: VolumeLayout) -> None:
    """User and network data from secrets are mounted under both spellings cloud-init reads."""
    for suffix, reference, keys in (
        ("udata", source.secret_ref, ("userdata", "userData")),
        ("ndata", source.network_data_secret_ref, ("networkdata", "networkData")),
    ):
        if reference is None:
            continue
        name = f"{volume_name}-{suffix}"
        out.volumes.append({"name": name, "secret": _drop_none({"secretName": reference.name})})
        for key in keys:
            path = posixpath.join(pod_paths.SECRET_SOURCE_DIR, volume_name, key)
            out.mounts.append(mount(name, path, subPath=key, readOnly=True))


def _sysprep(volume: Volume, out: VolumeLayout) -> None:
    sysprep = volume.sysprep
    assert sysprep is not None
    if sysprep.secret is not None:
        source: JSON = {"secret": _drop_none({"secretName": sysprep.secret.name})}
    elif sysprep.config_map is not None:
        source = {"configMap": _drop_none({"name": sysprep.config_map.name})}
    else:
        raise TemplateError(f"Sysprep must have Secret or ConfigMap reference set (volume {volume.name})")
    out.volumes.append({"name": volume.name, **source})
    out.mounts.append(
        mount(volume.name, posixpath.join(pod_paths.SYSPREP_SOURCE_DIR, volume.name), readOnly=True)
    )


def _access_credentials(vmi: VirtualMachineInstance, out: VolumeLayout) -> None:
    for credential in vmi.spec.access_credentials or []:
        secret = ""
        ssh, password = credential.ssh_public_key, credential.user_password
        if ssh is not None and ssh.source.secret is not None:
            secret = ssh.source.secret.secret_name
        elif password is not None and password.source.secret is not None:
            secret = password.source.secret.secret_name
        if not secret:
            continue
        name = f"{secret}-access-cred"
        out.volumes.append({"name": name, "secret": {"secretName": secret}})
        out.mounts.append(mount(name, posixpath.join(pod_paths.SECRET_SOURCE_DIR, name), readOnly=True))


def _backend_storage(vmi: VirtualMachineInstance, claim_name: str, out: VolumeLayout) -> None:
    """Persistent TPM and EFI state live on a PVC of their own."""
    if not vmi_facts.needs_backend_storage(vmi):
        return
    out.volumes.append({"name": BACKEND_STORAGE_VOLUME, "persistentVolumeClaim": {"claimName": claim_name}})
    out.mounts.append(mount(BACKEND_STORAGE_VOLUME, pod_paths.BACKEND_STORAGE_META_DIR, subPath="meta"))
    non_root = vmi_facts.is_non_root(vmi)
    if non_root:
        out.volumes += [empty_dir("private-libvirt"), empty_dir("private-libvirt-qemu")]
        out.mounts += [
            mount("private-libvirt", pod_paths.LIBVIRT_DIR),
            mount("private-libvirt-qemu", posixpath.join(pod_paths.LIBVIRT_DIR, "qemu")),
        ]
    if vmi_facts.has_persistent_tpm(vmi):
        swtpm = posixpath.join(pod_paths.LIBVIRT_DIR, "qemu/swtpm") if non_root else "/var/lib/libvirt/swtpm"
        localca = (
            posixpath.join(pod_paths.VIRT_PRIVATE_DIR, "var/lib/swtpm-localca")
            if non_root
            else "/var/lib/swtpm-localca"
        )
        out.mounts += [
            mount(BACKEND_STORAGE_VOLUME, swtpm, subPath="swtpm"),
            mount(BACKEND_STORAGE_VOLUME, localca, subPath="swtpm-localca"),
        ]
    if vmi_facts.has_persistent_efi(vmi):
        nvram = pod_paths.NON_ROOT_NVRAM_DIR if non_root else "/var/lib/libvirt/qemu/nvram"
        out.mounts.append(mount(BACKEND_STORAGE_VOLUME, nvram, subPath="nvram"))


KERNEL_BOOT_NAME = "kernel-boot"


def _image_volumes(vmi: VirtualMachineInstance, out: VolumeLayout) -> None:
    """With the ImageVolume gate, container disks are image volumes instead of containers."""
    for index, volume in enumerate(vmi.spec.volumes or []):
        disk = volume.container_disk
        if disk is None:
            continue
        source = _drop_none({"reference": disk.image, "pullPolicy": disk.image_pull_policy})
        out.volumes.append({"name": volume.name, "image": source})
        path = posixpath.join(pod_paths.IMAGE_VOLUME_DIR, f"disk_{index}")
        out.mounts.append(mount(volume.name, path, readOnly=True))
    container = vmi_facts.kernel_boot_container(vmi)
    if container is not None:
        source = _drop_none({"reference": container.image, "pullPolicy": container.image_pull_policy})
        out.volumes.append({"name": KERNEL_BOOT_NAME, "image": source})
        out.mounts.append(mount(KERNEL_BOOT_NAME, pod_paths.KERNEL_BOOT_VOLUME_DIR, readOnly=True))


def _network_info_volume() -> JSON:
    field_path = f"metadata.annotations['{NETWORK_INFO_ANNOTATION}']"
    items = [{"path": "network-info", "fieldRef": {"fieldPath": field_path}}]
    return {"name": NETWORK_INFO_VOLUME, "downwardAPI": {"items": items}}


def _go_dir(path: str) -> str:
    """Go's ``filepath.Dir``: the cleaned directory part, "." when there is none."""
    directory = posixpath.normpath(posixpath.dirname(path) or ".")
    return "/" + directory.lstrip("/") if directory.startswith("/") else directory


def _drop_none(values: Mapping[str, Any]) -> JSON:
    return {key: value for key, value in values.items() if value is not None}
