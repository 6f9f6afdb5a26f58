"""Admitter for VirtualMachineInstancePresets (``vmi-preset-admitter.go``): a preset needs a domain whose
disks and firmware would be valid on a VMI."""

from __future__ import annotations

from kubevirt.admission import causes as c
from kubevirt.admission import vmi_devices, vmi_spec
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import items, obj, opt_obj
from kubevirt_api.view import JSON


def admit_preset(preset: JSON) -> list[StatusCause]:
    field = Path("spec")
    domain = opt_obj(obj(preset, "spec"), "domain")
    if domain is None:
        return [c.required(field.child("domain"), "missing domain.")]
    where = field.child("domain")
    out = vmi_devices.disks(where.child("devices", "disks"), items(obj(domain, "devices"), "disks"))
    out.extend(vmi_spec.validate_firmware(where.child("firmware"), opt_obj(domain, "firmware")))
    return out
