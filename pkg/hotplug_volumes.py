"""How a volume hotplug request changes a VMI spec (KubeVirt's ``controller.ApplyVolumeRequestOnVMISpec``),
the one rule virt-api (patching a stored VMI or VM template) and virt-controller (applying a VM's queued
requests to its template) both follow.

It works on plain JSON, the form both sides share: virt-api holds the spec exactly as stored and must
not reshape it, while virt-controller hands over its models' ``to_dict()`` form and parses the result
back. It sits outside every component so that both can import it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Final

from kubevirt_api.view import JSON

PVC: Final = "persistentVolumeClaim"
DV: Final = "dataVolume"


def apply_volume_request(
    volumes: Sequence[JSON], disks: Sequence[JSON], request: JSON
) -> tuple[list[JSON], list[JSON]] | None:
    """The spec's volumes and disks once ``request`` (a ``VirtualMachineVolumeRequest`` in its JSON form)
    is applied, as fresh copies; None when it changes nothing (an add of a volume name already present,
    or a request carrying neither options).

    An add appends the volume, its claim (preferred when both are given, as in KubeVirt) or DataVolume
    marked hotpluggable, and its disk renamed after it; a remove drops the volume and the disk of that
    name."""
    add, remove = request.get("addVolumeOptions"), request.get("removeVolumeOptions")
    if add is not None:
        name = add["name"]
        if any(volume.get("name") == name for volume in volumes):
            return None
        volume: JSON = {"name": name}
        source = add.get("volumeSource") or {}
        for key in (PVC, DV):
            if source.get(key) is not None:
                volume[key] = {**copy.deepcopy(source[key]), "hotpluggable": True}
                break
        added_disks = [] if add.get("disk") is None else [{**copy.deepcopy(add["disk"]), "name": name}]
        return [*copy.deepcopy(list(volumes)), volume], [*copy.deepcopy(list(disks)), *added_disks]
    if remove is None:
        return None
    name = remove["name"]
    return (
        [copy.deepcopy(volume) for volume in volumes if volume.get("name") != name],
        [copy.deepcopy(disk) for disk in disks if disk.get("name") != name],
    )
