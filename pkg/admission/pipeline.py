"""What KubeVirt does to an object between the API server and the answer, as plain functions.

For a VMI create (conformance README §4): schema check on the raw object, decode, defaulting (the
mutating webhook), schema check on the result, then the create admitter's causes. The schema check and
the cluster-aware defaulting are supplied by the caller, so this module depends on neither.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

from kubevirt.admission import causes as c
from kubevirt.admission import instancetype_objects, instancetypes
from kubevirt.admission import vm as vm_rules
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.review import CREATE
from kubevirt.admission.state import InstancetypeState
from kubevirt.admission.vmi_create import admit_vmi_create
from kubevirt.defaults import DefaultingError
from kubevirt.instancetype.infer import InferenceError
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.core.v1.vmi import VirtualMachineInstance
from kubevirt_api.instancetype import constants as instancetype_names
from kubevirt_api.instancetype.v1beta1 import VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec
from kubevirt_api.view import JSON

# kind, object -> causes (message only), e.g. an OpenAPI check against the CRD's schema.
SchemaCheck = Callable[[str, JSON], list[StatusCause]]
# The webhook's cluster-aware defaulting of a decoded VMI (SetDefaultVirtualMachineInstance), in place.
VMIDefaulter = Callable[[VirtualMachineInstance, ClusterConfig], None]
# The same for a VM's template (SetDefaultVirtualMachine), in place.
VMDefaulter = Callable[[VirtualMachine, ClusterConfig], None]

_PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")


def no_schema_check(_kind: str, _obj: JSON) -> list[StatusCause]:
    return []


def defaulting_causes(err: DefaultingError) -> list[StatusCause]:
    return [c.invalid(err.field, err.message)]


def decode_causes(err: ApiParseError) -> list[StatusCause]:
    """A decode failure as KubeVirt reports it: one message-only cause (Go stops at the first error)."""
    if not err.causes:
        return [c.message_only(str(err))]
    message = err.causes[0].message
    for prefix in _PYDANTIC_PREFIXES:
        if message.startswith(prefix):
            message = message[len(prefix) :]
    return [c.message_only(message)]


@dataclass(frozen=True)
class Outcome:
    """The causes (empty when accepted) and, when defaulting ran, the defaulted object."""

    causes: list[StatusCause]
    defaulted: JSON | None = None

    @property
    def accepted(self) -> bool:
        return not self.causes


def default_vmi(raw: JSON, config: ClusterConfig, defaulter: VMIDefaulter) -> JSON:
    """Decode and default a VMI; raises :class:`ApiParseError` on a decode failure."""
    model = VirtualMachineInstance.from_dict(raw)
    defaulter(model, config)
    return model.to_dict()


def default_vm(raw: JSON, config: ClusterConfig, defaulter: VMDefaulter) -> JSON:
    model = VirtualMachine.from_dict(raw)
    defaulter(model, config)
    return model.to_dict()


def expand_and_default_vm(
    raw: JSON,
    config: ClusterConfig,
    defaulter: VMDefaulter,
    *,
    state: InstancetypeState | None = None,
    namespace: str = "",
) -> tuple[JSON, list[StatusCause]]:
    """The validating webhook's working copy of a VM: its instance type and preference applied, then
    defaulted, and the causes refusing it (conflicts first, then unmet preference requirements).

    ``state`` finds the instance type and preference (none are applied without it); ``namespace`` is
    the request's, for a VM whose metadata names none. Raises :class:`ApiParseError` on a decode
    failure and :class:`DefaultingError` when defaulting fails.
    """
    model = VirtualMachine.from_dict(raw)
    selected = instancetypes.find_specs(model, namespace, state)
    causes = instancetypes.expansion_causes(model, selected)
    if causes:
        return model.to_dict(), causes
    defaulter(model, config)
    return model.to_dict(), instancetypes.requirement_causes(model, selected)


def validate_vmi_create(
    raw: JSON,
    config: ClusterConfig,
    *,
    defaulter: VMIDefaulter,
    schema: SchemaCheck = no_schema_check,
    kubevirt_account: bool = False,
) -> Outcome:
    causes = schema("VirtualMachineInstance", raw)
    if causes:
        return Outcome(causes)
    try:
        defaulted = default_vmi(copy.deepcopy(raw), config, defaulter)
    except ApiParseError as err:
        return Outcome(decode_causes(err))
    except DefaultingError as err:
        return Outcome(defaulting_causes(err))
    causes = schema("VirtualMachineInstance", defaulted)
    if causes:
        return Outcome(causes, defaulted)
    return Outcome(admit_vmi_create(defaulted, config, kubevirt_account=kubevirt_account), defaulted)


def validate_vm(
    raw: JSON,
    config: ClusterConfig,
    *,
    defaulter: VMDefaulter,
    schema: SchemaCheck = no_schema_check,
    operation: str = CREATE,
    kubevirt_account: bool = False,
    state: InstancetypeState | None = None,
    namespace: str = "",
) -> Outcome:
    """VM admission: the mutating webhook (decode, instance type matchers), then the validating one on
    a copy with the instance type and preference applied and defaults set (see
    :func:`expand_and_default_vm`)."""
    causes = schema("VirtualMachine", raw)
    if causes:
        return Outcome(causes)
    try:
        VirtualMachine.from_dict(raw)
    except ApiParseError as err:
        return Outcome(decode_causes(err))
    causes = instancetypes.matcher_causes(raw)
    if causes:
        return Outcome(causes)
    inferred = copy.deepcopy(raw)
    try:
        if state is not None:  # offline without objects, as with missing instance types: tolerated
            instancetypes.infer_from_volumes(inferred, state, namespace)
    except InferenceError as err:
        # The webhook refuses with a plain 400 message (no field): one message-only cause here.
        return Outcome([c.message_only(err.message)])
    try:
        defaulted, causes = expand_and_default_vm(
            inferred, config, defaulter, state=state, namespace=namespace
        )
    except DefaultingError as err:
        return Outcome(defaulting_causes(err))
    if causes:
        return Outcome(causes, defaulted)
    return Outcome(
        vm_rules.admit_vm(defaulted, config, operation=operation, kubevirt_account=kubevirt_account),
        defaulted,
    )


INSTANCETYPE_OBJECT_KINDS = (
    instancetype_names.INSTANCETYPE_KIND,
    instancetype_names.CLUSTER_INSTANCETYPE_KIND,
    instancetype_names.PREFERENCE_KIND,
    instancetype_names.CLUSTER_PREFERENCE_KIND,
)


def validate_instancetype_object(raw: JSON, *, schema: SchemaCheck = no_schema_check) -> Outcome:
    """Admission of an instance type or preference (``kind`` picks which): schema, then the rules."""
    kind = str(raw.get("kind", ""))
    causes = schema(kind, raw)
    if causes:
        return Outcome(causes)
    spec = raw.get("spec")
    try:
        if kind in (instancetype_names.INSTANCETYPE_KIND, instancetype_names.CLUSTER_INSTANCETYPE_KIND):
            return Outcome(
                instancetype_objects.instancetype_spec_causes(
                    VirtualMachineInstancetypeSpec.from_dict(spec or {})
                )
            )
        preference = VirtualMachinePreferenceSpec.from_dict(spec or {})
    except ApiParseError as err:
        return Outcome(decode_causes(err))
    return Outcome(instancetype_objects.preference_spec_causes(preference))
