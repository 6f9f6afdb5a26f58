"""What the clone controller writes and checks, as pure functions (KubeVirt v1.6's ``util.go`` and
``vm-target.go``): the names and owner of the intermediate snapshot and restore, the restore's patches
that make the copy a new machine, and the checks of the source VM and of the snapshot content.

The patches, in KubeVirt's order:

1. each interface's ``macAddress`` replaced by the clone's ``newMacAddresses`` entry, or emptied (a MAC
   pool, or the guest, picks a new one);
2. with a firmware, its ``serial`` replaced by ``newSMBiosSerial`` or emptied;
3. labels, annotations, and the template's labels and annotations removed unless a filter keeps them
   (filters are unanchored regular expressions; ``*`` alone keeps everything, a leading ``!`` excludes and
   wins over the others; no filters at all keeps everything, an empty list nothing); the
   ``restore.kubevirt.io/lastRestoreUID`` annotation is never removed;
4. with a firmware, its ``uuid`` emptied (virt-controller gives the new VM its own);
5. the clone's own ``patches``, last, so they win.

Removals are listed in key order (KubeVirt walks a Go map, in no set order). New claim names for the
target's volumes and DataVolume templates are the restore controller's job, not a patch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, Final

from kubevirt.admission.jsonpatch import escape
from kubevirt.client import gojson
from kubevirt.controller import key_for
from kubevirt.log import get_logger
from kubevirt.virt_controller.watch.snapshot.common import owner_ref
from kubevirt_api.clone.v1beta1.types import CLONE_GROUP_NAME, CLONE_VERSIONS
from kubevirt_api.core.v1.constants import GROUP_NAME
from kubevirt_api.view import JSON

CLONE_API_VERSION: Final = f"{CLONE_GROUP_NAME}/{CLONE_VERSIONS[0]}"
CLONE_KIND: Final = "VirtualMachineClone"
VM_KIND: Final = "VirtualMachine"
SNAPSHOT_KIND: Final = "VirtualMachineSnapshot"

LAST_RESTORE_UID_ANNOTATION: Final = "restore.kubevirt.io/lastRestoreUID"
_MAX_NAME_LENGTH: Final = 252

# Error texts (KubeVirt's).
SOURCE_DOES_NOT_EXIST: Final = "Source doesnt exist"  # sic
SOURCE_WITH_BACKEND_STORAGE: Final = "Clone of source with backendstorage is not supported"

_log = get_logger(controller="clone")


# Names and ownership.


def snapshot_name(clone_uid: str) -> str:
    return f"tmp-snapshot-{clone_uid}"


def restore_name(clone_uid: str) -> str:
    return f"tmp-restore-{clone_uid}"


def generated_vm_name(source_vm_name: str, suffix: str) -> str:
    """``<source>-clone-<suffix>``; a base too long for a name becomes ``clone-object``."""
    base = f"{source_vm_name}-clone"
    if len(base) > _MAX_NAME_LENGTH:
        base = "clone-object"
    return f"{base}-{suffix}"


def clone_owner_ref(clone: Mapping[str, Any]) -> JSON:
    return owner_ref(CLONE_API_VERSION, CLONE_KIND, clone)


def owning_clone_key(obj: Mapping[str, Any]) -> str | None:
    """The key of the clone an object is owned by (any owner reference to a v1beta1 clone counts)."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if ref.get("kind") == CLONE_KIND and ref.get("apiVersion") == CLONE_API_VERSION:
            return key_for(meta.get("namespace"), str(ref.get("name") or ""))
    return None


def new_snapshot(clone: Mapping[str, Any], source_vm: Mapping[str, Any]) -> JSON:
    """The VirtualMachineSnapshot of the source VM the clone is made from."""
    vm_meta = source_vm.get("metadata") or {}
    return {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineSnapshot",
        "metadata": {
            "name": snapshot_name(str(clone["metadata"]["uid"])),
            "namespace": vm_meta.get("namespace"),
            "ownerReferences": [clone_owner_ref(clone)],
        },
        "spec": {"source": {"apiGroup": GROUP_NAME, "kind": VM_KIND, "name": vm_meta.get("name")}},
    }


def new_restore(
    clone: Mapping[str, Any], source_vm_name: str, snapshot: str, patches: list[str], suffix: str
) -> JSON:
    """The VirtualMachineRestore that makes the new VM from the snapshot; a target without a name gets
    ``<source>-clone-<suffix>``."""
    meta = clone["metadata"]
    target = {
        key: value
        for key, value in ((clone.get("spec") or {}).get("target") or {}).items()
        if key in ("apiGroup", "kind", "name") and value is not None
    }
    target.setdefault("kind", VM_KIND)
    if not target.get("name"):
        target["name"] = generated_vm_name(source_vm_name, suffix)
    spec: JSON = {"target": target, "virtualMachineSnapshotName": snapshot}
    if patches:
        spec["patches"] = patches
    return {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineRestore",
        "metadata": {
            "name": restore_name(str(meta["uid"])),
            "namespace": meta.get("namespace"),
            "ownerReferences": [clone_owner_ref(clone)],
        },
        "spec": spec,
    }


# Patches.


def _replace(path: str, value: Any) -> str:
    return gojson.dumps({"op": "replace", "path": path, "value": value}).decode()


def _remove(path: str) -> str:
    return gojson.dumps({"op": "remove", "path": path}).decode()


def _template_spec(vm: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((vm.get("spec") or {}).get("template") or {}).get("spec") or {}


def _firmware(vm: Mapping[str, Any]) -> Mapping[str, Any] | None:
    firmware = (_template_spec(vm).get("domain") or {}).get("firmware")
    return firmware if isinstance(firmware, Mapping) else None


def generate_patches(source_vm: Mapping[str, Any], clone_spec: Mapping[str, Any]) -> list[str]:
    """The restore's ``patches`` for a clone of ``source_vm`` (the VM as the snapshot content keeps it)."""
    meta = source_vm.get("metadata") or {}
    template_meta = ((source_vm.get("spec") or {}).get("template") or {}).get("metadata") or {}
    template_filters = clone_spec.get("template") or {}
    firmware = _firmware(source_vm)
    new_macs = clone_spec.get("newMacAddresses") or {}
    interfaces = (_template_spec(source_vm).get("domain") or {}).get("devices", {}).get("interfaces") or ()

    patches = [
        _replace(
            f"/spec/template/spec/domain/devices/interfaces/{index}/macAddress",
            new_macs.get(iface.get("name"), ""),
        )
        for index, iface in enumerate(interfaces)
    ]
    if firmware is not None:
        patches.append(
            _replace("/spec/template/spec/domain/firmware/serial", clone_spec.get("newSMBiosSerial") or "")
        )
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_RESTORE_UID_ANNOTATION
    }
    patches += removal_patches(meta.get("labels") or {}, clone_spec.get("labelFilters"), "/metadata/labels")
    patches += removal_patches(annotations, clone_spec.get("annotationFilters"), "/metadata/annotations")
    patches += removal_patches(
        template_meta.get("labels") or {},
        template_filters.get("labelFilters"),
        "/spec/template/metadata/labels",
    )
    patches += removal_patches(
        template_meta.get("annotations") or {},
        template_filters.get("annotationFilters"),
        "/spec/template/metadata/annotations",
    )
    if firmware is not None:
        patches.append(_replace("/spec/template/spec/domain/firmware/uuid", ""))
    return patches + [str(patch) for patch in clone_spec.get("patches") or ()]


@cache
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error as err:
        _log.error("matching regex failed", regex=pattern, reason=str(err))
        return None


def _matches(pattern: str, key: str) -> bool:
    """Go's ``regexp.MatchString``: the pattern found anywhere in the key; a bad pattern matches nothing."""
    regex = _regex(pattern)
    return regex is not None and regex.search(key) is not None


def kept_keys(keys: Iterable[str], filters: Iterable[str]) -> set[str]:
    """The keys some filter includes and no negation filter (``!pattern``) excludes."""
    regular: list[str] = []
    negations: list[str] = []
    for filter_ in filters:
        if filter_ == "*":  # a lone wildcard is not a valid regular expression
            regular.append(".*")
        elif filter_.startswith("!"):
            negations.append(filter_[1:])
        else:
            regular.append(filter_)
    return {
        key
        for key in keys
        if any(_matches(f, key) for f in regular) and not any(_matches(f, key) for f in negations)
    }


def removal_patches(values: Mapping[str, Any], filters: Iterable[str] | None, base_path: str) -> list[str]:
    """Removes of the keys the filters do not keep; without filters (None) nothing is removed."""
    if filters is None:
        return []
    kept = kept_keys(values, [str(f) for f in filters])
    return [_remove(f"{base_path}/{escape(key)}") for key in sorted(values) if key not in kept]


# Checks.


def template_needs_backend_storage(vm: Mapping[str, Any]) -> bool:
    """``IsBackendStorageNeededForVM``: a persistent TPM or persistent EFI variables, state a snapshot
    cannot carry."""
    domain = _template_spec(vm).get("domain") or {}
    tpm = (domain.get("devices") or {}).get("tpm")
    persistent_tpm = (
        isinstance(tpm, Mapping) and tpm.get("enabled") is not False and tpm.get("persistent") is True
    )
    efi = ((domain.get("firmware") or {}).get("bootloader") or {}).get("efi") or {}
    return persistent_tpm or efi.get("persistent") is True


def _claim_volumes(vm: Mapping[str, Any]) -> list[str]:
    """The volumes a snapshot must back up: claims and DataVolumes."""
    return [
        str(volume.get("name"))
        for volume in _template_spec(vm).get("volumes") or ()
        if volume.get("persistentVolumeClaim") is not None or volume.get("dataVolume") is not None
    ]


def volume_snapshot_problems(vm: Mapping[str, Any]) -> str | None:
    """Why the VM cannot be snapshotted yet: a claim volume its ``volumeSnapshotStatuses`` call not
    snapshottable, or do not list (yet). Lines joined as Go's ``errors.Join`` joins them."""
    statuses = {
        status.get("name"): status for status in (vm.get("status") or {}).get("volumeSnapshotStatuses") or ()
    }
    problems = []
    for name in _claim_volumes(vm):
        status = statuses.get(name)
        if status is None:
            problems.append(f"Virtual Machine volume {name} snapshot support unknown")
        elif not status.get("enabled"):
            problems.append(f"Virtual Machine volume {name} does not support snapshots")
    return "\n".join(problems) or None


def content_problems(
    snapshot: Mapping[str, Any], content: Mapping[str, Any] | None, content_name: str
) -> str | None:
    """Why a ready snapshot cannot be cloned: its content is missing or names no snapshot, its VM needs
    backend storage, or a claim volume was not backed up."""
    snapshot_meta = snapshot.get("metadata") or {}
    namespace = snapshot_meta.get("namespace")
    if content is None:
        return f"snapshot content {content_name} in namespace {namespace} does not exist"
    spec = content.get("spec") or {}
    named = spec.get("virtualMachineSnapshotName")
    if named is None:
        return f"cannot get snapshot name from content {content_name}"
    vm = (spec.get("source") or {}).get("virtualMachine")
    if not isinstance(vm, Mapping) or (vm.get("spec") or {}).get("template") is None:
        return None
    if template_needs_backend_storage(vm):
        return f"{SOURCE_WITH_BACKEND_STORAGE}: snapshot {namespace}/{snapshot_meta.get('name')}"
    backed_up = {backup.get("volumeName") for backup in spec.get("volumeBackups") or ()}
    missing = [
        f"volume {name} is not backed up in snapshot {named}"
        for name in _claim_volumes(vm)
        if name not in backed_up
    ]
    return "\n".join(missing) or None
