"""What a VirtualMachineRestore writes: the claims restored from VolumeSnapshots, the restored VM
(its volumes pointed at those claims, its run strategy, ``spec.patches`` applied), the DataVolumes CDI
would have created for its templates, and the patches that stop the target.

Builders over plain JSON objects (KubeVirt v1.6's ``pkg/storage/snapshot/restore.go`` and its
helpers) that write nothing: :mod:`.restore` decides when to write what they build. Only
``data_volume_from_template`` reads the API (a DataSource a template refers to).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Final

from kubevirt.admission import jsonpatch
from kubevirt.client import KubeApi
from kubevirt.client.resources import DATA_SOURCES, DATA_VOLUMES
from kubevirt.virt_controller.watch.firmware import calculate_legacy_uuid
from kubevirt.virt_controller.watch.snapshot.common import VOLUME_SNAPSHOT_GROUP
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineRunStrategy
from kubevirt_api.core.v1.constants import API_VERSION
from kubevirt_api.resource import Quantity, QuantityError
from kubevirt_api.view import JSON

# Names KubeVirt writes on what a restore creates or changes.
RESTORE_NAME_ANNOTATION: Final = "restore.kubevirt.io/name"
LAST_RESTORE_ANNOTATION: Final = "restore.kubevirt.io/lastRestoreUID"
RESTORE_SOURCE_NAME_LABEL: Final = "restore.kubevirt.io/source-vm-name"
RESTORE_SOURCE_NAMESPACE_LABEL: Final = "restore.kubevirt.io/source-vm-namespace"
# KubeVirt's constant is called a label, but it is written as an annotation.
RESTORE_OWNED_BY_VM_ANNOTATION: Final = "restore.kubevirt.io/owned-by-vm"
POPULATED_FOR_ANNOTATION: Final = "cdi.kubevirt.io/storage.populatedFor"
CONTENT_TYPE_ANNOTATION: Final = "cdi.kubevirt.io/storage.contentType"
PRE_POPULATED_ANNOTATION: Final = "cdi.kubevirt.io/storage.prePopulated"
ALLOW_CLAIM_ADOPTION_ANNOTATION: Final = "cdi.kubevirt.io/allowClaimAdoption"
BACKEND_STORAGE_LABEL: Final = "persistent-state-for"
RESTORE_PVC_PREFIX: Final = "restore"
# Annotations of the backed-up claim that describe its provisioning, not its content.
STRIPPED_ANNOTATION_PREFIXES: Final = (
    "pv.kubernetes.io",
    "volume.beta.kubernetes.io",
    "cdi.kubevirt.io",
    "volume.kubernetes.io",
    "k8s.io/CloneRequest",
    "k8s.io/CloneOf",
)

# spec.volumeRestorePolicy.
IN_PLACE: Final = "InPlace"
RANDOMIZE_NAMES: Final = "RandomizeNames"

_RunStrategy = VirtualMachineRunStrategy


class RestoreError(Exception):
    """A step that failed; the text becomes the conditions' reason (KubeVirt's doUpdateError)."""


# Small readers of plain JSON objects (the restore controller reads with them too).


def meta_of(obj: Mapping[str, Any]) -> JSON:
    return obj.get("metadata") or {}


def status_of(obj: Mapping[str, Any]) -> JSON:
    return obj.get("status") or {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return meta_of(obj).get("annotations") or {}


def volumes_of(vm: Mapping[str, Any]) -> list[JSON]:
    return list((((vm.get("spec") or {}).get("template") or {}).get("spec") or {}).get("volumes") or [])


def templates_of(vm: Mapping[str, Any]) -> list[JSON]:
    return list((vm.get("spec") or {}).get("dataVolumeTemplates") or [])


def template_index(vm: Mapping[str, Any], name: str) -> int:
    for index, template in enumerate(templates_of(vm)):
        if meta_of(template).get("name") == name:
            return index
    return -1


# The restore's own fields.


def restore_annotation_value(restore: Mapping[str, Any]) -> str:
    """``<restore name>-<restore uid>``: marks claims and VMs as written by this restore."""
    meta = meta_of(restore)
    return f"{meta.get('name', '')}-{meta.get('uid', '')}"


def has_last_restore_annotation(restore: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    return annotations_of(obj).get(LAST_RESTORE_ANNOTATION) == restore_annotation_value(restore)


def is_in_place(restore: Mapping[str, Any]) -> bool:
    return (restore.get("spec") or {}).get("volumeRestorePolicy") == IN_PLACE


def restore_volume_name(restore: Mapping[str, Any], volume_name: str, claim_name: str) -> str:
    """The name of a restored claim or DataVolume: an override's, the original (InPlace), or
    ``restore-<restore uid>-<volume>``."""
    for override in (restore.get("spec") or {}).get("volumeRestoreOverrides") or []:
        if override.get("volumeName") == volume_name and override.get("restoreName"):
            return str(override["restoreName"])
    if is_in_place(restore):
        return claim_name
    return f"{RESTORE_PVC_PREFIX}-{meta_of(restore).get('uid', '')}-{volume_name}"


# The claim restored from a VolumeSnapshot.


def restored_claim(name: str, volume_snapshot: Mapping[str, Any], backup: Mapping[str, Any]) -> JSON:
    """The claim restoring ``backup`` from its VolumeSnapshot (KubeVirt's ``CreateRestorePVCDef``): the
    backed-up claim's labels, annotations (without provisioning ones), access modes, size (at least the
    snapshot's restore size), class and volume mode. Restores and exports of snapshots both make these."""
    source = backup.get("persistentVolumeClaim") or {}
    source_meta, source_spec = meta_of(source), source.get("spec") or {}
    snapshot_ref = {
        "apiGroup": VOLUME_SNAPSHOT_GROUP,
        "kind": "VolumeSnapshot",
        "name": backup["volumeSnapshotName"],
    }
    spec: JSON = {"resources": copy.deepcopy(source_spec.get("resources") or {})}
    for field in ("accessModes", "storageClassName", "volumeMode"):
        if source_spec.get(field) is not None:
            spec[field] = copy.deepcopy(source_spec[field])
    spec["dataSource"] = dict(snapshot_ref)
    spec["dataSourceRef"] = dict(snapshot_ref)
    _grow_to_restore_size(spec, volume_snapshot)
    annotations = {
        key: value
        for key, value in (source_meta.get("annotations") or {}).items()
        if key == CONTENT_TYPE_ANNOTATION or not key.startswith(STRIPPED_ANNOTATION_PREFIXES)
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "labels": dict(source_meta.get("labels") or {}),
            "annotations": annotations,
        },
        "spec": spec,
    }


def restore_pvc_definition(
    restore: Mapping[str, Any],
    name: str,
    volume_snapshot: Mapping[str, Any],
    backup: Mapping[str, Any],
    source_vm: Mapping[str, Any],
) -> JSON:
    """The claim a restore makes: :func:`restored_claim` without the backend-storage label, marked with
    the source VM and the restore, then the restore's overrides for the volume."""
    pvc = restored_claim(name, volume_snapshot, backup)
    meta = pvc["metadata"]
    labels = {k: v for k, v in meta["labels"].items() if k != BACKEND_STORAGE_LABEL}
    labels[RESTORE_SOURCE_NAME_LABEL] = str(meta_of(source_vm).get("name", ""))
    labels[RESTORE_SOURCE_NAMESPACE_LABEL] = str(meta_of(source_vm).get("namespace", ""))
    annotations = meta["annotations"]
    annotations[RESTORE_NAME_ANNOTATION] = str(meta_of(restore).get("name", ""))
    annotations[LAST_RESTORE_ANNOTATION] = restore_annotation_value(restore)
    for override in (restore.get("spec") or {}).get("volumeRestoreOverrides") or []:
        if override.get("volumeName") == backup.get("volumeName"):
            # Overrides come last: they may replace any of the keys above.
            labels.update(override.get("labels") or {})
            annotations.update(override.get("annotations") or {})
            break
    meta["labels"] = labels
    return pvc


def _grow_to_restore_size(spec: JSON, volume_snapshot: Mapping[str, Any]) -> None:
    """The claim asks for at least the snapshot's restore size."""
    restore_size = status_of(volume_snapshot).get("restoreSize")
    if restore_size is None:
        return
    requests = spec["resources"].setdefault("requests", {})
    try:
        current = requests.get("storage")
        if current is None or Quantity(str(current)) < Quantity(str(restore_size)):
            requests["storage"] = restore_size
    except QuantityError as err:
        raise RestoreError(f"invalid storage size: {err}") from None


def owned_by_source_vm(backup: Mapping[str, Any], source_vm: Mapping[str, Any]) -> bool:
    vm_meta = meta_of(source_vm)
    return any(
        ref.get("kind") == "VirtualMachine"
        and ref.get("name") == vm_meta.get("name")
        and ref.get("uid") == vm_meta.get("uid")
        for ref in meta_of(backup.get("persistentVolumeClaim") or {}).get("ownerReferences") or []
    )


# The restored VM.


def restored_volumes(
    restore: Mapping[str, Any], source_vm: Mapping[str, Any]
) -> tuple[list[JSON], list[JSON]]:
    """The snapshot VM's volumes and DataVolume templates pointed at the restored claims.

    A claim volume gets the restored claim; a DataVolume volume with a template gets the restored
    DataVolume (so does its template's name); one without a template becomes a claim volume; memory
    dumps are dropped; everything else is kept.
    """
    restores = status_of(restore).get("restores") or []
    templates = copy.deepcopy(templates_of(source_vm))
    volumes: list[JSON] = []
    for volume in volumes_of(source_vm):
        if "memoryDump" in volume:
            continue
        new = copy.deepcopy(volume)
        entry = next((r for r in restores if r.get("volumeName") == volume.get("name")), None)
        if entry is not None and "dataVolume" in volume:
            dv_name = volume["dataVolume"].get("name", "")
            index = template_index(source_vm, dv_name)
            if index < 0:
                new = {
                    "name": volume["name"],
                    "persistentVolumeClaim": {"claimName": entry["persistentVolumeClaim"]},
                }
            elif not entry.get("dataVolumeName"):
                raise RestoreError(f"DataVolumeName for dv {dv_name} should have been updated already")
            else:
                templates[index].setdefault("metadata", {})["name"] = entry["dataVolumeName"]
                new["dataVolume"]["name"] = entry["dataVolumeName"]
        elif entry is not None and "persistentVolumeClaim" in volume:
            new["persistentVolumeClaim"]["claimName"] = entry["persistentVolumeClaim"]
        volumes.append(new)
    return volumes, templates


def restored_vm(restore: Mapping[str, Any], target: JSON | None, source_vm: Mapping[str, Any]) -> JSON:
    """The target VM with the snapshot's spec. A new VM takes the snapshot VM's labels and annotations
    and is Halted; an existing one keeps its metadata and its run strategy."""
    volumes, templates = restored_volumes(restore, source_vm)
    spec = copy.deepcopy(source_vm.get("spec") or {})
    if target is None:
        source_meta = meta_of(source_vm)
        meta: JSON = {
            "name": (restore.get("spec") or {}).get("target", {}).get("name"),
            "namespace": meta_of(restore).get("namespace"),
        }
        for field in ("labels", "annotations"):
            if source_meta.get(field):
                meta[field] = copy.deepcopy(source_meta[field])
        vm: JSON = {"apiVersion": API_VERSION, "kind": "VirtualMachine", "metadata": meta, "spec": spec}
        if spec.get("running") is not None:
            spec["running"] = False
        else:
            spec["runStrategy"] = _RunStrategy.HALTED
    else:
        vm = copy.deepcopy(target)
        vm["spec"] = spec
        if (target.get("spec") or {}).get("running") is not None:
            spec["running"] = False
            spec.pop("runStrategy", None)
        else:
            spec["runStrategy"] = run_strategy(target)
            spec.pop("running", None)
    set_or_drop(spec, "dataVolumeTemplates", templates)
    set_or_drop(spec.setdefault("template", {}).setdefault("spec", {}), "volumes", volumes)
    vm["metadata"].setdefault("annotations", {})[LAST_RESTORE_ANNOTATION] = restore_annotation_value(restore)
    if meta_of(source_vm).get("name") == vm["metadata"].get("name"):
        firmware = spec["template"]["spec"].setdefault("domain", {}).setdefault("firmware", {})
        if not firmware.get("uuid"):
            firmware["uuid"] = calculate_legacy_uuid(str(vm["metadata"]["name"]))
    return vm


def set_or_drop(obj: JSON, field: str, value: list[Any]) -> None:
    """Go leaves an empty list out of the JSON."""
    if value:
        obj[field] = value
    else:
        obj.pop(field, None)


def run_strategy(vm: Mapping[str, Any]) -> str:
    try:
        return VirtualMachine.from_dict(vm).run_strategy()
    except ValueError as err:
        raise RestoreError(str(err)) from None


# What a restore's patches may touch. The webhook checks this on the patches' text, as KubeVirt's does;
# this check is on the decoded operations, so an escaped key ("\u0070ath") cannot get past it, and the
# VM virt-controller creates never carries a patched namespace, owner or finalizer.
PATCHABLE_PREFIXES = ("/spec/", "/metadata/labels/", "/metadata/annotations/")


def apply_vm_patches(vm: JSON, patches: list[str]) -> JSON:
    """``spec.patches`` (JSON patch operations, one per string) applied to a new VM."""
    if not patches:
        return vm
    text = "[\n" + ",\n".join(patches) + "\n]"
    try:
        operations = json.loads(text)
        if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
            raise ValueError("a JSON patch is a list of operations")
    except ValueError as err:
        raise RestoreError(f"cannot decode vm patches {text}: {err}") from None
    for operation in operations:
        for key in ("path", "from"):
            pointer = operation.get(key)
            if pointer is not None and not str(pointer).startswith(PATCHABLE_PREFIXES):
                raise RestoreError(f"patching is valid only for elements under /spec/ only: {pointer}")
    try:
        document = jsonpatch.apply({**vm, "status": {}}, operations, replace_sets_missing_keys=True)
    except jsonpatch.PatchError as err:
        raise RestoreError(f"failed to apply patch for VM {text}: {err}") from None
    if not isinstance(document, dict):
        raise RestoreError(f"failed to apply patch for VM {text}: the result is not an object")
    document.pop("status", None)
    try:
        VirtualMachine.from_dict(document)
    except ValueError as err:
        raise RestoreError(f"cannot unmarshal modified marshalled vm {json.dumps(document)}: {err}") from None
    return dict(document)


# The DataVolume CDI would have created for a template.


def data_volume_from_template(
    api: KubeApi, template: Mapping[str, Any], namespace: str, priority_class: str
) -> JSON:
    """KubeVirt's GenerateDataVolumeFromTemplate: the template's metadata and spec, claim adoption
    allowed, the VM's priority class, and a DataSource reference resolved to its source."""
    meta = copy.deepcopy(meta_of(template))
    meta["labels"] = dict(meta.get("labels") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), ALLOW_CLAIM_ADOPTION_ANNOTATION: "true"}
    spec = copy.deepcopy(template.get("spec") or {})
    if not spec.get("priorityClassName") and priority_class:
        spec["priorityClassName"] = priority_class
    source = _resolved_clone_source(api, namespace, spec)
    if source is not None:
        spec.pop("sourceRef", None)
        spec["source"] = source
    return {"apiVersion": DATA_VOLUMES.api_version, "kind": DATA_VOLUMES.kind, "metadata": meta, "spec": spec}


def _resolved_clone_source(api: KubeApi, namespace: str, spec: Mapping[str, Any]) -> JSON | None:
    source = spec.get("source")
    ref = spec.get("sourceRef") or {}
    if ref.get("kind") == "DataSource":
        data_source = api.get(DATA_SOURCES, ref.get("namespace") or namespace, str(ref.get("name", "")))
        resolved = (data_source.get("spec") or {}).get("source") or {}
        if resolved.get("dataSource") is not None:
            resolved = status_of(data_source).get("source") or {}
        source = {key: resolved[key] for key in ("pvc", "snapshot") if resolved.get(key) is not None}
    if not source:
        return None
    for kind in ("pvc", "snapshot"):
        if source.get(kind) is not None:
            clone = {**source[kind], "namespace": source[kind].get("namespace") or namespace}
            return {kind: clone}
    return None


# The stop virt-api would do, and annotations written by patch.


def stop_request_patch(vm: Mapping[str, Any], vmi_uid: str | None) -> list[JSON]:
    """A Stop request for the running VMI; it replaces pending requests (virt-api's rule for a lone Stop)."""
    request: JSON = {"action": "Stop"}
    if vmi_uid:
        request["uid"] = vmi_uid
    status = status_of(vm)
    if not status:
        return [{"op": "add", "path": "/status", "value": {"stateChangeRequests": [request]}}]
    pending = status.get("stateChangeRequests")
    patch: list[JSON] = [
        {"op": "test", "path": "/status/stateChangeRequests", "value": pending},
        {"op": "replace" if pending else "add", "path": "/status/stateChangeRequests", "value": [request]},
    ]
    if status.get("startFailure") is not None:
        patch.append({"op": "remove", "path": "/status/startFailure"})
    return patch


def halt_patch(vm: Mapping[str, Any]) -> list[JSON]:
    """Always/Once switched to Halted (``running: false`` on VMs that use ``running``)."""
    spec = vm.get("spec") or {}
    wanted: str | bool
    if spec.get("runStrategy") is not None:
        path, current, wanted = "/spec/runStrategy", spec["runStrategy"], _RunStrategy.HALTED
    else:
        path, current, wanted = "/spec/running", spec.get("running"), False
    return [{"op": "test", "path": path, "value": current}, {"op": "replace", "path": path, "value": wanted}]


def annotation_path(key: str) -> str:
    return f"/metadata/annotations/{jsonpatch.escape(key)}"
