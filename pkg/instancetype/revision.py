"""ControllerRevisions holding a VM's copy of its instance type or preference, shaped as KubeVirt's.

A VM's VMIs are built from this copy rather than from the live object, so editing the object later
does not change the VM until the user lets it take a new copy. The revision holds the whole object
(``apiVersion``, ``kind``, trimmed ``metadata``, ``spec``) in ``data``, is labelled with what it copies
and is controlled by the VM, so it is garbage-collected with the VM.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubevirt_api.core.v1.constants import API_VERSION
from kubevirt_api.instancetype import constants as names
from kubevirt_api.instancetype.v1beta1 import VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec
from kubevirt_api.view import JSON

__all__ = [
    "RevisionError",
    "build_revision",
    "generate_name",
    "instancetype_spec_of",
    "object_name_of",
    "preference_spec_of",
    "same_spec",
]


_INSTANCETYPE_KINDS: Final = frozenset({names.INSTANCETYPE_KIND, names.CLUSTER_INSTANCETYPE_KIND})
_PREFERENCE_KINDS: Final = frozenset({names.PREFERENCE_KIND, names.CLUSTER_PREFERENCE_KIND})
# Metadata a copy does not need: it describes the live object's bookkeeping, not its content.
_DROPPED_METADATA: Final = ("labels", "annotations", "finalizers", "ownerReferences", "managedFields")
_API_VERSION: Final = f"{names.INSTANCETYPE_GROUP_NAME}/{names.INSTANCETYPE_LATEST_VERSION}"


class RevisionError(ValueError):
    """A ControllerRevision that does not hold the kind of object asked for."""


def generate_name(vm_name: str, object_name: str, version: str, uid: str, generation: int) -> str:
    """``<vm>-<object>-<version>-<uid>-<generation>``: one name per copied generation of an object."""
    return f"{vm_name}-{object_name}-{version}-{uid}-{generation}"


def build_revision(vm: Mapping[str, Any], obj: Mapping[str, Any], kind: str) -> JSON:
    """The ControllerRevision copying ``obj`` (an instance type or preference of ``kind``) for ``vm``."""
    vm_meta = vm.get("metadata") or {}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _DROPPED_METADATA}
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    generation = int(meta.get("generation") or 0)
    version = names.INSTANCETYPE_LATEST_VERSION
    data = {"apiVersion": _API_VERSION, "kind": kind, "metadata": meta, "spec": obj.get("spec") or {}}
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": generate_name(str(vm_meta.get("name") or ""), name, version, uid, generation),
            "namespace": vm_meta.get("namespace"),
            "ownerReferences": [
                {
                    "apiVersion": API_VERSION,
                    "kind": "VirtualMachine",
                    "name": vm_meta.get("name"),
                    "uid": vm_meta.get("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "labels": {
                names.CONTROLLER_REVISION_OBJECT_GENERATION_LABEL: str(generation),
                names.CONTROLLER_REVISION_OBJECT_KIND_LABEL: kind,
                names.CONTROLLER_REVISION_OBJECT_NAME_LABEL: name,
                names.CONTROLLER_REVISION_OBJECT_UID_LABEL: uid,
                names.CONTROLLER_REVISION_OBJECT_VERSION_LABEL: version,
            },
        },
        "data": data,
        "revision": 0,
    }


def object_name_of(revision: Mapping[str, Any]) -> str | None:
    """The name of the object a revision copies, from its label (None on revisions without it)."""
    labels = (revision.get("metadata") or {}).get("labels") or {}
    name = labels.get(names.CONTROLLER_REVISION_OBJECT_NAME_LABEL)
    return str(name) if name is not None else None


def _data(revision: Mapping[str, Any], kinds: frozenset[str]) -> Mapping[str, Any]:
    data = revision.get("data")
    kind = data.get("kind") if isinstance(data, Mapping) else None
    api_version = data.get("apiVersion") if isinstance(data, Mapping) else None
    if not isinstance(data, Mapping) or kind not in kinds or api_version != _API_VERSION:
        shown = f"{api_version}, Kind={kind}" if isinstance(data, Mapping) else type(data).__name__
        raise RevisionError(f"unexpected type in ControllerRevision: {shown}")
    return data


def instancetype_spec_of(revision: Mapping[str, Any]) -> VirtualMachineInstancetypeSpec:
    """The instance type spec a revision holds; :class:`RevisionError` if it holds something else."""
    spec = _data(revision, _INSTANCETYPE_KINDS).get("spec") or {}
    try:
        return VirtualMachineInstancetypeSpec.from_dict(spec)
    except ValueError as err:
        raise RevisionError(f"failed to decode object in ControllerRevision: {err}") from None


def preference_spec_of(revision: Mapping[str, Any]) -> VirtualMachinePreferenceSpec:
    """The preference spec a revision holds; :class:`RevisionError` if it holds something else."""
    spec = _data(revision, _PREFERENCE_KINDS).get("spec") or {}
    try:
        return VirtualMachinePreferenceSpec.from_dict(spec)
    except ValueError as err:
        raise RevisionError(f"failed to decode object in ControllerRevision: {err}") from None


def same_spec(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two revisions copy the same spec (KubeVirt accepts an existing revision only then)."""
    kinds = _INSTANCETYPE_KINDS | _PREFERENCE_KINDS
    first, second = _data(a, kinds), _data(b, kinds)
    if (first.get("kind") in _INSTANCETYPE_KINDS) != (second.get("kind") in _INSTANCETYPE_KINDS):
        return False
    if first.get("kind") in _INSTANCETYPE_KINDS:
        return instancetype_spec_of(a) == instancetype_spec_of(b)
    return preference_spec_of(a) == preference_spec_of(b)
