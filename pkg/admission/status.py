"""The status subresource admitter (``/status-validate``): a VM's ``status.volumeRequests``."""

from __future__ import annotations

from kubevirt.admission import causes as c
from kubevirt.admission import vmi_spec
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import has, items, obj, opt_obj, text
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON

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


def is_migrating(vmi: JSON) -> bool:
    """KubeVirt's ``IsMigrating``: the migration state has a start and no end yet."""
    state = obj(obj(vmi, "status"), "migrationState")
    return has(state, "startTimestamp") and not has(state, "endTimestamp")


def admit_vm_status(vm: JSON, config: ClusterConfig, *, running_vmi: JSON | None = None) -> list[StatusCause]:
    """The causes for a VM's ``status.volumeRequests``.

    ``running_vmi`` is the VM's VMI when the VM is ready and the VMI is not being deleted: the requests
    must also fit it, and none are taken while it migrates.
    """
    requests = items(obj(vm, "status"), "volumeRequests")
    if not requests:
        return []
    spec = obj(obj(obj(vm, "spec"), "template"), "spec")
    template_volumes = {text(v, "name"): v for v in items(spec, "volumes")}
    vmi_spec_now = obj(running_vmi, "spec") if running_vmi is not None else None
    vmi_volumes = {text(v, "name"): v for v in items(vmi_spec_now, "volumes")}
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
            running = vmi_volumes.get(name)
            if running is not None and running != wanted:
                message = (
                    f"AddVolume request for [{name}] conflicts with an existing volume of the same name "
                    "on currently running vmi"
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
        if vmi_spec_now is not None:
            vmi_spec_now = _apply_request(vmi_spec_now, request)
    template_path = Path("spec", "template", "spec")
    causes = vmi_spec.validate_spec(template_path, spec, config)
    if causes or running_vmi is None or vmi_spec_now is None:
        return causes
    # KubeVirt reports the running VMI's spec under the template's path too.
    causes = vmi_spec.validate_spec(template_path, vmi_spec_now, config)
    if causes:
        return causes
    if is_migrating(running_vmi):
        return [
            c.not_supported(Path("spec"), "Cannot handle volume requests while VMI migration is in progress")
        ]
    return []
