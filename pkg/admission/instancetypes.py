"""A VM's instance type and preference in admission (KubeVirt's ``pkg/instancetype/webhooks/vm``).

The mutating webhook checks the matchers; the validating one looks the objects up (a missing or
unreadable one is only logged, as KubeVirt does, and the VM is then checked without it), applies them
to a copy of the template (refusing conflicts) and, once that copy is defaulted, checks the
preference's requirements.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from kubevirt.admission import causes as c
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import obj, opt_obj, opt_text
from kubevirt.admission.state import ClusterStateError, InstancetypeState, RevisionState, VolumeSourceState
from kubevirt.client.resources import CONTROLLER_REVISIONS, Resource
from kubevirt.instancetype import (
    RequirementError,
    apply_to_vmi,
    check_requirements,
    check_spread_topology,
)
from kubevirt.instancetype.find import FindError, Found, Getter, find_instancetype, find_preference
from kubevirt.instancetype.infer import InferenceError, infer_matchers
from kubevirt.log import get_logger
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1.vm import (
    InferFromVolumeFailurePolicy,
    VirtualMachine,
)
from kubevirt_api.instancetype.v1beta1 import VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec
from kubevirt_api.k8s.meta_v1 import ObjectMeta
from kubevirt_api.view import JSON

__all__ = [
    "SelectedSpecs",
    "expansion_causes",
    "find_specs",
    "infer_from_volumes",
    "matcher_causes",
    "matcher_update_causes",
    "requirement_causes",
]

_TEMPLATE_SPEC: Final = "spec.template.spec"
_FAILURE_POLICIES: Final = (
    InferFromVolumeFailurePolicy.IGNORE_INFER_FROM_VOLUME_FAILURE,
    InferFromVolumeFailurePolicy.REJECT_INFER_FROM_VOLUME_FAILURE,
)

_log = get_logger(component="virt-api")
_Spec = TypeVar("_Spec", VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec)


@dataclass(frozen=True)
class SelectedSpecs:
    """The specs a VM selects; ``None`` for what it does not select or what could not be found."""

    instancetype: VirtualMachineInstancetypeSpec | None = None
    preference: VirtualMachinePreferenceSpec | None = None


# -- the mutating webhook's matcher checks ----------------------------------------------------------
def _matcher_causes(spec: JSON, key: str, what: str) -> list[StatusCause]:
    matcher = opt_obj(spec, key)
    if matcher is None:
        return []
    field = Path("spec", key)
    name, infer = opt_text(matcher, "name") or "", opt_text(matcher, "inferFromVolume") or ""
    out: list[StatusCause] = []
    if not name and not infer:
        out.append(c.not_found(field, f"Either Name or InferFromVolume should be provided within the {what}"))
    if infer:
        if name:
            message = f"Name should not be provided when InferFromVolume is used within the {what}"
            out.append(c.not_found(field.child("name"), message))
        if opt_text(matcher, "kind"):
            message = f"Kind should not be provided when InferFromVolume is used within the {what}"
            out.append(c.not_found(field.child("kind"), message))
    policy = opt_text(matcher, "inferFromVolumeFailurePolicy")
    if policy is not None and policy not in _FAILURE_POLICIES:
        out.append(
            c.invalid(
                field.child("inferFromVolumeFailurePolicy"),
                f"Invalid value '{policy}' for InferFromVolumeFailurePolicy",
            )
        )
    return out


def matcher_causes(vm: JSON) -> list[StatusCause]:
    """The instance type matcher's causes, else the preference matcher's (the first group only)."""
    spec = obj(vm, "spec")
    return _matcher_causes(spec, "instancetype", "InstancetypeMatcher") or _matcher_causes(
        spec, "preference", "PreferenceMatcher"
    )


def matcher_update_causes(vm: JSON, old: JSON) -> list[StatusCause]:
    """A matcher pinned to a revision may not be renamed without naming a new revision."""
    for key in ("instancetype", "preference"):
        new_matcher, old_matcher = opt_obj(obj(vm, "spec"), key), opt_obj(obj(old, "spec"), key)
        if new_matcher is None or old_matcher is None or not opt_text(old_matcher, "revisionName"):
            continue
        renamed = opt_text(new_matcher, "name") != opt_text(old_matcher, "name")
        same_revision = opt_text(new_matcher, "revisionName") == opt_text(old_matcher, "revisionName")
        if new_matcher != old_matcher and renamed and same_revision:
            message = "the Matcher Name has been updated without updating the RevisionName"
            return [c.invalid(Path("spec", key, "revisionName"), message)]
    return []


def infer_from_volumes(vm: JSON, state: object, namespace: str) -> None:
    """The mutating webhook's ``inferFromVolume`` step on ``vm`` (changed in place; ``namespace`` is the
    request's); raises :class:`InferenceError`. Without a way to read volumes, a matcher that infers
    cannot be resolved."""
    spec = opt_obj(vm, "spec") or {}
    inferring = any(
        opt_text(opt_obj(spec, key) or {}, "inferFromVolume") for key in ("instancetype", "preference")
    )
    if not inferring:
        return
    if not isinstance(state, VolumeSourceState):
        raise InferenceError("no Kubernetes API configured to look up volumes to infer defaults from")
    try:
        infer_matchers(vm, _Volumes(state, namespace))
    except ClusterStateError as err:
        raise InferenceError(str(err)) from None


@dataclass(frozen=True)
class _Volumes:
    """The state's volume lookups; a VM without a namespace looks in the request's."""

    state: VolumeSourceState
    namespace: str

    def get_volume_source(self, kind: str, namespace: str, name: str) -> JSON | None:
        return self.state.get_volume_source(kind, namespace or self.namespace, name)


# -- the validating webhook ---------------------------------------------------------------------------
def _getter(state: InstancetypeState, namespace: str) -> Getter:
    """The state's lookups in the finder's terms; ControllerRevisions only where the state has them."""

    def get(resource: Resource, where: str | None, name: str) -> JSON | None:
        if resource.plural == CONTROLLER_REVISIONS.plural:
            if not isinstance(state, RevisionState):
                return None
            return state.get_controller_revision(where or namespace, name)
        return state.get_instancetype_object(resource.kind, where or namespace, name)

    return get


def _spec_or_none(find: Callable[[], Found[_Spec] | None], what: str) -> _Spec | None:
    """The selected spec; ``None`` (logged) when it cannot be found or read."""
    try:
        found = find()
    except (FindError, ClusterStateError, ApiParseError) as err:
        _log.warning(f"ignoring an error looking for the {what}", error=str(err))
        return None
    return found.spec if found is not None else None


def find_specs(vm: VirtualMachine, namespace: str, state: InstancetypeState | None) -> SelectedSpecs:
    """The selected specs; what cannot be found is logged and left out, as KubeVirt's admitter does.

    Without ``state`` nothing can be looked up. As in KubeVirt, a VM's stored ControllerRevision
    (``revisionName``, or the one its status records) is used before the live object.
    """
    if state is None or (vm.spec.instancetype is None and vm.spec.preference is None):
        return SelectedSpecs()
    where = vm.metadata.namespace if vm.metadata and vm.metadata.namespace else namespace
    get = _getter(state, where)
    return SelectedSpecs(
        _spec_or_none(lambda: find_instancetype(vm, get), "instance type"),
        _spec_or_none(lambda: find_preference(vm, get), "preference"),
    )


def expansion_causes(vm: VirtualMachine, selected: SelectedSpecs) -> list[StatusCause]:
    """Applies the selected specs to ``vm``'s template in place; the causes when they conflict."""
    if selected.instancetype is None and selected.preference is None:
        return []
    spread = check_spread_topology(selected.instancetype, selected.preference)
    if spread is not None:
        return [c.invalid(spread.path, spread.message)]
    template = vm.spec.template
    if template is None or template.spec is None:
        return []
    template.metadata = template.metadata or ObjectMeta()
    conflicts = apply_to_vmi(
        _TEMPLATE_SPEC, selected.instancetype, selected.preference, template.spec, template.metadata
    )
    return [c.invalid(conflict.path, conflict.message) for conflict in conflicts]


def requirement_causes(vm: VirtualMachine, selected: SelectedSpecs) -> list[StatusCause]:
    """The preference's requirements against the expanded and defaulted template."""
    template = vm.spec.template
    if template is None or template.spec is None:
        return []
    try:
        check_requirements(selected.instancetype, selected.preference, template.spec)
    except RequirementError as err:
        return [c.not_found(err.field, f"failure checking preference requirements: {err}")]
    return []
