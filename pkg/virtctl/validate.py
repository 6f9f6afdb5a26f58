"""``virtctl validate``: KubeVirt's admission answer for a VMI or VM manifest, computed offline.

The same steps as virt-api's webhooks (schema check, defaulting, schema check, the admitter's rules),
with the same cluster options as ``virtctl render``. Prints the causes as a JSON list; exits 0 when the
object would be accepted, 1 when refused, 2 when the input cannot be read.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Mapping
from typing import Any

import click

from kubevirt.admission import defaulting, instancetypes, pipeline
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.json_fields import obj
from kubevirt.admission.response import MAX_CAUSES
from kubevirt.admission.schema import schema_check
from kubevirt.admission.state import StaticClusterState
from kubevirt.instancetype import expand_vmi
from kubevirt.virtctl.manifests import (
    EXIT_UNREADABLE,
    RenderOptions,
    apply_stand_ins,
    cluster_config,
    cluster_options,
    objects_option,
    read_all_objects,
    read_object,
    split_list,
)
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.core.v1.vmi import VirtualMachineInstance
from kubevirt_api.k8s.meta_v1 import ObjectMeta

VMI_KIND = "VirtualMachineInstance"
VM_KIND = "VirtualMachine"
EXIT_ACCEPTED, EXIT_REFUSED = 0, 1


class UnsupportedKindError(ValueError):
    """The manifest is neither a VirtualMachineInstance nor a VirtualMachine."""


def manifest_kind(manifest: Mapping[str, Any]) -> str:
    """The manifest's kind; a manifest without one is read as a VMI, as ``render`` does."""
    kind = manifest.get("kind") or VMI_KIND
    if kind not in (VMI_KIND, VM_KIND, *pipeline.INSTANCETYPE_OBJECT_KINDS):
        expected = ", ".join((VMI_KIND, VM_KIND, *pipeline.INSTANCETYPE_OBJECT_KINDS))
        raise UnsupportedKindError(f"kind {kind!r} is not supported, expected one of {expected}")
    return str(kind)


def instancetype_state(manifest: Mapping[str, Any], options: RenderOptions) -> StaticClusterState:
    """The given instance types and preferences; a namespaced one without a namespace is taken to
    live in the VM's."""
    namespace = obj(manifest, "metadata").get("namespace") or ""
    objects = []
    for given in options.instancetype_objects:
        metadata = dict(obj(given, "metadata"))
        metadata.setdefault("namespace", namespace)
        objects.append({**given, "metadata": metadata})
    return StaticClusterState(instancetype_objects=objects)


def admission_causes(manifest: Mapping[str, Any], options: RenderOptions) -> list[StatusCause]:
    """What KubeVirt's webhooks would answer for creating ``manifest`` (empty when accepted)."""
    config = cluster_config(options)
    kind = manifest_kind(manifest)
    if kind in pipeline.INSTANCETYPE_OBJECT_KINDS:
        return pipeline.validate_instancetype_object(dict(manifest), schema=schema_check).causes
    if kind == VM_KIND:
        outcome = pipeline.validate_vm(
            dict(manifest),
            config,
            defaulter=defaulting.vm_defaults,
            schema=schema_check,
            state=instancetype_state(manifest, options),
        )
        return outcome.causes[:MAX_CAUSES]  # KubeVirt's VM webhook returns at most this many
    outcome = pipeline.validate_vmi_create(
        apply_stand_ins(manifest), config, defaulter=defaulting.vmi_defaults, schema=schema_check
    )
    return outcome.causes


def vmi_of_vm(vm: Mapping[str, Any]) -> dict[str, Any]:
    """The VMI a VM's template describes, named after the VM (what the VM controller creates)."""
    template = obj(obj(vm, "spec"), "template")
    metadata = dict(obj(template, "metadata"))
    for key in ("name", "namespace"):
        value = obj(vm, "metadata").get(key)
        if value:
            metadata[key] = value
    return {
        "apiVersion": vm.get("apiVersion", "kubevirt.io/v1"),
        "kind": VMI_KIND,
        "metadata": metadata,
        "spec": obj(template, "spec"),
    }


def renderable_vmi(
    manifest: Mapping[str, Any], options: RenderOptions
) -> tuple[dict[str, Any], list[StatusCause]]:
    """The VMI ``render`` would convert, and the causes that refuse it.

    A VM must pass the VM webhook, and then the VMI made from its template must pass VMI admission
    (a VM without memory is accepted, its VMI is not).
    """
    kind = manifest_kind(manifest)
    if kind not in (VMI_KIND, VM_KIND):
        raise UnsupportedKindError(f"kind {kind!r} has no domain to render, expected {VMI_KIND} or {VM_KIND}")
    causes = admission_causes(manifest, options)
    if causes or manifest_kind(manifest) == VMI_KIND:
        return dict(manifest), causes
    vm = inferred_vm(manifest, options)
    vmi = expanded_vmi(vm, vmi_of_vm(vm), options)
    return vmi, admission_causes(vmi, options)


def inferred_vm(manifest: Mapping[str, Any], options: RenderOptions) -> dict[str, Any]:
    """The VM with matchers inferred from its volumes, as the mutating webhook leaves it (it passed
    admission, so inference succeeded)."""
    vm = copy.deepcopy(dict(manifest))
    namespace = obj(manifest, "metadata").get("namespace") or ""
    instancetypes.infer_from_volumes(vm, instancetype_state(manifest, options), namespace)
    return vm


def expanded_vmi(vm: Mapping[str, Any], vmi: dict[str, Any], options: RenderOptions) -> dict[str, Any]:
    """The VMI with the VM's instance type and preference applied, as virt-controller builds it (the
    VM passed admission, so they cannot conflict)."""
    model = VirtualMachine.from_dict(vm)
    selected = instancetypes.find_specs(model, "", instancetype_state(vm, options))
    if selected.instancetype is None and selected.preference is None:
        return vmi
    built = VirtualMachineInstance.from_dict(vmi)
    built.metadata = built.metadata or ObjectMeta()
    expand_vmi(model, selected.instancetype, selected.preference, built.spec, built.metadata)
    return built.to_dict()


def causes_json(causes: list[StatusCause]) -> str:
    return json.dumps([cause.to_dict() for cause in causes], indent=2, ensure_ascii=False)


@click.command(name="validate")
@click.option(
    "-f", "--filename", "filename", required=True, help="VMI or VM manifest (YAML or JSON); - for stdin."
)
@objects_option
@cluster_options
def validate(
    filename: str, objects: tuple[str, ...], rollout_strategy: str, feature_gates: str, block_volumes: str
) -> None:
    """Print KubeVirt's admission causes for creating a VirtualMachineInstance or VirtualMachine."""
    manifest = read_object(filename, "a Kubernetes object")
    options = RenderOptions(
        rollout_strategy=rollout_strategy,
        feature_gates=split_list(feature_gates),
        block_volumes=split_list(block_volumes),
        instancetype_objects=read_all_objects(objects),
    )
    try:
        causes = admission_causes(manifest, options)
    except UnsupportedKindError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(EXIT_UNREADABLE)
    click.echo(causes_json(causes))
    sys.exit(EXIT_REFUSED if causes else EXIT_ACCEPTED)
