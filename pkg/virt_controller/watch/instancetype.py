"""The VM controller's view of instance types and preferences: finding the ones a VM selects in the
informer stores and recording them in the VM's status.

KubeVirt stores a ControllerRevision of each selected object and builds VMIs from it, so that later
edits of the object do not reach the VM. No ControllerRevisions are written here: the status records
the revision name KubeVirt would use (``<vm>-<object>-<version>-<uid>-<generation>``) and the VMI is
built from the object as the store holds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from kubevirt.controller import Store, key_for
from kubevirt.instancetype.matcher import (
    UnexpectedKindError,
    instancetype_kind,
    not_found_message,
    preference_kind,
)
from kubevirt.virt_controller.watch.common import SyncError
from kubevirt_api.core.v1.vm import (
    ControllerRevisionRef,
    InstancetypeMatcher,
    InstancetypeStatusRef,
    PreferenceMatcher,
    VirtualMachine,
    VirtualMachineStatus,
)
from kubevirt_api.instancetype import constants as names
from kubevirt_api.instancetype.v1beta1 import (
    VirtualMachineClusterInstancetype,
    VirtualMachineClusterPreference,
    VirtualMachineInstancetype,
    VirtualMachineInstancetypeSpec,
    VirtualMachinePreference,
    VirtualMachinePreferenceSpec,
)
from kubevirt_api.k8s.meta_v1 import ObjectMeta

__all__ = [
    "FAILED_FIND_INSTANCETYPE_REASON",
    "FAILED_FIND_PREFERENCE_REASON",
    "Found",
    "InstancetypeStores",
    "Selection",
    "find_selection",
    "revision_name",
    "sync_status_refs",
]

FAILED_FIND_INSTANCETYPE_REASON: Final = "FailedFindInstancetype"
FAILED_FIND_PREFERENCE_REASON: Final = "FailedFindPreference"

S = TypeVar("S", VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec)


@dataclass(frozen=True)
class Found(Generic[S]):
    """A selected object: its metadata (for the revision name) and its spec."""

    metadata: ObjectMeta
    spec: S


@dataclass(frozen=True)
class Selection:
    instancetype: Found[VirtualMachineInstancetypeSpec] | None = None
    preference: Found[VirtualMachinePreferenceSpec] | None = None


@dataclass(frozen=True)
class InstancetypeStores:
    """Informer stores of the four kinds; a missing store finds nothing."""

    instancetypes: Store[VirtualMachineInstancetype] | None = None
    cluster_instancetypes: Store[VirtualMachineClusterInstancetype] | None = None
    preferences: Store[VirtualMachinePreference] | None = None
    cluster_preferences: Store[VirtualMachineClusterPreference] | None = None


@dataclass(frozen=True)
class _Kinds:
    """How to find one of the two selections: kind resolution, its stores, the reason it failed."""

    resolve: Callable[[str | None], str]
    namespaced_kind: str
    namespaced: Store[Any] | None
    cluster: Store[Any] | None
    failure_reason: str


def _select(
    matcher: InstancetypeMatcher | PreferenceMatcher | None, namespace: str | None, kinds: _Kinds
) -> Found[Any] | None:
    if matcher is None:
        return None
    name = matcher.name or ""
    try:
        kind = kinds.resolve(matcher.kind)
    except UnexpectedKindError as err:
        raise SyncError(str(err), kinds.failure_reason) from None
    if kind == kinds.namespaced_kind:
        key, store = key_for(namespace, name), kinds.namespaced
    else:
        key, store = name, kinds.cluster
    found = store.get_by_key(key) if store is not None else None
    if found is None:
        raise SyncError(not_found_message(kind, name), kinds.failure_reason)
    return Found(found.metadata or ObjectMeta(), found.spec)


def find_selection(vm: VirtualMachine, stores: InstancetypeStores) -> Selection:
    """What the VM selects; raises :class:`SyncError` (KubeVirt's reasons) when one is missing."""
    namespace = vm.metadata.namespace if vm.metadata is not None else None
    instancetypes = _Kinds(
        instancetype_kind,
        names.INSTANCETYPE_KIND,
        stores.instancetypes,
        stores.cluster_instancetypes,
        FAILED_FIND_INSTANCETYPE_REASON,
    )
    preferences = _Kinds(
        preference_kind,
        names.PREFERENCE_KIND,
        stores.preferences,
        stores.cluster_preferences,
        FAILED_FIND_PREFERENCE_REASON,
    )
    return Selection(
        _select(vm.spec.instancetype, namespace, instancetypes),
        _select(vm.spec.preference, namespace, preferences),
    )


def revision_name(vm_name: str, found: Found[S]) -> str:
    """The ControllerRevision name KubeVirt gives its copy of ``found`` for this VM."""
    meta = found.metadata
    version = names.INSTANCETYPE_LATEST_VERSION
    return f"{vm_name}-{meta.name or ''}-{version}-{meta.uid or ''}-{meta.generation or 0}"


def _synced_ref(
    current: InstancetypeStatusRef | None,
    matcher: InstancetypeMatcher | PreferenceMatcher,
    found: Found[S],
    vm_name: str,
) -> InstancetypeStatusRef:
    """KubeVirt's ``syncStatusWithMatcher``: a changed name, kind or volume drops the recorded revision."""
    ref = current.model_copy(deep=True) if current is not None else InstancetypeStatusRef()
    changed = False
    for attribute in ("name", "kind", "infer_from_volume"):
        wanted = getattr(matcher, attribute)
        if wanted and wanted != getattr(ref, attribute):
            setattr(ref, attribute, wanted)
            changed = True
    if changed:
        ref.controller_revision_ref = None
    if matcher.infer_from_volume_failure_policy is not None:
        ref.infer_from_volume_failure_policy = matcher.infer_from_volume_failure_policy
    pinned = matcher.revision_name
    if pinned and (ref.controller_revision_ref is None or ref.controller_revision_ref.name != pinned):
        ref.controller_revision_ref = ControllerRevisionRef(name=pinned)
    if ref.controller_revision_ref is None:
        ref.controller_revision_ref = ControllerRevisionRef(name=revision_name(vm_name, found))
    return ref


def sync_status_refs(vm: VirtualMachine, status: VirtualMachineStatus, selection: Selection) -> None:
    """Records ``status.instancetypeRef`` / ``preferenceRef`` for what the VM selects."""
    vm_name = vm.metadata.name or "" if vm.metadata is not None else ""
    if vm.spec.instancetype is not None and selection.instancetype is not None:
        status.instancetype_ref = _synced_ref(
            status.instancetype_ref, vm.spec.instancetype, selection.instancetype, vm_name
        )
    if vm.spec.preference is not None and selection.preference is not None:
        status.preference_ref = _synced_ref(
            status.preference_ref, vm.spec.preference, selection.preference, vm_name
        )
