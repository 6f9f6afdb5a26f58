"""The status subresource admitter (``/status-validate``): a VM's ``status.volumeRequests``."""

from __future__ import annotations

from kubevirt.admission import causes as c
from kubevirt.admission import vmi_spec
from kubevirt.admission._json import JSON, has, items, obj, opt_obj, text
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.config import ClusterConfig
from kubevirt.admission.field import Path

_FIELD = "Status.volumeRequests"


def _disk_causes(disk: JSON | None, name: str) -> list[StatusCause]:
    if disk is None:
        return [c.invalid(_FIELD, f"AddVolume request for [{name}] requires the disk field to be set.")]
    target = opt_obj(disk, "disk") or opt_obj(disk, "lun")
    if target is None:
        message = f"AddVolume request for [{name}] requires diskDevice of type 'disk' or 'lun' to be used."
        return [c.invalid(_FIELD, message)]
    bus = text(target, "bus")
    if bus != "scsi":
        message = f"AddVolume request for [{name}] requires disk bus to be 'scsi'. [{bus}] is not permitted"
        return [c.invalid(_FIELD, message)]
    if disk.get("dedicatedIOThread") is True:
        return [c.invalid(_FIELD, "IOThreads are not supported by scsi bus.")]
    return []


def _apply_request(spec: JSON, request: JSON) -> JSON:
    """The template spec with one add/remove volume request applied."""
    volumes = list(items(spec, "volumes"))
    disks = list(items(obj(obj(spec, "domain"), "devices"), "disks"))
    add, remove = opt_obj(request, "addVolumeOptions"), opt_obj(request, "removeVolumeOptions")
    if add is not None:
        name = text(add, "name")
        source = obj(add, "volumeSource")
        volume: JSON = {"name": name}
        for key in ("persistentVolumeClaim", "dataVolume"):
            if has(source, key):
                volume[key] = source[key]
        volumes = [v for v in volumes if text(v, "name") != name] + [volume]
        disk = dict(obj(add, "disk"))
        disk["name"] = name
        disks = [d for d in disks if text(d, "name") != name] + [disk]
    elif remove is not None:
        name = text(remove, "name")
        volumes = [v for v in volumes if text(v, "name") != name]
        disks = [d for d in disks if text(d, "name") != name]
    domain = dict(obj(spec, "domain"))
    domain["devices"] = {**obj(domain, "devices"), "disks": disks}
    return {**spec, "volumes": volumes, "domain": domain}


def admit_vm_status(vm: JSON, config: ClusterConfig, *, vmi_migrating: bool = False) -> list[StatusCause]:
    requests = items(obj(vm, "status"), "volumeRequests")
    if not requests:
        return []
    spec = obj(obj(obj(vm, "spec"), "template"), "spec")
    template_volumes = {text(v, "name"): v for v in items(spec, "volumes")}
    added: set[str] = set()
    removed: set[str] = set()
    for request in requests:
        add, remove = opt_obj(request, "addVolumeOptions"), opt_obj(request, "removeVolumeOptions")
        if add is not None and remove is not None:
            message = (
                "VolumeRequests require either addVolumeOptions or removeVolumeOptions to be set, not both"
            )
            return [c.invalid(_FIELD, message)]
        if add is not None:
            name = text(add, "name")
            if name in added:
                return [c.invalid(_FIELD, f"AddVolume request for [{name}] aleady exists")]
            causes = _disk_causes(opt_obj(add, "disk"), name)
            if causes:
                return causes
            existing = template_volumes.get(name)
            wanted = _apply_request({"volumes": []}, request)["volumes"][0]
            if existing is not None and existing != wanted:
                message = (
                    f"AddVolume request for [{name}] conflicts with an existing volume of the same name "
                    "on the vmi template."
                )
                return [c.invalid(_FIELD, message)]
            added.add(name)
        elif remove is not None:
            name = text(remove, "name")
            if name in removed:
                return [c.invalid(_FIELD, f"RemoveVolume request for [{name}] aleady exists")]
            removed.add(name)
        else:
            message = "VolumeRequests require one of either addVolumeOptions or removeVolumeOptions to be set"
            return [c.invalid(_FIELD, message)]
        spec = _apply_request(spec, request)
    causes = vmi_spec.validate_spec(Path("spec", "template", "spec"), spec, config)
    if causes:
        return causes
    if vmi_migrating:
        return [
            c.not_supported(Path("spec"), "Cannot handle volume requests while VMI migration is in progress")
        ]
    return []
