"""The VM controller's part of instance types and preferences: finding what a VM selects, storing
ControllerRevisions of it and recording them in ``status.instancetypeRef`` / ``preferenceRef``.

As in KubeVirt, a VM's first sync copies the selected objects into ControllerRevisions it owns and
records their names; from then on VMIs are built from those copies, so editing an instance type does
not change the VM. A new copy is taken when the matcher's name, kind or volume changes, or when the
user clears ``controllerRevisionRef`` (KubeVirt's way to move a VM to a newer version of an object);
``spec.<matcher>.revisionName`` pins a given revision.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from kubevirt.client import VIRTUAL_MACHINES, KubeApi
from kubevirt.client.errors import AlreadyExistsError, ApiError, NotFoundError
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
    VIRTUAL_MACHINE_INSTANCETYPES,
    VIRTUAL_MACHINE_PREFERENCES,
    Resource,
)
from kubevirt.controller import Store, key_for
from kubevirt.instancetype import apply_to_vmi, conflicts_message
from kubevirt.instancetype.expand import ExpandError, expand_vm
from kubevirt.instancetype.find import (
    INSTANCETYPE,
    PREFERENCE,
    FindError,
    Found,
    Getter,
    find_instancetype,
    find_live,
    find_preference,
)
from kubevirt.instancetype.revision import RevisionError, build_revision, same_spec
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_controller.watch.common import SyncError, describe_api_error
from kubevirt_api.core.v1.vm import (
    ControllerRevisionRef,
    InstancetypeMatcher,
    InstancetypeStatusRef,
    PreferenceMatcher,
    VirtualMachine,
    VirtualMachineStatus,
)
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
    "STORE_REVISION_ERROR_FORMAT",
    "InstancetypeStores",
    "InstancetypeSync",
    "Selection",
]

FAILED_FIND_INSTANCETYPE_REASON: Final = "FailedFindInstancetype"
FAILED_FIND_PREFERENCE_REASON: Final = "FailedFindPreference"
FAILED_CREATE_REASON: Final = "FailedCreate"
STORE_REVISION_ERROR_FORMAT: Final = (
    "error encountered while storing instancetype.kubevirt.io controllerRevisions: {}"
)
_FAILED_FIND: Final = {
    INSTANCETYPE: FAILED_FIND_INSTANCETYPE_REASON,
    PREFERENCE: FAILED_FIND_PREFERENCE_REASON,
}


class StoreRevisionError(Exception):
    """Storing a ControllerRevision failed; the message is KubeVirt's inner error."""


@dataclass(frozen=True)
class Selection:
    instancetype: Found[VirtualMachineInstancetypeSpec] | None = None
    preference: Found[VirtualMachinePreferenceSpec] | None = None


@dataclass(frozen=True)
class InstancetypeStores:
    """Informer stores of the four kinds and of ControllerRevisions; what a store lacks is read from
    the API, as KubeVirt's finders do."""

    instancetypes: Store[VirtualMachineInstancetype] | None = None
    cluster_instancetypes: Store[VirtualMachineClusterInstancetype] | None = None
    preferences: Store[VirtualMachinePreference] | None = None
    cluster_preferences: Store[VirtualMachineClusterPreference] | None = None
    revisions: Store[Any] | None = None

    def by_resource(self) -> dict[str, Store[Any] | None]:
        return {
            VIRTUAL_MACHINE_INSTANCETYPES.plural: self.instancetypes,
            VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES.plural: self.cluster_instancetypes,
            VIRTUAL_MACHINE_PREFERENCES.plural: self.preferences,
            VIRTUAL_MACHINE_CLUSTER_PREFERENCES.plural: self.cluster_preferences,
            CONTROLLER_REVISIONS.plural: self.revisions,
        }


def _cache_then_api(stores: InstancetypeStores, api: KubeApi) -> Getter:
    by_resource = stores.by_resource()

    def get(resource: Resource, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        store = by_resource.get(resource.plural)
        cached = store.get_by_key(key_for(namespace, name)) if store is not None else None
        if cached is not None:
            return cached if isinstance(cached, Mapping) else cached.to_dict()
        try:
            return api.get(resource, namespace, name)
        except NotFoundError:
            return None

    return get


class InstancetypeSync:
    """Finds, stores and records what VMs select; one per VM controller."""

    def __init__(self, *, api: KubeApi, stores: InstancetypeStores) -> None:
        self._api = api
        self._get = _cache_then_api(stores, api)

    def select(self, vm: VirtualMachine) -> Selection:
        """The specs the VM's VMIs get (stored copies first); :class:`SyncError` with KubeVirt's
        reasons when one cannot be found."""
        return Selection(
            _found(INSTANCETYPE, lambda: find_instancetype(vm, self._get)),
            _found(PREFERENCE, lambda: find_preference(vm, self._get)),
        )

    def expand_into_vm(self, vm: VirtualMachine, cluster: ClusterConfig) -> VirtualMachine | None:
        """The ``expand`` / ``expandAll`` reference policies: the selection written into the VM itself
        (spec, then status without the references), its old revisions deleted. Returns the VM as
        written, or None when nothing was written (``expand`` leaves VMs that reference revisions)."""
        policy = cluster.instancetype_reference_policy
        if policy == "expand" and (
            _has_revision(vm.status, "instancetype_ref") or _has_revision(vm.status, "preference_ref")
        ):
            return None
        selection = self.select(vm)
        try:
            expanded = expand_vm(
                vm,
                selection.instancetype.spec if selection.instancetype is not None else None,
                selection.preference.spec if selection.preference is not None else None,
                cluster,
            )
        except ExpandError as err:
            raise SyncError(
                f"error encountered while expanding into VirtualMachine: {err}", FAILED_CREATE_REASON
            ) from None
        if expanded == vm:
            return None
        written = self._write_expanded(expanded)
        self._delete_revisions(vm)
        return written

    def _write_expanded(self, expanded: VirtualMachine) -> VirtualMachine:
        """The expanded spec, then its status (without the references), as two writes like KubeVirt."""
        namespace = (expanded.metadata or ObjectMeta()).namespace
        what = "update expanded VirtualMachine"
        try:
            written = self._api.update(VIRTUAL_MACHINES, namespace, expanded.to_dict())
            what = "update expanded VirtualMachine Status"
            written["status"] = expanded.status.to_dict() if expanded.status is not None else {}
            written = self._api.update_status(VIRTUAL_MACHINES, namespace, written)
        except ApiError as err:
            message = f"error encountered when trying to {what}: {describe_api_error(err)}"
            raise SyncError(message, FAILED_CREATE_REASON) from err
        return VirtualMachine.from_dict(written)

    def _delete_revisions(self, vm: VirtualMachine) -> None:
        meta = vm.metadata or ObjectMeta()
        for attribute in ("instancetype_ref", "preference_ref"):
            name = _revision_name(vm.status, attribute)
            if name is None:
                continue
            try:
                self._api.delete(CONTROLLER_REVISIONS, meta.namespace, name)
            except NotFoundError:
                continue
            except ApiError as err:
                message = (
                    f"error encountered cleaning controllerRevision {name} after successfully expanding "
                    f"VirtualMachine {meta.name}: {describe_api_error(err)}"
                )
                raise SyncError(message, FAILED_CREATE_REASON) from err

    def store(self, vm: VirtualMachine) -> dict[str, Any]:
        """Stores missing revisions; returns the status merge patch recording the changed references
        (empty when nothing changed; a merge patch, as a new VM may have no status yet). Raises
        :class:`StoreRevisionError`."""
        changed: dict[str, Any] = {}
        status = vm.status
        if vm.spec.instancetype is not None:
            current = status.instancetype_ref if status is not None else None
            ref = _synced_ref(current, vm.spec.instancetype, lambda: self._create(vm, INSTANCETYPE))
            if ref != current:
                changed["instancetypeRef"] = ref.to_dict()
        if vm.spec.preference is not None:
            current = status.preference_ref if status is not None else None
            ref = _synced_ref(current, vm.spec.preference, lambda: self._create(vm, PREFERENCE))
            if ref != current:
                changed["preferenceRef"] = ref.to_dict()
        return {"status": changed} if changed else {}

    def _create(self, vm: VirtualMachine, which: str) -> str:
        try:
            live = find_live(vm, which, self._get)
        except FindError as err:
            raise StoreRevisionError(err.message) from None
        if which == INSTANCETYPE:
            # The instance type may have changed since admission accepted the VM: check once more.
            _check_conflicts(vm, VirtualMachineInstancetypeSpec.from_dict(live.body.get("spec") or {}))
        revision = build_revision(vm.to_dict(), live.body, live.kind)
        meta = revision["metadata"]
        try:
            created = self._api.create(CONTROLLER_REVISIONS, meta["namespace"], revision)
        except AlreadyExistsError:
            return self._existing(revision)
        except ApiError as err:
            raise StoreRevisionError(
                f"failed to create ControllerRevision: {describe_api_error(err)}"
            ) from err
        return str(created["metadata"]["name"])

    def _existing(self, wanted: dict[str, Any]) -> str:
        """An existing revision of that name is fine if it copies the same spec."""
        meta = wanted["metadata"]
        try:
            existing = self._api.get(CONTROLLER_REVISIONS, meta["namespace"], meta["name"])
        except ApiError as err:
            raise StoreRevisionError(f"failed to get ControllerRevision: {describe_api_error(err)}") from err
        try:
            equal = same_spec(wanted, existing)
        except RevisionError as err:
            raise StoreRevisionError(str(err)) from None
        if not equal:
            raise StoreRevisionError(
                f"found existing ControllerRevision with unexpected data: {meta['name']}"
            )
        return str(meta["name"])


T = TypeVar("T")


def _revision_name(status: VirtualMachineStatus | None, attribute: str) -> str | None:
    ref: InstancetypeStatusRef | None = getattr(status, attribute) if status is not None else None
    return ref.controller_revision_ref.name or None if ref and ref.controller_revision_ref else None


def _has_revision(status: VirtualMachineStatus | None, attribute: str) -> bool:
    return _revision_name(status, attribute) is not None


def _found(which: str, find: Callable[[], T]) -> T:
    try:
        return find()
    except FindError as err:
        raise SyncError(err.message, _FAILED_FIND[which]) from None
    except ApiError as err:
        raise SyncError(describe_api_error(err), _FAILED_FIND[which]) from err


def _check_conflicts(vm: VirtualMachine, spec: VirtualMachineInstancetypeSpec) -> None:
    template = vm.spec.template
    if template.spec is None:
        return
    metadata = template.metadata.model_copy(deep=True) if template.metadata is not None else ObjectMeta()
    conflicts = apply_to_vmi("spec.template.spec", spec, None, template.spec.model_copy(deep=True), metadata)
    if conflicts:
        raise StoreRevisionError(conflicts_message(conflicts))


def _synced_ref(
    current: InstancetypeStatusRef | None,
    matcher: InstancetypeMatcher | PreferenceMatcher,
    create: Callable[[], str],
) -> InstancetypeStatusRef:
    """KubeVirt's ``syncStatusWithMatcher``: a changed name, kind or volume drops the recorded
    revision; a pinned ``revisionName`` wins; without a revision a new one is stored."""
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
        ref.controller_revision_ref = ControllerRevisionRef(name=create())
    return ref
