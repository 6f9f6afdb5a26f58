"""Property tests: whatever a client sends, admission answers with causes, never with a crash."""

from __future__ import annotations

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
from kubevirt_testing.fuzz_inputs import json_values, mutated

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
