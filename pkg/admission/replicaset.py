"""Admitters for VirtualMachineInstanceReplicaSets and VirtualMachinePools (their templates, selectors)."""

from __future__ import annotations

from kubevirt.admission import causes as c
from kubevirt.admission import vm as vm_rules
from kubevirt.admission import vmi_spec
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.featuregates import validate_feature_gates
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import obj, opt_obj, string_map
from kubevirt.admission.review import CREATE, UPDATE
from kubevirt.admission.selectors import SelectorError, matches
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON


def _selector(field: Path, spec: JSON, labels: dict[str, str]) -> list[StatusCause]:
    try:
        ok = matches(opt_obj(spec, "selector"), labels)
    except SelectorError as err:
        return [c.invalid(field.child("selector"), str(err))]
    return [] if ok else [c.invalid(field.child("selector"), "selector does not match labels.")]


def admit_replicaset(rs: JSON, config: ClusterConfig) -> list[StatusCause]:
    field = Path("spec")
    spec = obj(rs, "spec")
    template = opt_obj(spec, "template")
    if template is None:
        return [c.required(field.child("template"), "missing virtual machine template.")]
    out = vmi_spec.validate_spec(field.child("template", "spec"), obj(template, "spec"), config)
    out.extend(_selector(field, spec, string_map(obj(template, "metadata"), "labels")))
    return out


def admit_pool(
    pool: JSON,
    config: ClusterConfig,
    *,
    operation: str,
    old: JSON | None = None,
    kubevirt_account: bool = False,
) -> list[StatusCause]:
    field = Path("spec")
    spec = obj(pool, "spec")
    template = opt_obj(spec, "virtualMachineTemplate")
    if template is None:
        return [c.required(field.child("template"), "missing virtual machine template.")]
    out = vm_rules.validate_vm_spec(
        field.child("virtualMachineTemplate", "spec"),
        obj(template, "spec"),
        config,
        kubevirt_account=kubevirt_account,
    )
    out.extend(_selector(field, spec, string_map(obj(template, "metadata"), "labels")))
    if operation == UPDATE and old is not None and obj(old, "spec").get("selector") != spec.get("selector"):
        out.append(c.invalid(field.child("selector"), "selector is immutable after creation."))
    if operation == CREATE:
        out.extend(validate_feature_gates(config, obj(obj(obj(template, "spec"), "template"), "spec")))
    return out
