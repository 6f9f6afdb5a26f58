"""Property tests: whatever a client sends, admission answers with causes, never with a crash."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubevirt.admission import defaulting, pipeline, vm, vmi_create
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.review import CREATE
from kubevirt.admission.schema import schema_check
from kubevirt.virt_config import ROLLOUT_STAGE, ClusterConfig

CONFORMANCE = Path(__file__).parents[2] / "testdata" / "conformance"
SEEDS = [
    json.loads(path.read_text())
    for folder in ("valid", "invalid")
    for path in sorted((CONFORMANCE / "vmi" / folder).glob("*.json"))
    if ".validate" not in path.name and ".defaults" not in path.name
]
VM_SEEDS = [
    json.loads(path.read_text())
    for path in sorted((CONFORMANCE / "vm").glob("vm*.json"))
    if ".validate" not in path.name
][:40]
CONFIGS = [ClusterConfig(), ClusterConfig.build(rollout_strategy=ROLLOUT_STAGE, feature_gates=["HostDisk"])]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "1Gi", "-1", "512Ki", "virtio", "sata", "ide", "Paused", "pod", "q35", "x" * 3000]),
    st.text(max_size=20),
)
# Values of the same JSON type as the one they replace, so most edits get past the schema check.
same_type = {
    bool: st.booleans(),
    int: st.integers(min_value=-(2**40), max_value=2**40),
    float: st.floats(allow_nan=False, allow_infinity=False),
    str: st.sampled_from(
        [
            "",
            "0",
            "1Gi",
            "-1",
            "3Mi",
            "100m",
            "virtio",
            "sata",
            "scsi",
            "usb",
            "ide",
            "pod",
            "Paused",
            "q35",
            "pc-i440fx",
            "host-model",
            "require",
            "nonsense",
            "02:00:00:00:00:00",
            "a..b",
            "/",
        ]
    ),
}
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def _containers(document: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every dict and list inside ``document``."""
    found = []
    if isinstance(document, dict):
        found.append(path)
        for key, value in document.items():
            found.extend(_containers(value, (*path, key)))
    elif isinstance(document, list):
        found.append(path)
        for index, value in enumerate(document):
            found.extend(_containers(value, (*path, index)))
    return found


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Any]) -> Any:
    """A seed object with a few random edits: values replaced, keys dropped or added, types changed."""
    document = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        target = _at(document, draw(st.sampled_from(_containers(document))))
        if isinstance(target, dict) and target:
            key = draw(st.sampled_from(sorted(target, key=str)))
            action = draw(st.sampled_from(["tweak", "tweak", "replace", "drop", "add"]))
            if action == "tweak" and type(target[key]) in same_type:
                target[key] = draw(same_type[type(target[key])])
            elif action == "replace":
                target[key] = draw(json_values)
            elif action == "drop":
                del target[key]
            else:
                target[draw(st.sampled_from([*sorted(target, key=str), "bootOrder", "bus", "pod", "x"]))] = (
                    draw(json_values)
                )
        elif isinstance(target, list) and target:
            index = draw(st.integers(min_value=0, max_value=len(target) - 1))
            if draw(st.booleans()):
                target.append(copy.deepcopy(target[index]))
            else:
                target[index] = draw(json_values)
        elif isinstance(target, list):
            target.append(draw(json_values))
    return document


def _only_causes(causes: list[StatusCause]) -> None:
    assert isinstance(causes, list)
    for cause in causes:
        assert isinstance(cause, StatusCause)
        json.dumps(cause.to_dict())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=mutated(SEEDS), config=st.sampled_from(CONFIGS))
def test_vmi_admission_never_crashes(document: Any, config: ClusterConfig) -> None:
    outcome = pipeline.validate_vmi_create(
        document, config, defaulter=defaulting.vmi_defaults, schema=schema_check
    )
    _only_causes(outcome.causes)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=mutated(SEEDS), config=st.sampled_from(CONFIGS))
def test_rules_alone_survive_objects_the_schema_would_refuse(document: Any, config: ClusterConfig) -> None:
    _only_causes(vmi_create.admit_vmi_create(document, config))
    _only_causes(vm.admit_vm({"spec": {"template": document}}, config, operation=CREATE))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=mutated(VM_SEEDS), config=st.sampled_from(CONFIGS))
def test_vm_admission_never_crashes(document: Any, config: ClusterConfig) -> None:
    outcome = pipeline.validate_vm(document, config, defaulter=defaulting.vm_defaults, schema=schema_check)
    _only_causes(outcome.causes)


@settings(max_examples=200, deadline=None)
@given(document=json_values)
def test_arbitrary_json_never_crashes(document: Any) -> None:
    _only_causes(vmi_create.admit_vmi_create(document if isinstance(document, dict) else {}, CONFIGS[0]))
    _only_causes(schema_check("VirtualMachineInstance", document if isinstance(document, dict) else {}))
