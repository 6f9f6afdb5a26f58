"""The VM controller's part in volume hotplug (KubeVirt's ``handleVolumeRequests``,
``trimDoneVolumeRequests`` and, under the DeclarativeHotplugVolumes gate, ``pkg/storage/hotplug``).

``virtctl addvolume/removevolume --persist`` leaves a request in the VM's ``status.volumeRequests``. Each
pass applies every request to the VM's template (the volume, marked hotpluggable, and its disk added, or
both removed) and, while the VM's VMI exists and is not being deleted, hands it on to the VMI through
virt-api's ``addvolume``/``removevolume`` subresources (virt-api checks it and patches the VMI's spec),
unless the VMI has that volume already (or, for a removal, no longer). A request is dropped from the
status once the template shows it done.

Under DeclarativeHotplugVolumes (and not HotplugVolumes) the template's hotpluggable volumes are instead
copied onto the running VMI directly: a JSON patch of its volumes and disks, guarded by ``test``s of
their old values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from kubevirt import hotplug_volumes
from kubevirt.apiservices import SUBRESOURCE_GROUP
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance, VirtualMachineInstanceSpec
from kubevirt_api.core.v1.domain import Disk
from kubevirt_api.core.v1.vm import VirtualMachineVolumeRequest
from kubevirt_api.core.v1.volumes import Volume

HOTPLUG_VOLUMES_GATE: Final = "HotplugVolumes"
DECLARATIVE_HOTPLUG_VOLUMES_GATE: Final = "DeclarativeHotplugVolumes"
HOTPLUG_VOLUME_ERROR_REASON: Final = "HotPlugVolumeError"
FAILED_UPDATE_ERROR_REASON: Final = "FailedUpdateError"
UPDATE_VOLUMES_STRATEGY_MIGRATION: Final = "Migration"
_SUBRESOURCE_PATH: Final = (
    "/apis/" + SUBRESOURCE_GROUP + "/v1/namespaces/{namespace}/virtualmachineinstances/{name}/{action}"
)


class VMIVolumes(Protocol):
    """The VMI's ``addvolume`` and ``removevolume`` subresources; failures raise the API's errors."""

    def add_volume(self, namespace: str | None, name: str, options: Mapping[str, Any]) -> None: ...

    def remove_volume(self, namespace: str | None, name: str, options: Mapping[str, Any]) -> None: ...


class Requester(Protocol):
    def request(self, method: str, path: str, *, body: Any = None) -> bytes: ...


def put_vmi_subresource(
    client: Requester, namespace: str | None, name: str, action: str, body: Mapping[str, Any]
) -> None:
    """``PUT`` on a VMI subresource of virt-api, through the API server's aggregation layer."""
    path = _SUBRESOURCE_PATH.format(namespace=namespace or "", name=name, action=action)
    client.request("PUT", path, body=dict(body))


class SubresourceVolumes:
    """:class:`VMIVolumes` through the API server's aggregation layer to virt-api (``PUT``, as KubeVirt's
    client calls them)."""

    def __init__(self, client: Requester) -> None:
        self._client = client

    def add_volume(self, namespace: str | None, name: str, options: Mapping[str, Any]) -> None:
        self._put(namespace, name, "addvolume", options)

    def remove_volume(self, namespace: str | None, name: str, options: Mapping[str, Any]) -> None:
        self._put(namespace, name, "removevolume", options)

    def _put(self, namespace: str | None, name: str, action: str, options: Mapping[str, Any]) -> None:
        put_vmi_subresource(self._client, namespace, name, action, options)


def apply_volume_request(spec: VirtualMachineInstanceSpec, request: VirtualMachineVolumeRequest) -> None:
    """Applies ``request`` to ``spec`` in place, by the rule virt-api follows too
    (:func:`kubevirt.hotplug_volumes.apply_volume_request`); ``spec`` is left alone when the request
    changes nothing."""
    applied = hotplug_volumes.apply_volume_request(
        _dump(spec.volumes) or [], _dump(spec.domain.devices.disks) or [], request.to_dict()
    )
    if applied is not None:
        volumes, disks = applied
        spec.volumes = [Volume.from_dict(volume) for volume in volumes]
        spec.domain.devices.disks = [Disk.from_dict(disk) for disk in disks]


def request_volume_name(request: VirtualMachineVolumeRequest) -> str:
    if request.add_volume_options is not None:
        return request.add_volume_options.name
    if request.remove_volume_options is not None:
        return request.remove_volume_options.name
    return ""


def pending_requests(vm: VirtualMachine) -> list[VirtualMachineVolumeRequest]:
    """The VM's volume requests its template does not show done yet (``trimDoneVolumeRequests``): an
    addition is done once both the volume and the disk are there, a removal once neither is."""
    spec = vm.spec.template.spec
    volumes = {volume.name for volume in (spec.volumes if spec is not None else None) or []}
    disks = {disk.name for disk in (spec.domain.devices.disks if spec is not None else None) or []}
    pending = []
    for request in (vm.status.volume_requests if vm.status is not None else None) or []:
        name = request_volume_name(request)
        added = request.add_volume_options is not None
        present = (name in volumes, name in disks)
        done = present == (True, True) if added else present == (False, False)
        if not done:
            pending.append(request)
    return pending


def vmi_volume_calls(
    requests: Sequence[VirtualMachineVolumeRequest], vmi: VirtualMachineInstance | None
) -> list[tuple[str, dict[str, Any]]]:
    """The requests to hand on to the VMI, as ("add" or "remove", the options' JSON): none without a VMI
    or while it is being deleted; an addition of a volume the VMI does not have, a removal of one it has."""
    if vmi is None or vmi.is_marked_for_deletion():
        return []
    present = {volume.name for volume in vmi.spec.volumes or []}
    calls: list[tuple[str, dict[str, Any]]] = []
    for request in requests:
        add, remove = request.add_volume_options, request.remove_volume_options
        if add is not None:
            if add.name not in present:
                calls.append(("add", add.to_dict()))
        elif remove is not None and remove.name in present:
            calls.append(("remove", remove.to_dict()))
    return calls


# -- DeclarativeHotplugVolumes ---------------------------------------------------------------------------


def is_declarative_hotplug_volume(volume: Volume) -> bool:
    """A PersistentVolumeClaim or DataVolume volume marked hotpluggable."""
    return bool(
        (volume.persistent_volume_claim is not None and volume.persistent_volume_claim.hotpluggable)
        or (volume.data_volume is not None and volume.data_volume.hotpluggable)
    )


def declarative_hotplug_patch(vm: VirtualMachine, vmi: VirtualMachineInstance | None) -> list[dict[str, Any]]:
    """The JSON patch that brings the running VMI's hotpluggable volumes (and their disks) in line with
    the VM's template (``patchHotplugVolumes``); empty when there is nothing to change."""
    if vmi is None or not vmi.is_running():
        return []
    template = vm.spec.template.spec
    if template is None:
        return []
    vm_volumes = {volume.name: volume for volume in template.volumes or []}
    vm_disks = {disk.name: disk for disk in template.domain.devices.disks or []}
    old_volumes = list(vmi.spec.volumes or [])
    old_disks = list(vmi.spec.domain.devices.disks or [])
    volumes = _kept_vmi_volumes(old_volumes, vm_volumes) + _new_vm_volumes(template.volumes or [], vmi)
    by_name = {volume.name: volume for volume in volumes}
    disks = _kept_vmi_disks(old_disks, by_name, vm_disks, vm_volumes) + [
        disk.model_copy(deep=True)
        for disk in template.domain.devices.disks or []
        if disk.name in by_name
        and is_declarative_hotplug_volume(by_name[disk.name])
        and disk.name not in {d.name for d in old_disks}
    ]
    if _dump(volumes) == _dump(old_volumes) and _dump(disks) == _dump(old_disks):
        return []
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/spec/volumes", "value": _dump(vmi.spec.volumes)},
        {"op": "test", "path": "/spec/domain/devices/disks", "value": _dump(vmi.spec.domain.devices.disks)},
    ]
    for path, was, now in (
        ("/spec/volumes", old_volumes, volumes),
        ("/spec/domain/devices/disks", old_disks, disks),
    ):
        ops.append({"op": "replace" if was else "add", "path": path, "value": _dump(now)})
    return ops


def _kept_vmi_volumes(vmi_volumes: list[Volume], vm_volumes: Mapping[str, Volume]) -> list[Volume]:
    """The VMI's volumes less the hotpluggable ones gone from the VM or changed there (a changed one is
    added back by :func:`_new_vm_volumes` with the VM's values, on a later pass)."""
    kept = []
    for volume in vmi_volumes:
        if is_declarative_hotplug_volume(volume):
            in_vm = vm_volumes.get(volume.name)
            if in_vm is None:
                continue
            if is_declarative_hotplug_volume(in_vm) and in_vm.to_dict() != volume.to_dict():
                continue
        kept.append(volume.model_copy(deep=True))
    return kept


def _new_vm_volumes(vm_volumes: Sequence[Volume], vmi: VirtualMachineInstance) -> list[Volume]:
    """The VM's hotpluggable volumes the VMI has neither in its spec nor still in its status (a volume
    being unplugged keeps its status entry until it is gone)."""
    in_spec = {volume.name for volume in vmi.spec.volumes or []}
    in_status = {entry.name for entry in (vmi.status.volume_status if vmi.status else None) or []}
    return [
        volume.model_copy(deep=True)
        for volume in vm_volumes
        if is_declarative_hotplug_volume(volume)
        and volume.name not in in_spec
        and volume.name not in in_status
    ]


def _kept_vmi_disks(
    vmi_disks: list[Disk],
    volumes: Mapping[str, Volume],
    vm_disks: Mapping[str, Disk],
    vm_volumes: Mapping[str, Volume],
) -> list[Disk]:
    """The VMI's disks less those whose volume is gone: dropped when the VM has no such disk, or has the
    volume (changed) unless both disks are CD-ROMs (a CD-ROM keeps its drive while its medium changes)."""
    kept = []
    for disk in vmi_disks:
        if disk.name not in volumes:
            in_vm = vm_disks.get(disk.name)
            if in_vm is None:
                continue
            if disk.name in vm_volumes and (in_vm.cdrom is None or disk.cdrom is None):
                continue
        kept.append(disk.model_copy(deep=True))
    return kept


def _dump(items: Sequence[Volume] | Sequence[Disk] | None) -> list[Any] | None:
    return [item.to_dict() for item in items] if items is not None else None
