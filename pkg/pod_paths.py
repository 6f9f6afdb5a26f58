"""The virt-launcher pod's filesystem layout, the contract between the components: virt-controller mounts
these directories, virt-launcher and its converter put files and sockets there and name them in the
domain, virt-handler reaches them through the pod's root (and mounts the node's share and private
directories at the same paths, so they are its defaults too).

The values are KubeVirt's byte for byte: they appear in the pod spec and the domain XML. Code that takes a
directory as a flag or option (the launcher's storage, tests) joins the relative names to it; everything
else uses the absolute paths.
"""

from typing import Final

# The pod's top-level directories (KubeVirt's ``pkg/util`` and the components' flag defaults).
VIRT_SHARE_DIR: Final = "/var/run/kubevirt"
VIRT_PRIVATE_DIR: Final = "/var/run/kubevirt-private"
EPHEMERAL_DISK_DIR: Final = "/var/run/kubevirt-ephemeral-disks"
LIBVIRT_RUNTIME_DIR: Final = "/var/run/libvirt"
# With the ImageVolume gate: containerDisk images and the kernel-boot image as image volumes.
IMAGE_VOLUME_DIR: Final = "/var/run/kubevirt-image-volume"
KERNEL_BOOT_VOLUME_DIR: Final = "/var/run/kubevirt-kernel-boot"
# Persistent TPM and EFI state's metadata; KubeVirt spells this one under /run.
BACKEND_STORAGE_META_DIR: Final = "/run/kubevirt-private/backend-storage-meta"

# The pod's emptyDirs that virt-handler reaches on the node by name
# (``<kubelet pods dir>/<pod uid>/volumes/kubernetes.io~empty-dir/<name>``).
PRIVATE_VOLUME: Final = "private"  # mounted at VIRT_PRIVATE_DIR
SOCKETS: Final = "sockets"  # the launcher's command sockets, mounted at <share dir>/sockets
CONTAINER_DISKS: Final = "container-disks"  # mounted at CONTAINER_DISK_DIR

# In the share directory.
CONTAINER_DISK_DIR: Final = f"{VIRT_SHARE_DIR}/{CONTAINER_DISKS}"
HOTPLUG_DISK_DIR: Final = f"{VIRT_SHARE_DIR}/hotplug-disks"
VIRTIOFS_CONTAINERS_DIR: Final = f"{VIRT_SHARE_DIR}/virtiofs-containers"
PR_HELPER_SOCKET: Final = f"{VIRT_SHARE_DIR}/daemons/pr/pr-helper.sock"

# In the container-disk directory (besides the images, ``disk_<N>.img``): a kernel-boot image's files,
# served by the container of the VMI's volume named KERNEL_BOOT_VOLUME.
KERNEL_BOOT: Final = "kernel-boot"
KERNEL_BOOT_DIR: Final = f"{CONTAINER_DISK_DIR}/{KERNEL_BOOT}"
KERNEL_BOOT_VOLUME: Final = f"{KERNEL_BOOT}-volume"

# In the ephemeral-disk directory.
DISK_DATA: Final = "disk-data"  # each containerDisk's qcow2 overlay, by volume
CLOUD_INIT_DATA: Final = "cloud-init-data"  # cloud-init ISOs, by namespace and VMI name
DISK_DATA_DIR: Final = f"{EPHEMERAL_DISK_DIR}/{DISK_DATA}"
CLOUD_INIT_DATA_DIR: Final = f"{EPHEMERAL_DISK_DIR}/{CLOUD_INIT_DATA}"
CONTAINER_DISK_DATA_DIR: Final = f"{EPHEMERAL_DISK_DIR}/container-disk-data"

# In libvirt's runtime directory.
EMPTY_DISKS: Final = "empty-disks"
EMPTY_DISK_DIR: Final = f"{LIBVIRT_RUNTIME_DIR}/{EMPTY_DISKS}"

# In the private directory, per VMI (``<vmi uid>/``): QEMU's console, VNC and USB redirection sockets.
SERIAL_SOCKET: Final = "virt-serial0"
SERIAL_CONSOLE_LOG: Final = f"{SERIAL_SOCKET}-log"  # the console's output, kept for virt-tail
VNC_SOCKET: Final = "virt-vnc"
USB_REDIRECT_SOCKET_PREFIX: Final = "virt-usbredir-"  # + the device's index

# In the private directory: the kubelet's mounts of PVCs and host disks and of config volumes by kind,
# and the ISO images made of the latter.
VMI_DISKS: Final = "vmi-disks"
CONFIG_MAP: Final = "config-map"
SECRET: Final = "secret"
DOWNWARD_API: Final = "downwardapi"
SYSPREP: Final = "sysprep"
CONFIG_MAP_DISKS: Final = "config-map-disks"
SECRET_DISKS: Final = "secret-disks"
DOWNWARD_API_DISKS: Final = "downwardapi-disks"
SERVICE_ACCOUNT_DISK: Final = "service-account-disk"
SYSPREP_DISKS: Final = "sysprep-disks"
LIBVIRT: Final = "libvirt"  # the launcher's own libvirtd: its runtime directory
VMI_DISKS_DIR: Final = f"{VIRT_PRIVATE_DIR}/{VMI_DISKS}"
CONFIG_MAP_SOURCE_DIR: Final = f"{VIRT_PRIVATE_DIR}/{CONFIG_MAP}"
SECRET_SOURCE_DIR: Final = f"{VIRT_PRIVATE_DIR}/{SECRET}"
DOWNWARD_API_SOURCE_DIR: Final = f"{VIRT_PRIVATE_DIR}/{DOWNWARD_API}"
SYSPREP_SOURCE_DIR: Final = f"{VIRT_PRIVATE_DIR}/{SYSPREP}"
DOWNWARD_METRICS_DISK_DIR: Final = f"{VIRT_PRIVATE_DIR}/downwardmetric-disk"
DOWNWARD_METRICS_DISK: Final = f"{VIRT_PRIVATE_DIR}/{DOWNWARD_API_DISKS}/vhostmd0"
DOWNWARD_METRICS_SOCKET: Final = f"{VIRT_PRIVATE_DIR}/downwardmetrics-channel/downwardmetrics.sock"
LIBVIRT_DIR: Final = f"{VIRT_PRIVATE_DIR}/{LIBVIRT}"
LIBVIRT_SOCKET_DIR: Final = f"{LIBVIRT_DIR}/sock"
NON_ROOT_NVRAM_DIR: Final = f"{LIBVIRT_DIR}/qemu/nvram"
# virt-handler's own private directory on the node: what it mounted for which VMI, across restarts.
CONTAINER_DISK_MOUNT_STATE_DIR: Final = f"{VIRT_PRIVATE_DIR}/container-disk-mount-state"


def vmi_private_dir(vmi_uid: str) -> str:
    """The VMI's own directory in the pod's private directory (its QEMU sockets and console log)."""
    return f"{VIRT_PRIVATE_DIR}/{vmi_uid}"
