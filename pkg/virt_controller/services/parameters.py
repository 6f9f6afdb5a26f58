"""What the template service is configured with besides the cluster configuration.

virt-controller takes these from its flags; the defaults are virt-controller's own flag defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubevirt import pod_paths

DEFAULT_LAUNCHER_IMAGE = "virt-launcher"
DEFAULT_EXPORTER_IMAGE = "virt-exportserver"
DEFAULT_LAUNCHER_QEMU_TIMEOUT_SECONDS = 240
DEFAULT_LAUNCHER_SUBGID = 107

# A PersistentVolumeClaim (plain JSON) by claim name in the VMI's namespace, or None when it does not exist.
PvcLookup = Callable[[str], Mapping[str, Any] | None]


@dataclass(frozen=True, kw_only=True)
class TemplateParameters:
    """virt-controller's flags that shape the virt-launcher pod (and the export server pod's image)."""

    launcher_image: str = DEFAULT_LAUNCHER_IMAGE
    exporter_image: str = DEFAULT_EXPORTER_IMAGE
    # KubeVirt adds a random 0-119 s to each pod's timeout; the caller picks it (the jitter below).
    launcher_qemu_timeout_seconds: int = DEFAULT_LAUNCHER_QEMU_TIMEOUT_SECONDS
    qemu_timeout_jitter_seconds: int = 0
    virt_share_dir: str = pod_paths.VIRT_SHARE_DIR
    ephemeral_disk_dir: str = pod_paths.EPHEMERAL_DISK_DIR
    container_disk_dir: str = pod_paths.CONTAINER_DISK_DIR
    hotplug_disk_dir: str = pod_paths.HOTPLUG_DISK_DIR
    image_pull_secret: str = ""
    launcher_subgid: int = DEFAULT_LAUNCHER_SUBGID
