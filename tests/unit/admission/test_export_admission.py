"""VirtualMachineExport admission, as KubeVirt v1.6's export admitter (``vmexport.go``) answers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.admission.export import admit_vm_export
from kubevirt.admission.review import CONNECT, CREATE, DELETE, UPDATE, AdmissionRequest, GroupVersionResource
from kubevirt.service.durations import parse_go_duration
from kubevirt.virt_api.app import build_context
from kubevirt.virt_api.webhooks.routes import VMEXPORT_VALIDATE, webhook_handlers
from kubevirt.virt_config import ClusterConfig

JSON = dict[str, Any]
GATED = ClusterConfig.build(feature_gates=["VMExport"])
EXPORT_GVR = GroupVersionResource("export.kubevirt.io", "v1beta1", "virtualmachineexports")
VM_REF = {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "vm"}
SNAPSHOT_REF = {"apiGroup": "snapshot.kubevirt.io", "kind": "VirtualMachineSnapshot", "name": "snap"}
PVC_REF = {"kind": "PersistentVolumeClaim", "name": "disk"}


def _export(source: JSON | None = None, **spec: Any) -> JSON:
    return {
        "apiVersion": "export.kubevirt.io/v1beta1",
        "kind": "VirtualMachineExport",
        "metadata": {"name": "export", "namespace": "ns"},
        "spec": {"source": dict(VM_REF if source is None else source), **spec},
    }


def _causes(export: JSON) -> list[tuple[str, str, str]]:
    answer = admit_vm_export(CREATE, export, None, GATED)
    assert answer.allowed == (not answer.causes)
    return [(c.type, c.field, c.message) for c in answer.causes]


def _answer(operation: str, obj: JSON | None, old: JSON | None = None, **kwargs: Any) -> JSON:
    handler = webhook_handlers(build_context(kwargs.get("config", GATED)))[VMEXPORT_VALIDATE]
    request = AdmissionRequest(
        uid="u",
        operation=operation,
        resource=kwargs.get("gvr", EXPORT_GVR),
        namespace="ns",
        object=obj,
        old_object=old,
    )
    return handler(request).to_dict("u")


# --- Creation ---


@pytest.mark.parametrize(
    "source",
    [
        VM_REF,
        SNAPSHOT_REF,
        PVC_REF,
        {**PVC_REF, "apiGroup": ""},  # a blank group counts as missing
    ],
)
def test_each_exportable_source_is_allowed(source: JSON) -> None:
    export = _export(source, tokenSecretRef="token", ttlDuration="2h")
    assert admit_vm_export(CREATE, export, None, GATED).allowed
    assert _answer(CREATE, export)["allowed"] is True


def test_creating_an_export_needs_the_vmexport_gate() -> None:
    answer = _answer(CREATE, _export(), config=ClusterConfig.build(feature_gates=["Snapshot"]))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert answer["status"]["message"] == "vm export feature gate not enabled"
    # The gate guards creation only: an existing export may still be updated (its status, labels...).
    assert admit_vm_export(UPDATE, _export(), _export(), ClusterConfig()).allowed


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            {**PVC_REF, "name": ""},
            [("spec.source.name", "PVC name must not be empty")],
        ),
        (
            {**PVC_REF, "apiGroup": "core"},
            [("spec.source.APIGroup", "PVC API group must be missing or blank")],
        ),
        (
            {"kind": "PersistentVolumeClaim", "apiGroup": "x"},
            [
                ("spec.source.name", "PVC name must not be empty"),
                ("spec.source.APIGroup", "PVC API group must be missing or blank"),
            ],
        ),
        (
            {**SNAPSHOT_REF, "name": ""},
            [("spec.source.name", "VMSnapshot name must not be empty")],
        ),
        (
            {"kind": "VirtualMachineSnapshot", "name": "snap"},
            [("spec.source.APIGroup", "VMSnapshot API group must be snapshot.kubevirt.io")],
        ),
        (
            {**SNAPSHOT_REF, "apiGroup": "kubevirt.io"},
            [("spec.source.APIGroup", "VMSnapshot API group must be snapshot.kubevirt.io")],
        ),
        (
            {**VM_REF, "name": ""},
            [("spec.source.name", "Virtual Machine name must not be empty")],
        ),
        (
            {"kind": "VirtualMachine", "name": "vm"},
            [("spec.source.APIGroup", "VM API group must be kubevirt.io")],
        ),
        (
            {"kind": "VirtualMachine", "apiGroup": "snapshot.kubevirt.io"},
            [
                ("spec.source.name", "Virtual Machine name must not be empty"),
                ("spec.source.APIGroup", "VM API group must be kubevirt.io"),
            ],
        ),
    ],
)
def test_the_source_needs_a_name_and_its_kinds_api_group(
    source: JSON, expected: list[tuple[str, str]]
) -> None:
    assert _causes(_export(source)) == [("FieldValueInvalid", field, message) for field, message in expected]


@pytest.mark.parametrize("kind", ["DataVolume", "", "virtualmachine"])
def test_any_other_source_kind_is_invalid(kind: str) -> None:
    assert _causes(_export({"apiGroup": "kubevirt.io", "kind": kind, "name": ""})) == [
        ("FieldValueInvalid", "spec.source.kind", "invalid kind")
    ]


def test_an_export_without_a_source_has_an_invalid_kind() -> None:
    export = _export()
    del export["spec"]["source"]
    assert _causes(export) == [("FieldValueInvalid", "spec.source.kind", "invalid kind")]


def test_the_webhook_answers_findings_as_a_422_with_every_cause() -> None:
    answer = _answer(CREATE, _export({"kind": "VirtualMachine", "apiGroup": "x"}))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 422
    assert answer["status"]["reason"] == "Invalid"
    assert answer["status"]["message"] == (
        "Virtual Machine name must not be empty, VM API group must be kubevirt.io"
    )
    assert answer["status"]["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Virtual Machine name must not be empty",
            "field": "spec.source.name",
        },
        {
            "reason": "FieldValueInvalid",
            "message": "VM API group must be kubevirt.io",
            "field": "spec.source.APIGroup",
        },
    ]


@pytest.mark.parametrize(
    ("ttl", "message"),
    [
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("90", 'time: missing unit in duration "90"'),
        ("soon", 'time: invalid duration "soon"'),
        ("", 'time: invalid duration ""'),
    ],
)
def test_a_ttl_go_cannot_parse_is_refused_as_a_bad_request(ttl: str, message: str) -> None:
    answer = _answer(CREATE, _export(ttlDuration=ttl))
    assert answer["allowed"] is False
    assert (answer["status"]["code"], answer["status"]["message"]) == (400, message)


# --- Updates ---


def test_an_export_spec_is_immutable() -> None:
    old = _export(tokenSecretRef="token", ttlDuration="1h")
    for change in (
        {"source": {**VM_REF, "name": "other"}},
        {"source": {**VM_REF, "apiGroup": None}},
        {"tokenSecretRef": "other"},
        {"tokenSecretRef": None},
        {"ttlDuration": "2h"},
    ):
        changed = copy.deepcopy(old)
        changed["spec"].update(change)
        answer = _answer(UPDATE, changed, old)
        assert answer["allowed"] is False, change
        assert answer["status"]["code"] == 422
        assert answer["status"]["details"]["causes"] == [
            {"reason": "FieldValueInvalid", "message": "spec in immutable after creation", "field": "spec"}
        ]


def test_an_update_leaving_the_spec_alone_is_allowed() -> None:
    old = _export(tokenSecretRef="token", ttlDuration="1h")
    updated = copy.deepcopy(old)
    updated["metadata"]["labels"] = {"a": "b"}
    updated["status"] = {"phase": "Ready", "tokenSecretRef": "token"}
    assert _answer(UPDATE, updated, old)["allowed"] is True


def test_the_spec_is_compared_as_go_decodes_it() -> None:
    old = _export(ttlDuration="1h")
    same = _export(ttlDuration="60m")  # the same duration, spelled differently
    same["spec"]["unknownField"] = True  # dropped by Go's decoding
    same["spec"]["tokenSecretRef"] = None  # null is unset
    assert admit_vm_export(UPDATE, same, old, GATED).allowed


def test_an_update_is_checked_even_with_an_invalid_source() -> None:
    # Source rules apply at creation only; an export already stored is not re-judged.
    stored = _export({"kind": "Unknown"})
    assert _answer(UPDATE, copy.deepcopy(stored), stored)["allowed"] is True


# --- The webhook's own checks ---


def test_the_webhook_checks_its_resource_as_kubevirt_words_it() -> None:
    wrong = GroupVersionResource("snapshot.kubevirt.io", "v1beta1", "virtualmachineexports")
    answer = _answer(CREATE, _export(), gvr=wrong)
    assert (answer["allowed"], answer["status"]["code"]) == (False, 400)
    assert answer["status"]["message"] == (
        "unexpected resource {Group:snapshot.kubevirt.io Version:v1beta1 Resource:virtualmachineexports}"
    )
    other = GroupVersionResource("export.kubevirt.io", "v1beta1", "virtualmachines")
    assert _answer(CREATE, _export(), gvr=other)["status"]["message"].startswith("unexpected resource {")


def test_the_resource_is_checked_before_the_gate() -> None:
    wrong = GroupVersionResource("kubevirt.io", "v1", "virtualmachines")
    answer = _answer(CREATE, _export(), gvr=wrong, config=ClusterConfig())
    assert answer["status"]["message"].startswith("unexpected resource")


@pytest.mark.parametrize("operation", [DELETE, CONNECT])
def test_other_operations_are_refused(operation: str) -> None:
    answer = _answer(operation, _export())
    assert (answer["allowed"], answer["status"]["code"]) == (False, 400)
    assert answer["status"]["message"] == f"unexpected operation {operation}"


def test_an_update_without_the_old_object_is_a_bad_request() -> None:
    answer = _answer(UPDATE, _export())
    assert (answer["allowed"], answer["status"]["code"]) == (False, 400)


# --- Go's time.ParseDuration ---


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("0", 0),
        ("-0", 0),
        ("2h", 7_200_000_000_000),
        ("1h30m", 5_400_000_000_000),
        ("1.5h", 5_400_000_000_000),
        (".5s", 500_000_000),
        ("1.s", 1_000_000_000),
        ("-3ms", -3_000_000),
        ("+10us", 10_000),
        ("1µs", 1_000),
        ("1μs", 1_000),
        ("7ns", 7),
        ("2562047h47m16.854775807s", 2**63 - 1),
        ("-2562047h47m16.854775808s", -(2**63)),
    ],
)
def test_go_durations_parse_to_nanoseconds(text: str, nanoseconds: int) -> None:
    assert parse_go_duration(text) == nanoseconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("-", 'time: invalid duration "-"'),
        (".s", 'time: invalid duration ".s"'),
        ("1", 'time: missing unit in duration "1"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("1h 2m", 'time: unknown unit "h " in duration "1h 2m"'),
        ('1"', 'time: unknown unit "\\"" in duration "1\\""'),
        ("1é", 'time: unknown unit "\\xc3\\xa9" in duration "1\\xc3\\xa9"'),
        ("2562047h47m16.854775808s", 'time: invalid duration "2562047h47m16.854775808s"'),
        ("99999999999999999999s", 'time: invalid duration "99999999999999999999s"'),
    ],
)
def test_go_durations_refuse_with_gos_messages(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=r"^time: ") as raised:
        parse_go_duration(text)
    assert str(raised.value) == message
