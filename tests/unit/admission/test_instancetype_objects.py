"""Admission of instance type and preference objects: schema first, then KubeVirt's few rules."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.admission import pipeline
from kubevirt.admission.instancetype_objects import deprecation_warnings
from kubevirt.admission.schema import schema_check
from kubevirt_api.instancetype.v1beta1 import VirtualMachinePreferenceSpec

GROUP = "instancetype.kubevirt.io/v1beta1"


def obj(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": GROUP, "kind": kind, "metadata": {"name": "x"}, "spec": spec}


def causes(raw: dict[str, Any]) -> list[dict[str, str]]:
    return [
        cause.to_dict() for cause in pipeline.validate_instancetype_object(raw, schema=schema_check).causes
    ]


def test_overcommit_with_hugepages_is_refused() -> None:
    spec = {
        "cpu": {"guest": 1},
        "memory": {"guest": "1Gi", "overcommitPercent": 10, "hugepages": {"pageSize": "2Mi"}},
    }
    assert causes(obj("VirtualMachineClusterInstancetype", spec)) == [
        {
            "type": "FieldValueInvalid",
            "message": "spec.memory.overcommitPercent and spec.memory.hugepages "
            "should not be requested together.",
            "field": "spec.memory.overcommitPercent",
        }
    ]
    del spec["memory"]["hugepages"]
    assert causes(obj("VirtualMachineInstancetype", spec)) == []


def test_the_schema_refuses_out_of_range_overcommit_and_missing_sizes() -> None:
    too_much = causes(
        obj(
            "VirtualMachineInstancetype",
            {"cpu": {"guest": 1}, "memory": {"guest": "1Gi", "overcommitPercent": 101}},
        )
    )
    assert [c["message"] for c in too_much] == [
        "spec.memory.overcommitPercent in body should be less than or equal to 100"
    ]
    assert (
        causes(obj("VirtualMachineInstancetype", {"cpu": {"guest": 1}}))[0]["message"]
        == "spec.memory in body is required"
    )


@pytest.mark.parametrize(
    ("cpu", "expected"),
    [
        (
            {"preferredCPUTopology": "diagonal"},
            ("spec.cpu.preferredCPUTopology", "unknown preferredCPUTopology diagonal"),
        ),
        (
            {"preferredCPUTopology": "spread", "spreadOptions": {"across": "Everywhere"}},
            ("spec.cpu.spreadOptions.across", "across Everywhere is not supported"),
        ),
        (
            {"preferredCPUTopology": "preferSpread", "spreadOptions": {"across": "CoresThreads", "ratio": 3}},
            (
                "spec.cpu.spreadOptions.ratio",
                "only a ratio of 2 (1 core 2 threads) is allowed when spreading vCPUs over cores and threads",
            ),
        ),
        ({"preferredCPUTopology": "spread", "spreadOptions": {"across": "CoresThreads"}}, None),
        ({"preferredCPUTopology": "spread", "spreadOptions": {"across": "SocketsCores", "ratio": 3}}, None),
    ],
)
def test_preference_topologies(cpu: dict[str, Any], expected: tuple[str, str] | None) -> None:
    found = causes(obj("VirtualMachinePreference", {"cpu": cpu}))
    assert found == (
        []
        if expected is None
        else [{"type": "FieldValueInvalid", "message": expected[1], "field": expected[0]}]
    )


def test_deprecated_topologies_are_accepted_with_a_warning() -> None:
    spec = VirtualMachinePreferenceSpec.from_dict({"cpu": {"preferredCPUTopology": "preferCores"}})
    assert deprecation_warnings(spec) == [
        "PreferredCPUTopology preferCores is deprecated for removal in a future release, "
        "please use cores instead"
    ]
    assert (
        deprecation_warnings(
            VirtualMachinePreferenceSpec.from_dict({"cpu": {"preferredCPUTopology": "cores"}})
        )
        == []
    )
