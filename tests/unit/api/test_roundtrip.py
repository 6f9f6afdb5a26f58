"""Every conformance object parses into the typed API and dumps back to the same JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubevirt_api import core
from kubevirt_api.base import ApiModel, ApiParseError
from kubevirt_api.core.v1 import (
    KubeVirt,
    VirtualMachine,
    VirtualMachineInstance,
    VirtualMachineInstanceMigration,
    VirtualMachineInstancePreset,
    VirtualMachineInstanceReplicaSet,
)
from kubevirt_api.pool.v1alpha1 import VirtualMachinePool

TESTDATA = Path(__file__).parents[2] / "testdata"
VMI_CASES = TESTDATA / "conformance" / "vmi"
VM_CASES = TESTDATA / "api" / "vm"
OBJECTS = TESTDATA / "api" / "objects"


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def schema_rejected(validate_file: Path) -> bool:
    """KubeVirt's OpenAPI schema (not an admitter) refused it: causes without type and field."""
    causes = load(validate_file)
    return bool(causes) and all(not c["type"] and not c["field"] for c in causes)


VMI_INPUTS = sorted(p for p in VMI_CASES.glob("*/*.json") if p.name.count(".") == 1)
VMI_DEFAULTED = sorted(VMI_CASES.glob("valid/*.defaults*.json"))
VM_INPUTS = sorted(p for p in VM_CASES.glob("*.json") if p.name.count(".") == 1)


def without_null_creation_timestamp(obj: dict[str, Any]) -> dict[str, Any]:
    # Go writes a zero metav1.Time as null; the models leave unset fields out.
    metadata = obj.get("metadata", {})
    if "creationTimestamp" in metadata and metadata["creationTimestamp"] is None:
        del metadata["creationTimestamp"]
    return obj


def accepted_by_schema(path: Path) -> bool:
    return not schema_rejected(path.with_name(path.name.replace(".json", ".validate.json")))


@pytest.mark.parametrize("path", [p for p in VMI_INPUTS if accepted_by_schema(p)], ids=lambda p: p.stem)
def test_vmi_input_round_trips(path: Path) -> None:
    data = load(path)
    assert VirtualMachineInstance.from_dict(data).to_dict() == data


@pytest.mark.parametrize("path", VMI_DEFAULTED, ids=lambda p: p.name)
def test_defaulted_vmi_round_trips(path: Path) -> None:
    data = without_null_creation_timestamp(load(path))
    assert VirtualMachineInstance.from_dict(data).to_dict() == data


@pytest.mark.parametrize("path", [p for p in VM_INPUTS if accepted_by_schema(p)], ids=lambda p: p.stem)
def test_vm_input_round_trips(path: Path) -> None:
    data = load(path)
    assert VirtualMachine.from_dict(data).to_dict() == data


def test_defaulted_vmi_exposes_python_names() -> None:
    vmi = VirtualMachineInstance.from_dict(load(VMI_CASES / "valid" / "069-kitchen-sink.defaults.json"))
    assert vmi.metadata is not None
    assert vmi.metadata.name == "everything"
    assert vmi.spec.domain.devices.disks is not None
    assert [d.name for d in vmi.spec.domain.devices.disks][:1] == ["root"]
    assert vmi.status is not None
    assert vmi.status.phase == "Pending"


def test_unknown_fields_are_dropped_like_go() -> None:
    data = load(VMI_CASES / "invalid" / "056-disk-unknown-field.json")
    disk = data["spec"]["domain"]["devices"]["disks"][0]
    assert "turbo" in disk
    dumped = VirtualMachineInstance.from_dict(data).to_dict()
    assert "turbo" not in dumped["spec"]["domain"]["devices"]["disks"][0]
    assert dumped["spec"]["domain"]["devices"]["disks"][0]["name"] == disk["name"]


def test_parse_error_names_the_json_field_path() -> None:
    data = load(VMI_CASES / "invalid" / "051-emptydisk-no-capacity.json")
    with pytest.raises(ApiParseError) as caught:
        VirtualMachineInstance.from_dict(data)
    assert [str(c) for c in caught.value.causes] == ["spec.volumes[1].emptyDisk.capacity: Field required"]


def test_parse_error_on_wrong_type_and_bad_quantity() -> None:
    data = load(VMI_CASES / "invalid" / "057-disks-wrong-type.json")
    with pytest.raises(ApiParseError, match=r"^spec\.domain\.devices\.disks: Input should be a valid list"):
        VirtualMachineInstance.from_dict(data)
    bad = {"spec": {"domain": {"devices": {}, "resources": {"requests": {"memory": "12XB"}}}}}
    with pytest.raises(
        ApiParseError, match=r"^spec\.domain\.resources\.requests\.memory: .*regular expression"
    ):
        VirtualMachineInstance.from_dict(bad)


def test_parse_errors_are_one_per_field_without_pydantic_prefixes() -> None:
    from kubevirt_api.pool.v1alpha1 import VirtualMachinePool

    pool = {
        "spec": {"selector": {}, "virtualMachineTemplate": {"spec": {"template": {}}}, "maxUnavailable": [1]}
    }
    with pytest.raises(ApiParseError) as caught:
        VirtualMachinePool.from_dict(pool)
    assert [c.path for c in caught.value.causes] == ["spec.maxUnavailable"]
    with pytest.raises(ApiParseError) as caught:
        VirtualMachineInstance.from_dict({"spec": {"domain": {"devices": {}, "memory": {"guest": "1x"}}}})
    assert str(caught.value).startswith(
        "spec.domain.memory.guest: quantities must match the regular expression"
    )
    with pytest.raises(ApiParseError, match=r"^Input should be a valid dictionary"):
        VirtualMachineInstance.from_dict([])  # type: ignore[arg-type]


def test_attribute_and_json_names_both_populate() -> None:
    by_alias = VirtualMachineInstance.from_dict(
        {"spec": {"domain": {"devices": {"interfaces": [{"name": "a", "macAddress": "02:00:00:00:00:01"}]}}}}
    )
    by_name = VirtualMachineInstance.from_dict(
        {"spec": {"domain": {"devices": {"interfaces": [{"name": "a", "mac_address": "02:00:00:00:00:01"}]}}}}
    )
    assert by_alias == by_name
    assert (
        by_name.to_dict()["spec"]["domain"]["devices"]["interfaces"][0]["macAddress"] == "02:00:00:00:00:01"
    )


def without_nulls(value: Any) -> Any:
    """Go writes zero times as ``null`` (conditions' ``lastProbeTime``); the models leave them out."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("vmim-running", VirtualMachineInstanceMigration),
        ("vmirs", VirtualMachineInstanceReplicaSet),
        ("vmpool", VirtualMachinePool),
        ("kubevirt", KubeVirt),
        ("vm-status", VirtualMachine),
        ("vmipreset", VirtualMachineInstancePreset),
    ],
)
def test_other_kinds_round_trip(name: str, model: type[ApiModel]) -> None:
    data = load(OBJECTS / f"{name}.json")
    assert model.from_dict(data).to_dict() == without_nulls(data)


SUBRESOURCE_BODIES = load(OBJECTS / "subresources.json")


@pytest.mark.parametrize("kind", sorted(SUBRESOURCE_BODIES))
def test_subresource_bodies_round_trip(kind: str) -> None:
    model: type[ApiModel] = getattr(core.v1, kind)
    data = SUBRESOURCE_BODIES[kind]
    assert model.from_dict(data).to_dict() == data


def test_typed_access_to_other_kinds() -> None:
    migration = VirtualMachineInstanceMigration.from_dict(load(OBJECTS / "vmim-running.json"))
    assert migration.status is not None
    assert migration.status.migration_state is not None
    assert migration.status.migration_state.migration_uid == "5d0b6a6c-8a11-4a8b-9a0a-0a4b1b3bd6f1"
    assert migration.status.migration_state.target_direct_migration_node_ports == {"38113": 49152, "44211": 0}
    kubevirt = KubeVirt.from_dict(load(OBJECTS / "kubevirt.json"))
    configuration = kubevirt.spec.configuration
    assert configuration is not None
    assert configuration.migrations is not None
    assert str(configuration.migrations.bandwidth_per_migration) == "64Mi"
    assert configuration.developer_configuration is not None
    assert configuration.developer_configuration.feature_gates == ["HostDisk", "Snapshot"]
    pool = VirtualMachinePool.from_dict(load(OBJECTS / "vmpool.json"))
    assert pool.spec.max_unavailable == "25%"
    assert pool.spec.virtual_machine_template.spec.run_strategy == "Always"


@pytest.mark.parametrize(
    ("cpu", "message"),
    [
        ({"cores": "2"}, "spec.domain.cpu.cores: Input should be a valid integer"),
        ({"cores": 2.0}, "spec.domain.cpu.cores: Input should be a valid integer"),
        (
            {"dedicatedCpuPlacement": "true"},
            "spec.domain.cpu.dedicatedCpuPlacement: Input should be a valid boolean",
        ),
        ({"model": 5}, "spec.domain.cpu.model: Input should be a valid string"),
    ],
)
def test_json_types_are_checked_like_go_decodes_them(cpu: dict[str, Any], message: str) -> None:
    with pytest.raises(ApiParseError) as caught:
        VirtualMachineInstance.from_dict({"spec": {"domain": {"devices": {}, "cpu": cpu}}})
    assert str(caught.value) == message
