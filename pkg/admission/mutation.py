"""What KubeVirt's VM mutating webhook sets on the stored VM (``vm-mutator.go``).

The VMI mutator's changes are all of :func:`kubevirt.defaults.set_vmi_defaults`; a VM only gets its
template's architecture and machine type (the rest of the defaults apply when its VMI is created).
"""

from __future__ import annotations

import copy

from kubevirt.admission.json_fields import JSON, opt_obj, text
from kubevirt.defaults.settings import DEFAULT_MACHINE_TYPES
from kubevirt.instancetype.matcher import DEFAULT_INSTANCETYPE_KIND, DEFAULT_PREFERENCE_KIND
from kubevirt.virt_config import ClusterConfig


def _child(parent: JSON, key: str) -> JSON:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def default_vm_object(vm: JSON, config: ClusterConfig) -> JSON:
    """A copy of the VM with its template's architecture and machine type defaulted, and the kind of
    its instance type and preference matchers when they name none."""
    out = copy.deepcopy(vm)
    for key, kind in (("instancetype", DEFAULT_INSTANCETYPE_KIND), ("preference", DEFAULT_PREFERENCE_KIND)):
        matcher = opt_obj(out.get("spec"), key)
        if matcher is not None and not text(matcher, "kind"):
            matcher["kind"] = kind
    template_spec = _child(_child(_child(out, "spec"), "template"), "spec")
    architecture = text(template_spec, "architecture") or config.default_architecture
    template_spec["architecture"] = architecture
    machine = _child(_child(template_spec, "domain"), "machine")
    if not text(machine, "type") and architecture in DEFAULT_MACHINE_TYPES:
        machine["type"] = DEFAULT_MACHINE_TYPES[architecture]
    return out
