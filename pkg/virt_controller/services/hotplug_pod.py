"""The hotplug attachment pod (KubeVirt's ``RenderHotplugAttachmentPodTemplate``): a small pod of the
launcher image, pinned to the virt-launcher pod's node and owned by that pod, that mounts the claims of
hotplugged volumes so the kubelet attaches them to the node. virt-handler then takes each claim from the
attachment pod's volume directory into the launcher pod.

A block claim is a device at ``/path/<volume>/<claim uid>``, a filesystem claim a mount at ``/<volume>``
(left out once the volume is mounted into the launcher, ``MountedToPod`` or ``Ready``, so a replacement
pod does not mount it again). The container only keeps the pod alive (``container-disk --copy-path``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubevirt.virt_controller.services import vmi_facts
from kubevirt.virt_controller.services.errors import TemplateError
from kubevirt.virt_controller.services.volumes import HOST_TO_CONTAINER, HOTPLUG_DISKS_VOLUME, empty_dir
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.constants import APP_LABEL
from kubevirt_api.core.v1.volumes import Volume, VolumePhase
from kubevirt_api.view import JSON, View

# The container's name and the pods' ``kubevirt.io`` label value.
HOTPLUG_DISK: Final = "hotplug-disk"
ATTACHMENT_POD_PREFIX: Final = "hp-volume-"
ATTACHMENT_MOUNT_PATH: Final = "/path"
ATTACHMENT_COMMAND: Final = ("/bin/sh", "-c", "/usr/bin/container-disk --copy-path /path/hp")
# Without an SELinux context of the VMI the level stays this one.
DEFAULT_SELINUX_LEVEL: Final = "s0"
# What virt-handler writes as the VMI's SELinux context on a host without SELinux.
NO_SELINUX_CONTEXT: Final = "none"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
# KubeVirt's defaults for the hotplug attachment container (``supportContainerResources`` may change them).
DEFAULT_LIMITS: Final = {"cpu": "100m", "memory": "80M"}
DEFAULT_REQUESTS: Final = {"cpu": "10m", "memory": "2M"}
_MOUNTED_PHASES: Final = (VolumePhase.VOLUME_READY, VolumePhase.HOTPLUG_VOLUME_MOUNTED)


class SELinuxContextError(TemplateError):
    """The VMI has no usable SELinux context to match the attachment pod's level to."""


def hotplug_container_resources(
    limits: Mapping[str, str] | None = None, requests: Mapping[str, str] | None = None
) -> JSON:
    """``hotplugContainerResourceRequirementsForVMI``: KubeVirt's defaults, each overridable."""
    return {
        "limits": {**DEFAULT_LIMITS, **(limits or {})},
        "requests": {**DEFAULT_REQUESTS, **(requests or {})},
    }


def claim_name_of(volume: Volume) -> str:
    """The claim of a PersistentVolumeClaim, DataVolume or memory-dump volume; empty for others."""
    if volume.persistent_volume_claim is not None:
        return volume.persistent_volume_claim.claim_name
    if volume.data_volume is not None:
        return volume.data_volume.name
    if volume.memory_dump is not None:
        return volume.memory_dump.claim_name
    return ""


def selinux_level(vmi: VirtualMachineInstance) -> str | None:
    """The level the attachment container must run at to share the launcher's disk images
    (``matchSELinuxLevelOfVMI``): the fourth field on of the VMI's SELinux context (or, while it has none,
    its migration source's); None where the host has no SELinux. Raises :class:`SELinuxContextError`."""
    status = vmi.status
    context = (status.selinux_context if status is not None else None) or ""
    if not context:
        migration = status.migration_state if status is not None else None
        source = migration.source_state if migration is not None else None
        source_context = (source.selinux_context if source is not None else None) or ""
        if not source_context:
            raise SELinuxContextError("VMI is missing SELinux context")
        context = source_context
    if context == NO_SELINUX_CONTEXT:
        return None
    fields = context.split(":")
    if len(fields) < 4:
        raise SELinuxContextError(f"VMI has invalid SELinux context: {context}")
    return ":".join(fields[3:])


def render_hotplug_attachment_pod(
    volumes: Sequence[Volume],
    owner_pod: Mapping[str, Any],
    vmi: VirtualMachineInstance,
    claims: Mapping[str, Mapping[str, Any]],
    *,
    launcher_image: str,
    selinux_launcher_type: str = "",
    resources: JSON | None = None,
) -> JSON:
    """The attachment pod for ``volumes`` of ``vmi``, owned by its launcher pod ``owner_pod``.

    ``claims`` maps volume names to their PersistentVolumeClaims (plain JSON); a volume without one still
    gets its pod volume, but no mount or device. Raises :class:`SELinuxContextError` when the VMI's SELinux
    context is missing or malformed."""
    owner = View.of(owner_pod)
    owner_meta, owner_spec = owner.object("metadata"), owner.object("spec")
    selinux: JSON = {"type": selinux_launcher_type} if selinux_launcher_type else {}
    selinux["level"] = DEFAULT_SELINUX_LEVEL
    level = selinux_level(vmi)
    if level is not None:
        selinux["level"] = level
    container: JSON = {
        "name": HOTPLUG_DISK,
        "image": launcher_image,
        "command": list(ATTACHMENT_COMMAND),
        "resources": resources if resources is not None else hotplug_container_resources(),
        "volumeMounts": [
            {
                "name": HOTPLUG_DISKS_VOLUME,
                "mountPath": ATTACHMENT_MOUNT_PATH,
                "mountPropagation": HOST_TO_CONTAINER,
            }
        ],
        "securityContext": {
            "capabilities": {"drop": ["ALL"]},
            "seLinuxOptions": selinux,
            "runAsUser": vmi_facts.NON_ROOT_UID,
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    pod_volumes: list[JSON] = [empty_dir(HOTPLUG_DISKS_VOLUME)]
    mounted = _mounted_volume_names(vmi)
    for volume in volumes:
        claim = claim_name_of(volume)
        if not claim:
            continue
        pod_volumes.append({"name": volume.name, "persistentVolumeClaim": {"claimName": claim}})
        pvc = claims.get(volume.name)
        if pvc is None:
            continue
        pvc_view = View.of(pvc)
        if pvc_view.object("spec").get("volumeMode") == "Block":
            uid = pvc_view.object("metadata").string("uid")
            device = {"name": volume.name, "devicePath": f"{ATTACHMENT_MOUNT_PATH}/{volume.name}/{uid}"}
            container.setdefault("volumeDevices", []).append(device)
        elif volume.name not in mounted:
            container["volumeMounts"].append({"name": volume.name, "mountPath": f"/{volume.name}"})
    tolerations = [copy.deepcopy(dict(t.data)) for t in owner_spec.items("tolerations")]
    pod: JSON = {
        "metadata": {
            "generateName": ATTACHMENT_POD_PREFIX,
            "labels": {APP_LABEL: HOTPLUG_DISK},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": owner_meta.string("name"),
                    "uid": owner_meta.string("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "volumes": pod_volumes,
            "containers": [container],
            "terminationGracePeriodSeconds": 0,
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": HOSTNAME_LABEL,
                                        "operator": "In",
                                        "values": [owner_spec.string("nodeName")],
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
        },
    }
    if tolerations:
        pod["spec"]["tolerations"] = tolerations
    return pod


def _mounted_volume_names(vmi: VirtualMachineInstance) -> set[str]:
    """Hotplugged volumes virt-handler already mounted into the launcher pod."""
    return {
        status.name
        for status in (vmi.status.volume_status if vmi.status is not None else None) or []
        if status.hotplug_volume is not None and status.phase in _MOUNTED_PHASES
    }
