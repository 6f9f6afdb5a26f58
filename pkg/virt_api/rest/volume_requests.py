"""Volume hotplug requests as virt-api reads and applies them: the AddVolumeOptions and RemoveVolumeOptions
bodies, the checks against a spec's volumes and pending requests, and the JSON patches that carry them.

Every patch begins with ``test`` operations on the lists it rewrites, so a request that raced with
another change fails at the API server instead of overwriting it. The lists are tested as stored and
rewritten whole (``replace``, or ``add`` when there were none), as KubeVirt does. Requests are held as
the JSON Go's encoder writes for them, so what lands in ``status.volumeRequests`` is what KubeVirt writes.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from kubevirt import hotplug_volumes
from kubevirt.hotplug_volumes import DV, PVC
from kubevirt.virt_api.rest.bodies import (
    MAX_BODY_BYTES,
    STRINGS,
    expanded_too_far,
    fits,
    kept_size,
    not_an_object,
    parse_body,
    refuse,
    type_mismatch,
)
from kubevirt.virt_api.rest.status import bad_request
from kubevirt_api.base import ApiModel, ApiParseError
from kubevirt_api.core.v1 import Disk, HotplugVolumeSource
from kubevirt_api.gojson import to_go_json
from kubevirt_api.view import JSON

Patch = list[JSON]

ADD_OPTIONS, REMOVE_OPTIONS = "AddVolumeOptions", "RemoveVolumeOptions"
DRY_RUN_ALL = "All"


class VolumeRequestError(ValueError):
    """The request does not fit the volumes or the requests already there (KubeVirt answers 409)."""


@dataclass(frozen=True)
class VolumeRequest:
    """One ``VirtualMachineVolumeRequest``: exactly one of ``add`` (AddVolumeOptions) or ``remove``
    (RemoveVolumeOptions), each as Go's encoder writes it."""

    add: JSON | None = None
    remove: JSON | None = None

    @property
    def name(self) -> str:
        return str((self.add or self.remove or {})["name"])

    @property
    def dry_run(self) -> bool:
        """KubeVirt passes the options' dryRun on only when its first value is ``All``."""
        values = (self.add or self.remove or {}).get("dryRun") or []
        return bool(values) and values[0] == DRY_RUN_ALL

    def to_json(self) -> JSON:
        if self.add is not None:
            return {"addVolumeOptions": copy.deepcopy(self.add)}
        return {"removeVolumeOptions": copy.deepcopy(self.remove)}


# -- bodies ---------------------------------------------------------------------------------------------


def decode_add_volume(body: bytes) -> VolumeRequest:
    """The add request in ``body``; the disk takes the volume's name and the source is hotpluggable.
    A body that cannot be read, or lacks a name, a disk or a source, is a 400."""
    document = _document(ADD_OPTIONS, body)
    name = _string(ADD_OPTIONS, document, "name")
    dry_run = _dry_run(ADD_OPTIONS, document)
    disk = _struct(document, "disk", Disk, "v1.Disk", {"name": name})
    source = _struct(document, "volumeSource", HotplugVolumeSource, "v1.HotplugVolumeSource", {})
    if not name:
        raise bad_request("AddVolumeOptions requires name to be set")
    if disk is None:
        raise bad_request("AddVolumeOptions requires disk to not be nil")
    if source is None:
        raise bad_request("AddVolumeOptions requires VolumeSource to not be nil")
    disk["name"] = name
    if DV in source:  # KubeVirt marks the DataVolume when both are given
        source[DV]["hotpluggable"] = True
    elif PVC in source:
        source[PVC]["hotpluggable"] = True
    options: JSON = {"name": name, "disk": disk, "volumeSource": source}
    if dry_run:
        options["dryRun"] = dry_run
    _check_kept_size(options)
    return VolumeRequest(add=options)


def decode_remove_volume(body: bytes) -> VolumeRequest:
    """The remove request in ``body``; a body that cannot be read or names no volume is a 400."""
    document = _document(REMOVE_OPTIONS, body)
    name = _string(REMOVE_OPTIONS, document, "name")
    dry_run = _dry_run(REMOVE_OPTIONS, document)
    if not name:
        raise bad_request("RemoveVolumeOptions requires name to be set")
    options: JSON = {"name": name}
    if dry_run:
        options["dryRun"] = dry_run
    _check_kept_size(options)
    return VolumeRequest(remove=options)


def _document(kind: str, body: bytes) -> dict[Any, Any]:
    document = parse_body(body)
    if document is None:  # an empty body decodes to empty options, as in Go
        return {}
    if not isinstance(document, dict):
        raise not_an_object(kind, document)
    return document


def _string(kind: str, document: dict[Any, Any], field: str) -> str:
    value = document.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise type_mismatch(kind, field, value, "string")
    return value


def _dry_run(kind: str, document: dict[Any, Any]) -> list[str]:
    value = document.get("dryRun")
    if value is None:
        return []
    if not fits(value, STRINGS):
        raise type_mismatch(kind, "dryRun", value, STRINGS)
    # YAML aliases can repeat one long string many times: bounded before anything walks the list.
    if kept_size({"dryRun": value}) > MAX_BODY_BYTES:
        raise expanded_too_far()
    return list(value)


def _struct(
    document: dict[Any, Any], field: str, model: type[ApiModel], go_type: str, defaults: dict[str, str]
) -> JSON | None:
    """A nested struct in Go's form, or None when absent. Go's decoder leaves a missing string empty;
    the models require some, so their Go zero values fill in first."""
    value = document.get(field)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise type_mismatch(ADD_OPTIONS, field, value, go_type)
    given = {**defaults, **value}
    for source, required in ((PVC, "claimName"), (DV, "name")):
        if isinstance(given.get(source), dict):
            given[source] = {required: "", **given[source]}
    try:
        return to_go_json(model.from_dict(given))
    except ApiParseError as err:
        causes = "; ".join(f"{ADD_OPTIONS}.{field}.{cause}" for cause in err.causes)
        raise refuse(causes) from None


def _check_kept_size(options: JSON) -> None:
    if len(json.dumps(options)) > MAX_BODY_BYTES:
        raise expanded_too_far()


# -- checks -----------------------------------------------------------------------------------------------


def verify_volume_option(volumes: list[JSON], request: VolumeRequest) -> None:
    """KubeVirt's ``verifyVolumeOption``: an added volume's name and source must be new; a removed one
    must exist (by volume or source name) and be hotpluggable."""
    if request.add is not None:
        source_name = _source_name(request.add.get("volumeSource") or {})
        for volume in volumes:
            if volume.get("name") == request.name:
                raise VolumeRequestError(
                    f"Unable to add volume [{request.name}] because volume with that name already exists"
                )
            if _has_source(volume, source_name):
                raise VolumeRequestError(
                    f"Unable to add volume source [{source_name}] because it already exists"
                )
        return
    for volume in volumes:
        if volume.get("name") == request.name or _has_source(volume, request.name):
            if not _hotpluggable(volume):
                raise VolumeRequestError(
                    f"Unable to remove volume [{volume.get('name', '')}] because it is not hotpluggable"
                )
            return
    raise VolumeRequestError(f"Unable to remove volume [{request.name}] because it does not exist")


def _source_name(source: JSON) -> str:
    if source.get(DV) is not None:
        return str(source[DV].get("name") or "")
    if source.get(PVC) is not None:
        return str(source[PVC].get("claimName") or "")
    return ""


def _has_source(volume: JSON, name: str) -> bool:
    data_volume, claim = volume.get(DV), volume.get(PVC)
    return (isinstance(data_volume, dict) and (data_volume.get("name") or "") == name) or (
        isinstance(claim, dict) and (claim.get("claimName") or "") == name
    )


def _hotpluggable(volume: JSON) -> bool:
    return any(
        isinstance(volume.get(key), dict) and volume[key].get("hotpluggable") is True for key in (DV, PVC)
    )


# -- patches ----------------------------------------------------------------------------------------------


def apply_volume_request(spec: JSON, request: VolumeRequest) -> tuple[list[JSON], list[JSON]]:
    """The volumes and disks of a VMI spec once the request is applied (see
    :func:`kubevirt.hotplug_volumes.apply_volume_request`); an add of a volume name already there leaves
    them as they are."""
    volumes = list(spec.get("volumes") or [])
    disks = list(((spec.get("domain") or {}).get("devices") or {}).get("disks") or [])
    applied = hotplug_volumes.apply_volume_request(volumes, disks, request.to_json())
    return applied if applied is not None else (copy.deepcopy(volumes), copy.deepcopy(disks))


def spec_patch(prefix: str, spec: JSON, request: VolumeRequest) -> Patch:
    """The patch of a VMI spec (``prefix`` "") or a VM's template (``prefix`` "/spec/template")."""
    volumes_path, disks_path = f"{prefix}/spec/volumes", f"{prefix}/spec/domain/devices/disks"
    current_volumes = spec.get("volumes")
    current_disks = ((spec.get("domain") or {}).get("devices") or {}).get("disks")
    volumes, disks = apply_volume_request(spec, request)
    return [
        {"op": "test", "path": volumes_path, "value": current_volumes},
        {"op": "test", "path": disks_path, "value": current_disks},
        {"op": "replace" if current_volumes else "add", "path": volumes_path, "value": volumes},
        {"op": "replace" if current_disks else "add", "path": disks_path, "value": disks},
    ]


def status_patch(vm: JSON, request: VolumeRequest) -> Patch:
    """The patch queueing ``request`` in the VM's ``status.volumeRequests`` for the VM controller. An add
    is refused while one for the same volume waits; a remove replaces a waiting add of its volume."""
    pending: list[JSON] = list((vm.get("status") or {}).get("volumeRequests") or [])
    if request.add is not None:
        for waiting in pending:
            if _names(waiting, "addVolumeOptions", request.name):
                raise VolumeRequestError(f"add volume request for volume [{request.name}] already exists")
            if _names(waiting, "removeVolumeOptions", request.name):
                raise VolumeRequestError(
                    "unable to add volume since a remove volume request for volume "
                    f"[{request.name}] already exists and is still being processed"
                )
        wanted = [*copy.deepcopy(pending), request.to_json()]
    else:
        wanted = []
        for waiting in pending:
            if _names(waiting, "addVolumeOptions", request.name):
                continue
            if _names(waiting, "removeVolumeOptions", request.name):
                raise VolumeRequestError(
                    f"a remove volume request for volume [{request.name}] already exists "
                    "and is still being processed"
                )
            wanted.append(copy.deepcopy(waiting))
        wanted.append(request.to_json())
    path = "/status/volumeRequests"
    current = (vm.get("status") or {}).get("volumeRequests")
    return [
        {"op": "test", "path": path, "value": current},
        {"op": "replace" if pending else "add", "path": path, "value": wanted},
    ]


def _names(request: JSON, kind: str, name: str) -> bool:
    options = request.get(kind)
    return isinstance(options, dict) and options.get("name") == name
