"""VirtualMachineClone admission (KubeVirt v1.6's ``vmclone-admitter.go`` and ``clone-create-mutator.go``).

The validator checks the label/annotation filters' syntax, the source and target kinds and names, the new
MAC addresses and that each custom patch is JSON; creating a clone needs the ``Snapshot`` feature gate
(clones are made through a snapshot and a restore). The mutator gives a clone without a target name one:
``clone-<source name>-<5 random characters>``.

Differences from KubeVirt, where its webhook would crash on a nil pointer (unreachable through the API
server, whose schema requires ``spec.source`` before the validator runs): a clone without a source is
refused with "Source cannot be nil", and an empty filter is skipped.
"""

from __future__ import annotations

import json
from typing import Any, Final

from kubevirt.admission import causes as c
from kubevirt.admission import response
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.hardware import parse_mac
from kubevirt.admission.json_fields import obj, opt_obj, opt_text, string_map, text
from kubevirt.admission.pipeline import SchemaCheck, no_schema_check
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import CREATE
from kubevirt.admission.snapshot import SNAPSHOT_FEATURE_GATE
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.clone.v1beta1.types import CLONE_GROUP_NAME
from kubevirt_api.core.v1.constants import GROUP_NAME
from kubevirt_api.view import JSON, as_list

CLONES: Final = "virtualmachineclones"
CLONE_KIND: Final = "VirtualMachineClone"
VIRTUAL_MACHINE_KIND: Final = "VirtualMachine"
VIRTUAL_MACHINE_SNAPSHOT_KIND: Final = "VirtualMachineSnapshot"
CLONE_GATE_DISABLED: Final = "snapshot feature gate is not enabled"

_NEGATION: Final = "!"
_WILDCARD: Final = "*"
_FILTER_ERROR: Final = (
    "{field} filter {filter} is invalid: cannot contain a {what} character ({char}); FilterRules: {rule}"
)
_MAC_LENGTH: Final = 6

SPEC: Final = Path("spec")
# KubeVirt names these fields after the Go struct ("spec.Source.Kind").
_SOURCE: Final = SPEC.child("Source")
_TARGET: Final = SPEC.child("Target")


def clone_resource_error(group: str, resource: str) -> AdmissionResponse | None:
    """The validator's own resource check, worded as KubeVirt's (None when the request is a clone's)."""
    if group != CLONE_GROUP_NAME:
        return response.error(f"unexpected group: {group}. Expected group: {CLONE_GROUP_NAME}")
    if resource != CLONES:
        return response.error(f"unexpected resource: {resource}. Expected resource: {CLONES}")
    return None


# --- Validation ---


def admit_vm_clone(operation: str, clone: JSON, config: ClusterConfig) -> AdmissionResponse:
    """The answer for a VirtualMachineClone created or updated (both are checked the same way)."""
    if operation == CREATE and not config.enabled(SNAPSHOT_FEATURE_GATE):
        return response.error(CLONE_GATE_DISABLED)
    return response.from_causes(vm_clone_causes(clone))


def vm_clone_causes(clone: JSON) -> list[StatusCause]:
    """Every cause KubeVirt's admitter finds, in its order."""
    spec = obj(clone, "spec")
    template = obj(spec, "template")
    return [
        *filter_causes(spec.get("annotationFilters"), "spec.annotations"),
        *filter_causes(spec.get("labelFilters"), "spec.labels"),
        *filter_causes(template.get("annotationFilters"), "spec.template.annotations"),
        *filter_causes(template.get("labelFilters"), "spec.template.labels"),
        *_kind_causes(spec),
        *_source_causes(spec),
        *_target_causes(spec),
        *_mac_causes(spec),
        *_patch_causes(spec),
    ]


def filter_causes(filters: Any, field: str) -> list[StatusCause]:
    """A negation only as a filter's first character, a wildcard only as its last."""
    out: list[StatusCause] = []
    for entry in as_list(filters) or ():
        filter_ = entry if isinstance(entry, str) else ""
        if len(filter_) <= 1:
            if filter_ == _NEGATION:
                out.append(c.invalid(field, "a negation character is not a valid filter"))
            continue
        if _NEGATION in filter_[1:]:
            rule = "NegationChar can be only used at the beginning of the filter"
            message = _FILTER_ERROR.format(
                field=field, filter=filter_, what="negation", char=_NEGATION, rule=rule
            )
            out.append(c.invalid(field, message))
        if _WILDCARD in filter_[:-1]:
            rule = "WildcardChar can be only at the end of the filter"
            message = _FILTER_ERROR.format(
                field=field, filter=filter_, what="wildcard", char=_WILDCARD, rule=rule
            )
            out.append(c.invalid(field, message))
    return out


def _kind_causes(spec: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    source = opt_obj(spec, "source")
    if source is not None and text(source, "kind") not in (
        VIRTUAL_MACHINE_KIND,
        VIRTUAL_MACHINE_SNAPSHOT_KIND,
    ):
        out.append(c.invalid(_SOURCE.child("Kind"), "Source kind is not supported"))
    target = opt_obj(spec, "target")
    if target is not None and text(target, "kind") != VIRTUAL_MACHINE_KIND:
        out.append(c.invalid(_TARGET.child("Kind"), "Target kind is not supported"))
    return out


def _source_causes(spec: JSON) -> list[StatusCause]:
    source = opt_obj(spec, "source")
    if source is None:
        return [c.invalid(_SOURCE, "Source cannot be nil")]
    out: list[StatusCause] = []
    if not opt_text(source, "apiGroup"):
        out.append(c.invalid(_SOURCE.child("APIGroup"), "Source's APIGroup cannot be empty"))
    if not text(source, "kind"):
        out.append(c.invalid(_SOURCE, "Source's Kind cannot be empty"))
    if not text(source, "name"):
        out.append(c.invalid(_SOURCE.child("Name"), "Source's name cannot be empty"))
    return out


def _target_causes(spec: JSON) -> list[StatusCause]:
    source, target = opt_obj(spec, "source"), opt_obj(spec, "target")
    if (
        source is not None
        and target is not None
        and text(source, "kind") == VIRTUAL_MACHINE_KIND
        and text(target, "kind") == VIRTUAL_MACHINE_KIND
        and text(target, "name") == text(source, "name")
    ):
        message = "Target name cannot be equal to source name when both are VirtualMachines"
        return [c.invalid(SPEC.child("target", "name"), message)]
    return []


def _mac_causes(spec: JSON) -> list[StatusCause]:
    """Each new MAC must parse as Go's ``net.ParseMAC`` does and be at most 6 octets (sorted by
    interface: KubeVirt walks a map, in no set order)."""
    out: list[StatusCause] = []
    for name, mac in sorted(string_map(spec, "newMacAddresses").items()):
        if not mac:
            continue
        parsed = parse_mac(mac)
        if parsed is None or len(parsed) > _MAC_LENGTH:
            where = SPEC.child("newMacAddresses", name)
            out.append(c.invalid(where, f"interface {name} has malformed MAC address ({mac})."))
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def is_json(document: str) -> bool:
    """Go's ``json.Valid``: strict JSON (no NaN or Infinity)."""
    try:
        json.loads(document, parse_constant=_reject_constant)
    except ValueError:
        return False
    return True


def _patch_causes(spec: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    for i, patch in enumerate(as_list(spec.get("patches")) or ()):
        patch_text = patch if isinstance(patch, str) else ""
        if not is_json(patch_text):
            where = SPEC.child("patches").index(i)
            out.append(c.invalid(where, f"patch is not valid JSON ({patch_text})"))
    return out


# --- Mutation ---


def target_name(source_name: str, suffix: str) -> str:
    return f"clone-{source_name}-{suffix}"


def mutate_vm_clone(
    clone: JSON, target_suffix: str, *, schema: SchemaCheck = no_schema_check
) -> AdmissionResponse:
    """A new clone without a target (or without a target name) gets one; the patch replaces ``/spec``
    whole, as KubeVirt writes it. Nothing is patched when the target is complete."""
    causes = schema(CLONE_KIND, clone)
    if causes:
        return response.invalid(causes)
    spec = obj(clone, "spec")
    target = opt_obj(spec, "target")
    source_name = text(obj(spec, "source"), "name")
    if target is None:
        target = {
            "apiGroup": GROUP_NAME,
            "kind": VIRTUAL_MACHINE_KIND,
            "name": target_name(source_name, target_suffix),
        }
    elif not text(target, "name"):
        target = {**target, "name": target_name(source_name, target_suffix)}
    else:
        return response.allowed()
    return response.patched(
        [{"op": "replace", "path": "/spec", "value": go_clone_spec({**spec, "target": target})}]
    )


def _go_reference(reference: JSON) -> JSON:
    """A ``TypedLocalObjectReference`` as Go writes it: ``apiGroup`` is null when unset."""
    return {
        "apiGroup": opt_text(reference, "apiGroup"),
        "kind": text(reference, "kind"),
        "name": text(reference, "name"),
    }


def _strings(data: JSON, key: str) -> list[str]:
    return [entry if isinstance(entry, str) else "" for entry in as_list(data.get(key)) or ()]


def go_clone_spec(spec: JSON) -> JSON:
    """``VirtualMachineCloneSpec`` as Go marshals the decoded spec: its fields in order, empty lists and
    maps left out, ``template`` always present, unknown fields dropped."""
    template = obj(spec, "template")
    out: JSON = {"source": _go_reference(source) if (source := opt_obj(spec, "source")) is not None else None}
    if (target := opt_obj(spec, "target")) is not None:
        out["target"] = _go_reference(target)
    for key in ("annotationFilters", "labelFilters"):
        if values := _strings(spec, key):
            out[key] = values
    out["template"] = {
        key: values for key in ("annotationFilters", "labelFilters") if (values := _strings(template, key))
    }
    if macs := string_map(spec, "newMacAddresses"):
        out["newMacAddresses"] = macs
    if (serial := opt_text(spec, "newSMBiosSerial")) is not None:
        out["newSMBiosSerial"] = serial
    if patches := _strings(spec, "patches"):
        out["patches"] = patches
    return out
