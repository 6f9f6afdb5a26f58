"""What KubeVirt's VM mutating webhook sets on the stored VM (``vm-mutator.go``).

The VMI mutator's changes are all of :func:`kubevirt.defaults.set_vmi_defaults`; a VM only gets its
template's architecture and machine type (the rest of the defaults apply when its VMI is created), and its
quantities written back the way Go writes them (:func:`go_quantities`).
"""

from __future__ import annotations

import copy
from typing import Any

from kubevirt.admission.json_fields import obj, opt_obj, text
from kubevirt.defaults.settings import DEFAULT_MACHINE_TYPES
from kubevirt.instancetype.matcher import DEFAULT_INSTANCETYPE_KIND, DEFAULT_PREFERENCE_KIND
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.instancetype.v1beta1 import VirtualMachinePreferenceSpec
from kubevirt_api.resource import Quantity, QuantityError
from kubevirt_api.view import JSON


def _child(parent: JSON, key: str) -> JSON:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def default_vm_object(
    vm: JSON, config: ClusterConfig, preference: VirtualMachinePreferenceSpec | None = None
) -> JSON:
    """A copy of the VM with its template's architecture and machine type defaulted, and the kind of
    its instance type and preference matchers when they name none. The VM's ``preference``, when
    found, supplies the machine type before the cluster does, and the storage class of data volume
    templates that name none."""
    out = copy.deepcopy(vm)
    for key, kind in (("instancetype", DEFAULT_INSTANCETYPE_KIND), ("preference", DEFAULT_PREFERENCE_KIND)):
        matcher = opt_obj(out.get("spec"), key)
        if matcher is not None and not text(matcher, "kind"):
            matcher["kind"] = kind
    template_spec = _child(_child(_child(out, "spec"), "template"), "spec")
    architecture = text(template_spec, "architecture") or config.default_architecture
    template_spec["architecture"] = architecture
    machine = _child(_child(template_spec, "domain"), "machine")
    if not text(machine, "type") and preference is not None and preference.machine is not None:
        machine["type"] = preference.machine.preferred_machine_type or ""
    if not text(machine, "type") and architecture in DEFAULT_MACHINE_TYPES:
        machine["type"] = DEFAULT_MACHINE_TYPES[architecture]
    storage_class = (
        preference.volumes.preferred_storage_class_name if preference and preference.volumes else None
    )
    if storage_class:
        _prefer_storage_class(out, storage_class)
    return out


def _prefer_storage_class(vm: JSON, storage_class: str) -> None:
    for template in obj(vm, "spec").get("dataVolumeTemplates") or []:
        for key in ("pvc", "storage"):
            claim = opt_obj(obj(template, "spec"), key)
            if claim is not None and claim.get("storageClassName") is None:
                claim["storageClassName"] = storage_class


def go_quantities(raw: Any, modeled: Any) -> Any:
    """``raw`` with every quantity in the form Go writes it back (``4096Ki`` as ``4Mi``, the number ``2``
    as ``"2"``). KubeVirt's mutator replaces the spec with its decoded copy, so the stored VM holds
    canonical quantities, and its clients compare specs whose quantities remember their text; the
    quantities are found where ``modeled`` (the same object through the typed API) holds an equal one.
    Everything else of ``raw`` stays as it was."""
    if isinstance(raw, dict) and isinstance(modeled, dict):
        return {key: go_quantities(value, modeled.get(key)) for key, value in raw.items()}
    if isinstance(raw, list) and isinstance(modeled, list) and len(raw) == len(modeled):
        return [go_quantities(item, twin) for item, twin in zip(raw, modeled, strict=True)]
    if (
        isinstance(modeled, str)
        and isinstance(raw, str | int | float)
        and not isinstance(raw, bool)
        and raw != modeled
        and _same_quantity(str(raw), modeled)
    ):
        return modeled
    return raw


def _same_quantity(text: str, other: str) -> bool:
    try:
        return Quantity(text) == Quantity(other)
    except QuantityError:
        return False
