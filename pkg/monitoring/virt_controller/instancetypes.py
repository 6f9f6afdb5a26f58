"""The ``instance_type`` and ``preference`` labels, and a VM read with its instance type applied.

Only objects of KubeVirt's own vendors are named in a label (others would let users pick label values);
anything else, or an object that cannot be found, reads ``<other>``. Lookups go through a
:data:`~kubevirt.instancetype.find.Getter` which, like KubeVirt's, should read the informer stores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

from kubevirt.client.resources import (
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
    VIRTUAL_MACHINE_INSTANCETYPES,
    VIRTUAL_MACHINE_PREFERENCES,
    Resource,
)
from kubevirt.controller.keys import key_for
from kubevirt.controller.objects import labels_of
from kubevirt.instancetype import apply_to_vmi
from kubevirt.instancetype.find import FindError, Getter, find_instancetype, find_preference
from kubevirt.monitoring.virt_controller.objects import as_json
from kubevirt_api.core.v1.constants import (
    CLUSTER_INSTANCETYPE_ANNOTATION,
    CLUSTER_PREFERENCE_ANNOTATION,
    INSTANCETYPE_ANNOTATION,
    PREFERENCE_ANNOTATION,
)
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceSpec
from kubevirt_api.instancetype import constants as names
from kubevirt_api.k8s.meta_v1 import ObjectMeta
from kubevirt_api.view import View

__all__ = [
    "OTHER",
    "VENDOR_LABEL",
    "store_lookup",
    "vm_instancetype",
    "vm_preference",
    "vmi_instancetype",
    "vmi_preference",
    "with_instancetype",
]

OTHER: Final = "<other>"
VENDOR_LABEL: Final = "instancetype.kubevirt.io/vendor"
_NAMED_VENDORS: Final = frozenset({"kubevirt.io", "redhat.com"})


class KeyedStore(Protocol):
    def get_by_key(self, key: str) -> Any: ...


def store_lookup(stores: Mapping[str, KeyedStore | None]) -> Getter:
    """A getter over informer stores keyed by resource plural, as ``InstancetypeStores.by_resource()``
    returns them; it never calls the API."""

    def get(resource: Resource, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        store = stores.get(resource.plural)
        found = store.get_by_key(key_for(namespace, name)) if store is not None else None
        return as_json(found) if found is not None else None

    return get


def _vendor_name(lookup: Getter | None, resource: Resource, namespace: str | None, name: str) -> str:
    found = lookup(resource, namespace, name) if lookup is not None else None
    if found is None or labels_of(found).get(VENDOR_LABEL) not in _NAMED_VENDORS:
        return OTHER
    return View.of(found.get("metadata")).string("name")


def _from_annotations(
    annotations: Mapping[str, str],
    namespace: str,
    lookup: Getter | None,
    namespaced: tuple[str, Resource],
    cluster: tuple[str, Resource],
) -> str:
    annotation, resource = namespaced
    if annotation in annotations:
        return _vendor_name(lookup, resource, namespace, annotations[annotation])
    annotation, resource = cluster
    if annotation in annotations:
        return _vendor_name(lookup, resource, None, annotations[annotation])
    return ""


def vmi_instancetype(annotations: Mapping[str, str], namespace: str, lookup: Getter | None) -> str:
    """From the ``kubevirt.io/[cluster-]instancetype-name`` annotation virt-controller puts on VMIs."""
    return _from_annotations(
        annotations,
        namespace,
        lookup,
        (INSTANCETYPE_ANNOTATION, VIRTUAL_MACHINE_INSTANCETYPES),
        (CLUSTER_INSTANCETYPE_ANNOTATION, VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES),
    )


def vmi_preference(annotations: Mapping[str, str], namespace: str, lookup: Getter | None) -> str:
    return _from_annotations(
        annotations,
        namespace,
        lookup,
        (PREFERENCE_ANNOTATION, VIRTUAL_MACHINE_PREFERENCES),
        (CLUSTER_PREFERENCE_ANNOTATION, VIRTUAL_MACHINE_CLUSTER_PREFERENCES),
    )


def _from_matcher(
    matcher: View | None,
    namespace: str,
    lookup: Getter | None,
    namespaced: tuple[str, Resource],
    cluster: tuple[str, Resource],
) -> str:
    # Only the singular kind, in any letter case: unlike the VM controller, an empty kind names nothing.
    if matcher is None:
        return ""
    kind = matcher.string("kind").casefold()
    name = matcher.string("name")
    if kind == namespaced[0].casefold():
        return _vendor_name(lookup, namespaced[1], namespace, name)
    if kind == cluster[0].casefold():
        return _vendor_name(lookup, cluster[1], None, name)
    return ""


def vm_instancetype(spec: View, namespace: str, lookup: Getter | None) -> str:
    """From the VM's ``spec.instancetype`` matcher."""
    return _from_matcher(
        spec.optional_object("instancetype"),
        namespace,
        lookup,
        (names.INSTANCETYPE_KIND, VIRTUAL_MACHINE_INSTANCETYPES),
        (names.CLUSTER_INSTANCETYPE_KIND, VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES),
    )


def vm_preference(spec: View, namespace: str, lookup: Getter | None) -> str:
    return _from_matcher(
        spec.optional_object("preference"),
        namespace,
        lookup,
        (names.PREFERENCE_KIND, VIRTUAL_MACHINE_PREFERENCES),
        (names.CLUSTER_PREFERENCE_KIND, VIRTUAL_MACHINE_CLUSTER_PREFERENCES),
    )


def with_instancetype(vm: Any, data: Mapping[str, Any], lookup: Getter | None) -> Mapping[str, Any]:
    """``data`` (the JSON of ``vm``, a model or that same dict) with the VM's instance type and
    preference applied to the template, as KubeVirt's resource metrics read it. When either cannot be
    found the VM is read as it is; with conflicts, as far as applying got (KubeVirt ignores the error
    and keeps the partly changed copy)."""
    spec = data.get("spec")
    if lookup is None or not isinstance(spec, Mapping):
        return data
    if spec.get("instancetype") is None and spec.get("preference") is None:
        return data
    try:
        model = vm.model_copy(deep=True) if isinstance(vm, VirtualMachine) else VirtualMachine.from_dict(data)
        instancetype = find_instancetype(model, lookup)
        preference = find_preference(model, lookup)
    except (FindError, ValueError):
        return data
    template = model.spec.template
    if template.spec is None:
        template.spec = VirtualMachineInstanceSpec.from_dict({"domain": {"devices": {}}})
    if template.metadata is None:
        template.metadata = ObjectMeta()
    apply_to_vmi(
        "spec",
        instancetype.spec if instancetype is not None else None,
        preference.spec if preference is not None else None,
        template.spec,
        template.metadata,
    )
    return model.to_dict()
