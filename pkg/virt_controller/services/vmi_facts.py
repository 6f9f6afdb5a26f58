"""Questions about a defaulted VMI that several parts of the pod depend on (KubeVirt's ``pkg/util``)."""

from __future__ import annotations

from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.constants import DEPRECATED_NON_ROOT_VMI_ANNOTATION
from kubevirt_api.core.v1.domain import CPU, Devices, KernelBootContainer

NON_ROOT_UID = 107
ROOT_UID = 0


def vmi_annotations(vmi: VirtualMachineInstance) -> dict[str, str]:
    return dict((vmi.metadata.annotations if vmi.metadata is not None else None) or {})


def vmi_labels(vmi: VirtualMachineInstance) -> dict[str, str]:
    return dict((vmi.metadata.labels if vmi.metadata is not None else None) or {})


def devices(vmi: VirtualMachineInstance) -> Devices:
    return vmi.spec.domain.devices


def is_non_root(vmi: VirtualMachineInstance) -> bool:
    runtime_user = vmi.status.runtime_user if vmi.status is not None else None
    return DEPRECATED_NON_ROOT_VMI_ANNOTATION in vmi_annotations(vmi) or bool(runtime_user)


def vcpu_count(cpu: CPU) -> int:
    """sockets * cores * threads, where an unset (zero) factor is skipped (0 when all are unset)."""
    count = cpu.cores or 0
    for factor in (cpu.sockets or 0, cpu.threads or 0):
        if factor:
            count = factor if count == 0 else count * factor
    return count


def wants_guaranteed_qos(vmi: VirtualMachineInstance) -> bool:
    return vmi.wants_to_have_qos_guaranteed()


def needs_dedicated_resources(vmi: VirtualMachineInstance) -> bool:
    """Dedicated CPUs or guaranteed QoS: the support containers request what they limit."""
    return vmi.is_cpu_dedicated() or wants_guaranteed_qos(vmi)


def has_sriov_interface(vmi: VirtualMachineInstance) -> bool:
    return any(iface.sriov is not None for iface in devices(vmi).interfaces or [])


def uses_vfio(vmi: VirtualMachineInstance) -> bool:
    dev = devices(vmi)
    return bool(dev.host_devices) or bool(dev.gpus) or has_sriov_interface(vmi)


def needs_tun_device(vmi: VirtualMachineInstance) -> bool:
    dev = devices(vmi)
    return bool(dev.interfaces) or dev.autoattach_pod_interface is not False


def wants_virtio_net_device(vmi: VirtualMachineInstance) -> bool:
    return any(iface.model in (None, "", "virtio") for iface in devices(vmi).interfaces or [])


def autoattaches_vsock(vmi: VirtualMachineInstance) -> bool:
    return devices(vmi).autoattach_vsock is True


def is_sev(vmi: VirtualMachineInstance) -> bool:
    security = vmi.spec.domain.launch_security
    return security is not None and security.sev is not None


def is_sev_es(vmi: VirtualMachineInstance) -> bool:
    security = vmi.spec.domain.launch_security
    sev = security.sev if security is not None else None
    return sev is not None and sev.policy is not None and sev.policy.encrypted_state is True


def is_secure_execution(vmi: VirtualMachineInstance) -> bool:
    return vmi.spec.domain.launch_security is not None and vmi.spec.architecture == "s390x"


def has_tpm(vmi: VirtualMachineInstance) -> bool:
    tpm = devices(vmi).tpm
    return tpm is not None and tpm.enabled is not False


def has_persistent_tpm(vmi: VirtualMachineInstance) -> bool:
    tpm = devices(vmi).tpm
    return has_tpm(vmi) and tpm is not None and tpm.persistent is True


def has_persistent_efi(vmi: VirtualMachineInstance) -> bool:
    firmware = vmi.spec.domain.firmware
    bootloader = firmware.bootloader if firmware is not None else None
    efi = bootloader.efi if bootloader is not None else None
    return efi is not None and efi.persistent is True


def needs_backend_storage(vmi: VirtualMachineInstance) -> bool:
    return has_persistent_tpm(vmi) or has_persistent_efi(vmi)


def has_downward_metrics_volume(vmi: VirtualMachineInstance) -> bool:
    return any(volume.downward_metrics is not None for volume in vmi.spec.volumes or [])


def has_persistent_reservation(vmi: VirtualMachineInstance) -> bool:
    return any(disk.lun is not None and bool(disk.lun.reservation) for disk in devices(vmi).disks or [])


def has_hugepages(vmi: VirtualMachineInstance) -> bool:
    memory = vmi.spec.domain.memory
    return memory is not None and memory.hugepages is not None


def kernel_boot_container(vmi: VirtualMachineInstance) -> KernelBootContainer | None:
    """The image holding the kernel and initrd to boot, if the VMI boots one."""
    firmware = vmi.spec.domain.firmware
    kernel_boot = firmware.kernel_boot if firmware is not None else None
    return kernel_boot.container if kernel_boot is not None else None


def has_container_disk(vmi: VirtualMachineInstance) -> bool:
    return any(volume.container_disk is not None for volume in vmi.spec.volumes or [])


def has_virtiofs(vmi: VirtualMachineInstance) -> bool:
    return any(fs.virtiofs is not None for fs in devices(vmi).filesystems or [])


def grace_period_seconds(vmi: VirtualMachineInstance) -> int:
    grace = vmi.spec.termination_grace_period_seconds
    return grace if grace is not None else 30


def hostname(vmi: VirtualMachineInstance) -> str:
    """The pod's hostname: ``spec.hostname``, else the VMI name's first DNS label cut to 63 characters."""
    if vmi.spec.hostname:
        return vmi.spec.hostname
    name = (vmi.metadata.name if vmi.metadata is not None else None) or ""
    return name.split(".")[0][:63]
