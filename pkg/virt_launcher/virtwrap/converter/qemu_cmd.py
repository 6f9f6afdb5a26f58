"""``<qemu:commandline>``: QEMU arguments libvirt has no element for (Ignition config via fw_cfg)."""

from __future__ import annotations

from .. import api
from .conversion import Conversion

IGNITION_ANNOTATION = "kubevirt.io/ignitiondata"
IGNITION_DIR = "/var/run/libvirt/ignition-dir"


def configure_qemu_commandline(c: Conversion) -> None:
    annotations = (c.vmi.metadata.annotations if c.vmi.metadata else None) or {}
    if "ignition" not in annotations.get(IGNITION_ANNOTATION, ""):
        return  # KubeVirt only passes data that looks like an Ignition config
    path = f"{IGNITION_DIR}/{c.namespace}/{c.vmi_name}/data.ign"
    c.domain.qemu_commandline = api.Commandline(
        args=[api.QEMUArg(value="-fw_cfg"), api.QEMUArg(value=f"name=opt/com.coreos/config,file={path}")]
    )
