"""The VMI the offline commands work on: a manifest parsed as the CRD schema would accept it and
defaulted as virt-api would on CREATE, with the stand-ins for what a cluster assigns.

``virtctl render`` turns it into a domain and ``render --launcher-pod`` into virt-controller's pod; both
start here, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from kubevirt.defaults import DefaultingError, set_vmi_defaults
from kubevirt.virtctl.manifests import STAND_IN_UID, RenderOptions, apply_stand_ins, cluster_config
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1 import VirtualMachineInstance

DEFAULT_OPTIONS = RenderOptions()


class RenderError(ValueError):
    """The VMI cannot be rendered; the message names the field at fault."""


# For each API model: JSON key -> (is a list, nested model) for keys holding models, None for leaves.
_Plan = dict[str, tuple[bool, type[BaseModel]] | None]
_plans: dict[type[BaseModel], _Plan] = {}


def _plan(model: type[BaseModel]) -> _Plan:
    plan = _plans.get(model)
    if plan is None:
        plan = {}
        for name, field in model.model_fields.items():
            plan[field.alias or name] = _nested_model(field.annotation)
        _plans[model] = plan
    return plan


def _nested_model(annotation: Any) -> tuple[bool, type[BaseModel]] | None:
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return False, candidate
        if get_origin(candidate) is list:
            (item,) = get_args(candidate) or (Any,)
            if isinstance(item, type) and issubclass(item, BaseModel):
                return True, item
    return None


def unknown_fields(model: type[BaseModel], data: Any, path: str = "") -> list[str]:
    """JSON paths of keys the API type does not declare (the CRD schema rejects those).
    Object metadata is left to the API server, as the CRD schema does."""
    found: list[str] = []
    if not isinstance(data, Mapping):
        return found
    plan = _plan(model)
    for key, value in data.items():
        if key not in plan:
            if not _keeps_unknown_fields(model):
                found.append(f"{path}.{key}" if path else key)
            continue
        nested = plan[key]
        if nested is None or (not path and key == "metadata"):
            continue
        is_list, inner = nested
        child = f"{path}.{key}" if path else key
        if not is_list:
            found += unknown_fields(inner, value, child)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                found += unknown_fields(inner, item, f"{child}[{index}]")
    return found


def _keeps_unknown_fields(model: type[BaseModel]) -> bool:
    """Whether the CRD schema keeps unknown fields below this type (as it does below ``clock``)."""
    extra = model.model_config.get("json_schema_extra")
    return isinstance(extra, dict) and extra.get("x-kubernetes-preserve-unknown-fields") is True


def default_vmi(raw: Mapping[str, Any], options: RenderOptions = DEFAULT_OPTIONS) -> VirtualMachineInstance:
    """Parse a VMI manifest and default it as virt-api would on CREATE (with the stand-ins above)."""
    manifest = apply_stand_ins(raw)
    unknown = unknown_fields(VirtualMachineInstance, manifest)
    if unknown:
        raise RenderError(f"{unknown[0]}: unknown field")
    try:
        vmi = VirtualMachineInstance.from_dict(manifest)
    except ApiParseError as err:
        raise RenderError(str(err.causes[0]) if err.causes else str(err)) from None
    try:
        set_vmi_defaults(vmi, cluster_config(options))
    except DefaultingError as err:
        raise RenderError(str(err)) from None
    assert vmi.metadata is not None  # set by the defaults
    if not vmi.metadata.uid:
        vmi.metadata.uid = STAND_IN_UID
    return vmi
