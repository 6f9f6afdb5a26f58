"""``virtctl render --launcher-pod``: the virt-launcher pod virt-controller would create for a VMI, offline.

What a cluster would supply is stood in for: every PVC the VMI names exists, is bound and ReadWriteOnce,
in block mode for the volumes given as block volumes; the launcher image is the one this project builds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kubevirt.virt_config import LauncherSettings
from kubevirt.virt_controller.services import (
    PvcLookup,
    TemplateError,
    TemplateParameters,
    render_launcher_pod,
)
from kubevirt.virtctl.manifests import RenderOptions, cluster_config
from kubevirt.virtctl.offline_vmi import default_vmi
from kubevirt_api.core.v1 import VirtualMachineInstance

__all__ = ["LAUNCHER_IMAGE", "TemplateError", "render_pod", "stand_in_pvcs"]

LAUNCHER_IMAGE = "localhost/kubevirt/virt-launcher:devel"


def stand_in_pvcs(vmi: VirtualMachineInstance, block_volumes: frozenset[str]) -> PvcLookup:
    """A lookup finding a bound ReadWriteOnce claim for any name; block mode where its volume is listed."""
    block_claims: set[str] = set()
    for volume in vmi.spec.volumes or []:
        if volume.name not in block_volumes:
            continue
        if volume.persistent_volume_claim is not None:
            block_claims.add(volume.persistent_volume_claim.claim_name)
        if volume.data_volume is not None:
            block_claims.add(volume.data_volume.name)
        if volume.ephemeral is not None and volume.ephemeral.persistent_volume_claim is not None:
            block_claims.add(volume.ephemeral.persistent_volume_claim.claim_name)

    def find(claim_name: str) -> Mapping[str, Any]:
        mode = "Block" if claim_name in block_claims else "Filesystem"
        return {
            "metadata": {"name": claim_name, "namespace": (vmi.metadata.namespace if vmi.metadata else None)},
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": mode},
            "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"]},
        }

    return find


def render_pod(raw: Mapping[str, Any], options: RenderOptions | None = None) -> dict[str, Any]:
    """Manifest → defaulted VMI → launcher pod. Raises ``RenderError`` or ``TemplateError``."""
    options = options if options is not None else RenderOptions()
    vmi = default_vmi(raw, options)
    # Software emulation (a node without /dev/kvm) is what useEmulation configures for the pod.
    launcher = LauncherSettings(use_emulation=options.domain_type == "qemu")
    cluster = replace(cluster_config(options), launcher=launcher)
    return render_launcher_pod(
        vmi,
        cluster,
        TemplateParameters(launcher_image=LAUNCHER_IMAGE),
        stand_in_pvcs(vmi, options.block_volumes),
        backend_storage_pvc=f"persistent-state-for-{vmi.metadata.name if vmi.metadata else ''}",
    )
