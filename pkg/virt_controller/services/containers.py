"""The virt-launcher pod's containers: ``compute`` first, then container disks, the kernel-boot image and
virtiofs; the init containers stream the serial console log and pre-pull the container disks."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from kubevirt import pod_paths
from kubevirt.virt_controller.services import vmi_facts
from kubevirt.virt_controller.services.resources import (
    ResourceRequirements,
    container_disk_binary_resources,
    container_disk_resources,
    guest_console_log_resources,
    virtiofs_resources,
)
from kubevirt.virt_controller.services.volumes import (
    KERNEL_BOOT_NAME,
    SERVICE_ACCOUNT_SOURCE_DIR,
    VIRT_BIN_VOLUME,
    VIRTIOFS_CONTAINERS_VOLUME,
    VolumeLayout,
    config_map_source_path,
    downward_api_source_path,
    secret_source_path,
)
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.volumes import ContainerDiskSource
from kubevirt_api.view import JSON

COMPUTE = "compute"
FALLBACK_TO_LOGS = "FallbackToLogsOnError"
EXTENSIVE_LOG_VERBOSITY = 5
LIBVIRT_STARTUP_DELAY_SECONDS = 10
_DROP_ALL = {"drop": ["ALL"]}


def xdg_environment() -> list[JSON]:
    return [
        {"name": "XDG_CACHE_HOME", "value": pod_paths.VIRT_PRIVATE_DIR},
        {"name": "XDG_CONFIG_HOME", "value": pod_paths.VIRT_PRIVATE_DIR},
        {"name": "XDG_RUNTIME_DIR", "value": "/var/run"},
    ]


def security_context(user: int, *, privileged: bool = False, capabilities: JSON | None = None) -> JSON:
    """KubeVirt's container security context for a user (root when 0)."""
    context: JSON = {}
    if capabilities is not None:
        context["capabilities"] = capabilities
    context["privileged"] = privileged
    context["runAsUser"] = user
    non_root = user != 0
    if non_root:
        context["runAsGroup"] = user
    context["runAsNonRoot"] = non_root
    if non_root:
        context["allowPrivilegeEscalation"] = privileged
    return context


def _unprivileged_context(*, group: bool = False) -> JSON:
    context: JSON = {"capabilities": dict(_DROP_ALL), "runAsUser": vmi_facts.NON_ROOT_UID}
    if group:
        context["runAsGroup"] = vmi_facts.NON_ROOT_UID
    context.update(runAsNonRoot=True, allowPrivilegeEscalation=False)
    return context


@dataclass(frozen=True)
class ComputeInputs:
    command: list[str]
    env: list[JSON]
    image: str
    pull_policy: str
    user: int
    privileged: bool


def compute_container(
    vmi: VirtualMachineInstance, inputs: ComputeInputs, layout: VolumeLayout, resources: ResourceRequirements
) -> JSON:
    non_root = inputs.user != 0
    capabilities: JSON = {"add": ["NET_BIND_SERVICE"] if non_root else ["NET_BIND_SERVICE", "SYS_NICE"]}
    if non_root:
        capabilities["drop"] = ["ALL"]
    env: list[JSON] = xdg_environment() if non_root else []
    if layout.shared_filesystem_paths:
        env.append({"name": "SHARED_FILESYSTEM_PATHS", "value": ":".join(layout.shared_filesystem_paths)})
    env += inputs.env
    container: JSON = {"name": COMPUTE, "image": inputs.image, "command": inputs.command}
    ports = container_ports(vmi)
    if ports:
        container["ports"] = ports
    container["env"] = env
    container["resources"] = resources.to_json()
    container["volumeMounts"] = layout.mounts
    if layout.devices:
        container["volumeDevices"] = layout.devices
    for key, probe in (
        ("livenessProbe", vmi.spec.liveness_probe),
        ("readinessProbe", vmi.spec.readiness_probe),
    ):
        if probe is not None:
            container[key] = _launcher_probe(vmi, probe.to_dict())
    container["terminationMessagePolicy"] = FALLBACK_TO_LOGS
    container["imagePullPolicy"] = inputs.pull_policy
    container["securityContext"] = security_context(
        inputs.user, privileged=inputs.privileged, capabilities=capabilities
    )
    return container


def container_ports(vmi: VirtualMachineInstance) -> list[JSON]:
    ports: list[JSON] = []
    for iface in vmi_facts.devices(vmi).interfaces or []:
        for port in iface.ports or []:
            entry: JSON = {}
            if port.name:
                entry["name"] = port.name
            entry["containerPort"] = port.port
            entry["protocol"] = port.protocol or "TCP"
            ports.append(entry)
    return ports


def _launcher_probe(vmi: VirtualMachineInstance, probe: JSON) -> JSON:
    """The VMI's probe as the kubelet runs it: exec and guest-agent pings go through virt-probe."""
    probe = {**probe}
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    domain = f"{vmi.metadata.namespace if vmi.metadata else ''}_{vmi.metadata.name if vmi.metadata else ''}"
    ping = probe.pop("guestAgentPing", None)
    exec_ = probe.get("exec")
    timeout = int(probe["timeoutSeconds"])
    if ping is not None:
        command = ["virt-probe", "--domainName", domain, "--timeoutSeconds", str(timeout), "--guestAgentPing"]
        probe["exec"] = {"command": command}
        probe["timeoutSeconds"] = timeout + 1
    elif isinstance(exec_, dict):
        original = exec_.get("command") or []
        if original and original[0] != "virt-probe":
            wrapped = ["virt-probe", "--domainName", domain, "--timeoutSeconds", str(timeout)]
            probe["exec"] = {"command": [*wrapped, "--command", original[0], "--", *original[1:]]}
            probe["timeoutSeconds"] = timeout + 1
    probe["initialDelaySeconds"] = int(probe.get("initialDelaySeconds", 0)) + LIBVIRT_STARTUP_DELAY_SECONDS
    return probe


# -- container disks ----------------------------------------------------------------------------------


def _container_disk_container(
    vmi: VirtualMachineInstance, name: str, disk: ContainerDiskSource, mounted_as: str, *, init: bool
) -> JSON:
    """One image holding a disk (or kernel/initrd); the init variant only makes the kubelet pull it."""
    uid = (vmi.metadata.uid if vmi.metadata is not None else None) or ""
    mount_dir = posixpath.join(pod_paths.CONTAINER_DISK_DATA_DIR, uid)
    container: JSON = {
        "name": f"volume{name}-init" if init else f"volume{name}",
        "command": ["/usr/bin/container-disk"],
        "args": ["--no-op"] if init else ["--copy-path", posixpath.join(mount_dir, mounted_as)],
        "resources": container_disk_resources(vmi).to_json(),
        "volumeMounts": [
            {"name": pod_paths.CONTAINER_DISKS, "mountPath": mount_dir},
            {"name": VIRT_BIN_VOLUME, "mountPath": "/usr/bin"},
        ],
    }
    if disk.image:  # an empty image is left out, as Go's encoder does
        container["image"] = disk.image
    if disk.image_pull_policy:
        container["imagePullPolicy"] = disk.image_pull_policy
    container["securityContext"] = _unprivileged_context()
    return container


def _kernel_boot_disk(vmi: VirtualMachineInstance) -> ContainerDiskSource | None:
    image = vmi_facts.kernel_boot_container(vmi)
    if image is None:
        return None
    return ContainerDiskSource(
        image=image.image,
        image_pull_secret=image.image_pull_secret,
        path="/",
        image_pull_policy=image.image_pull_policy,
    )


def container_disk_containers(vmi: VirtualMachineInstance, *, init: bool) -> list[JSON]:
    """One container per containerDisk volume (named after the volume), then the kernel-boot image."""
    containers = [
        _container_disk_container(vmi, volume.name, volume.container_disk, f"disk_{index}", init=init)
        for index, volume in enumerate(vmi.spec.volumes or [])
        if volume.container_disk is not None and volume.name != pod_paths.KERNEL_BOOT_VOLUME
    ]
    kernel_boot = _kernel_boot_disk(vmi)
    if kernel_boot is not None:
        containers.append(
            _container_disk_container(
                vmi, pod_paths.KERNEL_BOOT_VOLUME, kernel_boot, KERNEL_BOOT_NAME, init=init
            )
        )
    return containers


def container_disk_binary_container(vmi: VirtualMachineInstance, inputs: ComputeInputs) -> JSON:
    """Copies the container-disk binary where the disk containers (whose images lack it) find it."""
    container: JSON = {
        "name": "container-disk-binary",
        "image": inputs.image,
        "command": ["/usr/bin/cp", "/usr/bin/container-disk", "/init/usr/bin/container-disk"],
    }
    if inputs.user != 0:
        container["env"] = xdg_environment()
    container["resources"] = container_disk_binary_resources(vmi).to_json()
    container["volumeMounts"] = [{"name": VIRT_BIN_VOLUME, "mountPath": "/init/usr/bin"}]
    container["terminationMessagePolicy"] = FALLBACK_TO_LOGS
    container["imagePullPolicy"] = inputs.pull_policy
    container["securityContext"] = security_context(
        inputs.user, privileged=inputs.privileged, capabilities=dict(_DROP_ALL)
    )
    return container


# -- serial console log and virtiofs ------------------------------------------------------------------


def serial_console_logging(vmi: VirtualMachineInstance, cluster_disabled: bool) -> bool:
    devices = vmi_facts.devices(vmi)
    if devices.autoattach_serial_console is False:
        return False
    if devices.log_serial_console is not None:
        return devices.log_serial_console
    return not cluster_disabled


def guest_console_log_container(
    vmi: VirtualMachineInstance, image: str, pull_policy: str, verbosity: int
) -> JSON:
    """A restartable init container (a sidecar) that streams the serial console log."""
    uid = (vmi.metadata.uid if vmi.metadata is not None else None) or ""
    log_file = f"{pod_paths.vmi_private_dir(uid)}/{pod_paths.SERIAL_CONSOLE_LOG}"
    return {
        "name": "guest-console-log",
        "image": image,
        "command": ["/usr/bin/virt-tail"],
        "args": ["--logfile", log_file],
        "env": [{"name": "VIRT_LAUNCHER_LOG_VERBOSITY", "value": str(verbosity)}],
        "resources": guest_console_log_resources(vmi).to_json(),
        "restartPolicy": "Always",
        "volumeMounts": [
            {"name": pod_paths.PRIVATE_VOLUME, "readOnly": True, "mountPath": pod_paths.VIRT_PRIVATE_DIR}
        ],
        "imagePullPolicy": pull_policy,
        "securityContext": _unprivileged_context(),
    }


def _virtiofs_mount_point(volume: Any) -> str:
    if volume.config_map is not None:
        return config_map_source_path(volume.name)
    if volume.secret is not None:
        return secret_source_path(volume.name)
    if volume.service_account is not None:
        return SERVICE_ACCOUNT_SOURCE_DIR
    if volume.downward_api is not None:
        return downward_api_source_path(volume.name)
    return f"/{volume.name}"


def virtiofs_containers(vmi: VirtualMachineInstance, image: str) -> list[JSON]:
    """One virtiofsd per shared filesystem, in volume order."""
    shared = {fs.name for fs in vmi_facts.devices(vmi).filesystems or []}
    containers: list[JSON] = []
    for volume in vmi.spec.volumes or []:
        if volume.name not in shared:
            continue
        source = _virtiofs_mount_point(volume)
        socket = posixpath.join(pod_paths.VIRTIOFS_CONTAINERS_DIR, f"{volume.name}.sock")
        mounts: list[JSON] = [
            {"name": VIRTIOFS_CONTAINERS_VOLUME, "mountPath": pod_paths.VIRTIOFS_CONTAINERS_DIR}
        ]
        if volume.service_account is None:  # the kubelet mounts the token itself
            mounts.append({"name": volume.name, "mountPath": source})
        containers.append(
            {
                "name": f"virtiofs-{volume.name}",
                "image": image,
                "command": ["/usr/libexec/virtiofsd"],
                "args": [
                    f"--socket-path={socket}",
                    f"--shared-dir={source}",
                    "--sandbox=none",
                    "--cache=auto",
                    "--migration-on-error=guest-error",
                    "--migration-mode=find-paths",
                ],
                "resources": virtiofs_resources(vmi).to_json(),
                "volumeMounts": mounts,
                "imagePullPolicy": "IfNotPresent",
                "securityContext": _unprivileged_context(group=True),
            }
        )
    return containers
