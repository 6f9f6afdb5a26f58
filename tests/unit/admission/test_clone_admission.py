"""VirtualMachineClone admission, as KubeVirt v1.6's clone admitter and create mutator answer."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.admission.clone import (
    admit_vm_clone,
    clone_resource_error,
    go_clone_spec,
    is_json,
    mutate_vm_clone,
    vm_clone_causes,
)
from kubevirt.admission.k8s_names import random_suffix
from kubevirt.admission.review import CREATE, UPDATE
from kubevirt.admission.schema import schema_check
from kubevirt.virt_config import ClusterConfig

JSON = dict[str, Any]
GATED = ClusterConfig.build(feature_gates=["Snapshot"])
VM_REF = {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "source"}


def _clone(**spec: Any) -> JSON:
    return {
        "apiVersion": "clone.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClone",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"source": dict(VM_REF), "target": {**VM_REF, "name": "target"}, **spec},
    }


def _causes(clone: JSON) -> list[tuple[str, str, str]]:
    return [(c.type, c.field, c.message) for c in vm_clone_causes(clone)]


# --- Validation ---


def test_a_valid_clone_is_allowed_on_create_and_update() -> None:
    clone = _clone(
        labelFilters=["*", "!app/*"],
        annotationFilters=["prefix*"],
        template={"labelFilters": ["a"], "annotationFilters": ["!b"]},
        newMacAddresses={"default": "02:00:00:00:00:01", "other": ""},
        patches=['{"op":"add","path":"/spec/template/metadata/labels/x","value":"y"}'],
    )
    assert admit_vm_clone(CREATE, clone, GATED).allowed
    assert admit_vm_clone(UPDATE, clone, ClusterConfig()).allowed  # the gate only guards creation


def test_creating_a_clone_needs_the_snapshot_gate() -> None:
    answer = admit_vm_clone(CREATE, _clone(), ClusterConfig()).to_dict("u")
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert answer["status"]["message"] == "snapshot feature gate is not enabled"


@pytest.mark.parametrize(
    ("filters", "messages"),
    [
        (["!"], ["a negation character is not a valid filter"]),
        (["*", "a", ""], []),
        (
            ["a!b"],
            [
                "spec.labels filter a!b is invalid: cannot contain a negation character (!); "
                "FilterRules: NegationChar can be only used at the beginning of the filter"
            ],
        ),
        (
            ["a*b"],
            [
                "spec.labels filter a*b is invalid: cannot contain a wildcard character (*); "
                "FilterRules: WildcardChar can be only at the end of the filter"
            ],
        ),
        (
            ["!*!*x"],
            [
                "spec.labels filter !*!*x is invalid: cannot contain a negation character (!); "
                "FilterRules: NegationChar can be only used at the beginning of the filter",
                "spec.labels filter !*!*x is invalid: cannot contain a wildcard character (*); "
                "FilterRules: WildcardChar can be only at the end of the filter",
            ],
        ),
    ],
)
def test_filters_allow_a_leading_negation_and_a_trailing_wildcard(
    filters: list[str], messages: list[str]
) -> None:
    assert _causes(_clone(labelFilters=filters)) == [
        ("FieldValueInvalid", "spec.labels", m) for m in messages
    ]


def test_each_filter_list_is_named_by_its_field() -> None:
    clone = _clone(
        annotationFilters=["!"],
        labelFilters=["!"],
        template={"annotationFilters": ["!"], "labelFilters": ["!"]},
    )
    assert [field for _, field, _ in _causes(clone)] == [
        "spec.annotations",
        "spec.labels",
        "spec.template.annotations",
        "spec.template.labels",
    ]


def test_kinds_source_and_target_are_checked_with_kubevirts_fields() -> None:
    clone = _clone()
    clone["spec"]["source"] = {"kind": "Pod", "name": ""}
    clone["spec"]["target"] = {"apiGroup": "kubevirt.io", "kind": "Pod", "name": "t"}
    assert _causes(clone) == [
        ("FieldValueInvalid", "spec.Source.Kind", "Source kind is not supported"),
        ("FieldValueInvalid", "spec.Target.Kind", "Target kind is not supported"),
        ("FieldValueInvalid", "spec.Source.APIGroup", "Source's APIGroup cannot be empty"),
        ("FieldValueInvalid", "spec.Source.Name", "Source's name cannot be empty"),
    ]
    clone["spec"]["source"] = {"apiGroup": "kubevirt.io", "kind": "", "name": "s"}
    assert ("FieldValueInvalid", "spec.Source", "Source's Kind cannot be empty") in _causes(clone)
    del clone["spec"]["source"]
    assert ("FieldValueInvalid", "spec.Source", "Source cannot be nil") in _causes(clone)


def test_a_snapshot_source_is_supported() -> None:
    clone = _clone()
    clone["spec"]["source"] = {
        "apiGroup": "snapshot.kubevirt.io",
        "kind": "VirtualMachineSnapshot",
        "name": "s",
    }
    assert _causes(clone) == []


def test_a_vm_cannot_be_cloned_onto_itself() -> None:
    clone = _clone()
    clone["spec"]["target"]["name"] = "source"
    message = "Target name cannot be equal to source name when both are VirtualMachines"
    assert _causes(clone) == [("FieldValueInvalid", "spec.target.name", message)]
    answer = admit_vm_clone(CREATE, clone, GATED).to_dict("u")
    assert answer["status"]["code"] == 422
    assert answer["status"]["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": message, "field": "spec.target.name"}
    ]


def test_new_macs_must_parse_and_fit_six_octets() -> None:
    clone = _clone(
        newMacAddresses={"b": "not-a-mac", "a": "02:00:00:00:00:00:00:01", "c": "02-00-00-00-00-01"}
    )
    assert _causes(clone) == [
        (
            "FieldValueInvalid",
            "spec.newMacAddresses.a",
            "interface a has malformed MAC address (02:00:00:00:00:00:00:01).",
        ),
        ("FieldValueInvalid", "spec.newMacAddresses.b", "interface b has malformed MAC address (not-a-mac)."),
    ]


def test_patches_must_be_json() -> None:
    clone = _clone(patches=['{"op":"add"}', "{not json", "NaN"])
    assert _causes(clone) == [
        ("FieldValueInvalid", "spec.patches[1]", "patch is not valid JSON ({not json)"),
        ("FieldValueInvalid", "spec.patches[2]", "patch is not valid JSON (NaN)"),
    ]
    assert is_json("[]")
    assert not is_json("")


def test_the_resource_check_words_kubevirts_errors() -> None:
    assert clone_resource_error("clone.kubevirt.io", "virtualmachineclones") is None
    wrong_group = clone_resource_error("x.io", "virtualmachineclones")
    assert wrong_group is not None
    assert wrong_group.status is not None
    assert wrong_group.status["message"] == "unexpected group: x.io. Expected group: clone.kubevirt.io"
    wrong_resource = clone_resource_error("clone.kubevirt.io", "pods")
    assert wrong_resource is not None
    assert wrong_resource.status is not None
    assert (
        wrong_resource.status["message"]
        == "unexpected resource: pods. Expected resource: virtualmachineclones"
    )


# --- Mutation ---


def test_a_clone_without_a_target_gets_a_vm_target_named_after_its_source() -> None:
    clone = _clone(labelFilters=["a"], newSMBiosSerial="", extra="dropped")
    del clone["spec"]["target"]
    answer = mutate_vm_clone(clone, "abcde")
    assert answer.allowed
    assert answer.patch == [
        {
            "op": "replace",
            "path": "/spec",
            "value": {
                "source": VM_REF,
                "target": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "clone-source-abcde"},
                "labelFilters": ["a"],
                "template": {},
                "newSMBiosSerial": "",
            },
        }
    ]


def test_a_target_without_a_name_gets_one_and_keeps_the_rest() -> None:
    clone = _clone()
    clone["spec"]["target"] = {"kind": "VirtualMachine"}
    answer = mutate_vm_clone(clone, "abcde")
    assert answer.patch is not None
    assert answer.patch[0]["value"]["target"] == {
        "apiGroup": None,
        "kind": "VirtualMachine",
        "name": "clone-source-abcde",
    }


def test_a_named_target_is_left_alone() -> None:
    answer = mutate_vm_clone(_clone(), "abcde")
    assert answer.allowed
    assert answer.patch is None


def test_the_mutator_checks_the_schema_first() -> None:
    clone = _clone()
    clone["spec"]["labelFilters"] = "not-a-list"
    answer = mutate_vm_clone(clone, "abcde", schema=schema_check)
    assert not answer.allowed
    assert answer.status is not None
    assert answer.status["code"] == 422


def test_go_spec_leaves_out_empty_fields() -> None:
    spec = copy.deepcopy(_clone(labelFilters=[], newMacAddresses={}, patches=[])["spec"])
    assert go_clone_spec(spec) == {"source": VM_REF, "target": {**VM_REF, "name": "target"}, "template": {}}


def test_random_suffixes_use_kubernetes_alphabet() -> None:
    suffix = random_suffix()
    assert len(suffix) == 5
    assert set(suffix) <= set("bcdfghjklmnpqrstvwxz2456789")
