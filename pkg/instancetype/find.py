"""Finding the instance type and preference a VM uses, as KubeVirt's spec finders do.

A stored copy comes first: the ControllerRevision ``spec.<matcher>.revisionName`` names, else the one
``status.<matcher>Ref.controllerRevisionRef`` names when it copies the object the matcher names now.
Only without either is the live object read. Callers hand in a ``Getter`` (informer stores, the API,
or offline objects), so the VM controller and virt-api share one set of rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from kubevirt.client.resources import CONTROLLER_REVISIONS, INSTANCETYPE_RESOURCES, Resource
from kubevirt.instancetype.matcher import UnexpectedKindError, instancetype_kind, preference_kind
from kubevirt.instancetype.revision import (
    RevisionError,
    instancetype_spec_of,
    object_name_of,
    preference_spec_of,
)
from kubevirt_api.core.v1.vm import (
    InstancetypeMatcher,
    InstancetypeStatusRef,
    PreferenceMatcher,
    VirtualMachine,
)
from kubevirt_api.instancetype import constants as names
from kubevirt_api.instancetype.v1beta1 import VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec
from kubevirt_api.view import JSON

__all__ = [
    "FindError",
    "Found",
    "Getter",
    "LiveObject",
    "find_instancetype",
    "find_live",
    "find_preference",
]

# Reads one object; None when it does not exist. Other failures propagate.
Getter = Callable[[Resource, str | None, str], Mapping[str, Any] | None]

S = TypeVar("S", VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec)

INSTANCETYPE: Final = "instancetype"
PREFERENCE: Final = "preference"


class FindError(Exception):
    """What the VM selects cannot be found; ``which`` is ``instancetype`` or ``preference``."""

    def __init__(self, which: str, message: str) -> None:
        super().__init__(message)
        self.which = which
        self.message = message


@dataclass(frozen=True)
class Found(Generic[S]):
    """The spec to apply, from the VM's stored revision or the live object."""

    spec: S


@dataclass(frozen=True)
class LiveObject:
    """The object a matcher names as it is now, with its resolved kind."""

    kind: str
    body: Mapping[str, Any]


@dataclass(frozen=True)
class _Which:
    name: str
    resolve: Callable[[str | None], str]
    namespaced_kind: str
    decode: Callable[[Mapping[str, Any]], Any]


_INSTANCETYPE: Final = _Which(INSTANCETYPE, instancetype_kind, names.INSTANCETYPE_KIND, instancetype_spec_of)
_PREFERENCE: Final = _Which(PREFERENCE, preference_kind, names.PREFERENCE_KIND, preference_spec_of)


def _not_found(resource: Resource, name: str) -> str:
    group = f".{resource.group}" if resource.group else ""
    return f'{resource.plural}{group} "{name}" not found'


def _revision(namespace: str | None, name: str, get: Getter, which: _Which) -> Mapping[str, Any]:
    revision = get(CONTROLLER_REVISIONS, namespace, name)
    if revision is None:
        raise FindError(which.name, _not_found(CONTROLLER_REVISIONS, name))
    return revision


def _stored(
    matcher: InstancetypeMatcher | PreferenceMatcher,
    ref: InstancetypeStatusRef | None,
    namespace: str | None,
    get: Getter,
    which: _Which,
) -> Mapping[str, Any] | None:
    """The revision to use: the pinned one, else the recorded one if it copies the named object."""
    if matcher.revision_name:
        return _revision(namespace, matcher.revision_name, get, which)
    recorded = ref.controller_revision_ref.name if ref and ref.controller_revision_ref else None
    if recorded:
        revision = _revision(namespace, recorded, get, which)
        if object_name_of(revision) == matcher.name:
            return revision
    return None


def _live(
    matcher: InstancetypeMatcher | PreferenceMatcher, namespace: str | None, get: Getter, which: _Which
) -> LiveObject:
    try:
        kind = which.resolve(matcher.kind)
    except UnexpectedKindError as err:
        raise FindError(which.name, str(err)) from None
    resource = INSTANCETYPE_RESOURCES[kind]
    name = matcher.name or ""
    body = get(resource, namespace if kind == which.namespaced_kind else None, name)
    if body is None:
        raise FindError(which.name, _not_found(resource, name))
    return LiveObject(kind, body)


def _find(
    vm: VirtualMachine,
    matcher: InstancetypeMatcher | PreferenceMatcher | None,
    ref: InstancetypeStatusRef | None,
    get: Getter,
    which: _Which,
) -> Found[Any] | None:
    if matcher is None:
        return None
    namespace = vm.metadata.namespace if vm.metadata is not None else None
    revision = _stored(matcher, ref, namespace, get, which)
    try:
        if revision is not None:
            return Found(which.decode(revision))
        live = _live(matcher, namespace, get, which)
        return Found(which.decode({"data": _as_data(live)}))
    except RevisionError as err:
        raise FindError(which.name, str(err)) from None


def _as_data(live: LiveObject) -> JSON:
    """A live object in a revision's ``data`` shape, so one decoder reads both."""
    api_version = f"{names.INSTANCETYPE_GROUP_NAME}/{names.INSTANCETYPE_LATEST_VERSION}"
    return {"apiVersion": api_version, "kind": live.kind, "spec": live.body.get("spec") or {}}


def find_instancetype(vm: VirtualMachine, get: Getter) -> Found[VirtualMachineInstancetypeSpec] | None:
    """The instance type spec ``vm`` uses, or None when it selects none; :class:`FindError` if missing."""
    ref = vm.status.instancetype_ref if vm.status is not None else None
    found: Found[VirtualMachineInstancetypeSpec] | None = _find(
        vm, vm.spec.instancetype, ref, get, _INSTANCETYPE
    )
    return found


def find_preference(vm: VirtualMachine, get: Getter) -> Found[VirtualMachinePreferenceSpec] | None:
    """The preference spec ``vm`` uses, or None when it selects none; :class:`FindError` if missing."""
    ref = vm.status.preference_ref if vm.status is not None else None
    found: Found[VirtualMachinePreferenceSpec] | None = _find(vm, vm.spec.preference, ref, get, _PREFERENCE)
    return found


def find_live(vm: VirtualMachine, which: str, get: Getter) -> LiveObject:
    """The live instance type (``which="instancetype"``) or preference the VM's matcher names."""
    chosen = _INSTANCETYPE if which == INSTANCETYPE else _PREFERENCE
    matcher = vm.spec.instancetype if which == INSTANCETYPE else vm.spec.preference
    if matcher is None:
        raise ValueError(f"the VM selects no {which}")
    namespace = vm.metadata.namespace if vm.metadata is not None else None
    return _live(matcher, namespace, get, chosen)
