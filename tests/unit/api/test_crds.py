"""The generated CRDs: current, structural, KubeVirt's names, and schemas that judge like KubeVirt's."""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kubevirt_api.cdi.crds import CDI_CRDS, cdi_crd_schema
from kubevirt_api.crd import CRDS, custom_resource_definition
from kubevirt_api.openapi import UnknownKindError, crd_schema

ROOT = Path(__file__).parents[3]
TESTDATA = ROOT / "tests" / "testdata"
VMI_CASES = TESTDATA / "conformance" / "vmi"
VM_CASES = TESTDATA / "api" / "vm"

JSON = dict[str, Any]


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("crds_generator", ROOT / "hack" / "generators" / "crds.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- structural schema rules (Kubernetes' apiextensions "structural schema" definition) ---------------
def structural_violations(node: JSON, path: str = "") -> list[str]:
    problems: list[str] = []
    if "$ref" in node or "allOf" in node or "oneOf" in node or "not" in node:
        problems.append(f"{path}: $ref/allOf/oneOf/not are not structural here")
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    if "anyOf" in node and not int_or_string:
        problems.append(f"{path}: anyOf outside int-or-string")
    if int_or_string:
        if "type" in node:
            problems.append(f"{path}: int-or-string with a type")
        if node.get("anyOf") not in (None, [{"type": "integer"}, {"type": "string"}]):
            problems.append(f"{path}: int-or-string anyOf must be integer|string")
    elif "type" not in node and not preserve:
        problems.append(f"{path}: no type")
    if "properties" in node and "additionalProperties" in node:
        problems.append(f"{path}: properties and additionalProperties together")
    if node.get("type") == "array" and "items" not in node:
        problems.append(f"{path}: array without items")
    if node.get("default", 0) is None:
        problems.append(f"{path}: null default")
    if node.get("x-kubernetes-list-type") == "map":
        item = node.get("items", {})
        for key in node.get("x-kubernetes-list-map-keys", []):
            key_schema = item.get("properties", {}).get(key)
            if key_schema is None:
                problems.append(f"{path}: list map key {key} not a property")
            elif key not in item.get("required", []) and "default" not in key_schema:
                problems.append(f"{path}: list map key {key} neither required nor defaulted")
    if node.get("x-kubernetes-list-type") == "set" and node.get("items", {}).get("type") not in (
        "string",
        "integer",
        "number",
        "boolean",
    ):
        problems.append(f"{path}: set of non-scalars")
    for name, prop in node.get("properties", {}).items():
        problems += structural_violations(prop, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        problems += structural_violations(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        problems += structural_violations(node["additionalProperties"], f"{path}{{}}")
    return problems


def as_json_schema(node: JSON) -> JSON:
    """OpenAPI → JSON Schema: ``nullable`` allows null, objects with properties refuse unknown fields."""
    node = copy.copy(node)
    if node.pop("nullable", False) and "type" in node:
        node["type"] = [node["type"], "null"]
    if "properties" in node:
        node["properties"] = {k: as_json_schema(v) for k, v in node["properties"].items()}
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            node[key] = as_json_schema(node[key])
    return node


@functools.cache
def validator(kind: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(as_json_schema(crd_schema(kind)))


def schema_rejected(validate_file: Path) -> bool:
    causes = load(validate_file)
    return bool(causes) and all(not c["type"] and not c["field"] for c in causes)


def cases(folder: Path, pattern: str) -> list[Path]:
    return sorted(p for p in folder.glob(pattern) if p.name.count(".") == 1)


VMI_INPUTS = cases(VMI_CASES / "valid", "*.json") + cases(VMI_CASES / "invalid", "*.json")
VM_INPUTS = cases(VM_CASES, "*.json")


def validate_file(path: Path) -> Path:
    return path.with_name(path.stem + ".validate.json")


# -- tests ----------------------------------------------------------------------------------------------
def test_generated_crd_files_are_current() -> None:
    files = load_generator().generate(ROOT)
    # KubeVirt's CRDs, which tools apply as a directory, and apart from them the cdi.kubevirt.io ones.
    assert {str(p) for p in files} == {
        *(f"manifests/generated/{facts.name}.yaml" for facts in CRDS.values()),
        *(f"manifests/cdi/{facts.name}.yaml" for facts in CDI_CRDS.values()),
    }
    for relative, content in files.items():
        assert (ROOT / relative).read_bytes() == content, f"{relative} is stale: run hack/generate"


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_schemas_are_structural(kind: str) -> None:
    assert structural_violations(crd_schema(kind)) == []


@pytest.mark.parametrize("kind", sorted(CDI_CRDS))
def test_cdi_schemas_are_structural(kind: str) -> None:
    assert structural_violations(cdi_crd_schema(kind)) == []


def test_structural_check_catches_violations() -> None:
    assert structural_violations({"properties": {"a": {"$ref": "#/x"}}, "type": "object"}) == [
        ".a: $ref/allOf/oneOf/not are not structural here",
        ".a: no type",
    ]
    assert structural_violations({"type": "array"}) == [": array without items"]


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_crd_file_matches_kubevirt_facts(kind: str) -> None:
    facts = CRDS[kind]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load((ROOT / "manifests" / "generated" / f"{facts.name}.yaml").read_text(), Loader=loader)
    assert crd == custom_resource_definition(kind)
    assert crd["spec"]["scope"] == ("Namespaced" if facts.namespaced else "Cluster")
    assert crd["spec"]["names"].get("categories", []) == list(facts.categories)
    stored = [v for v in crd["spec"]["versions"] if v["storage"]]
    assert len(stored) == 1
    assert stored[0]["served"]


def test_kubevirt_names_versions_and_subresources() -> None:
    def crd(kind: str) -> JSON:
        return custom_resource_definition(kind)

    short = {kind: crd(kind)["spec"]["names"].get("shortNames") for kind in CRDS}
    assert short == {
        "VirtualMachineInstance": ["vmi", "vmis"],
        "VirtualMachine": ["vm", "vms"],
        "VirtualMachineInstanceMigration": ["vmim", "vmims"],
        "VirtualMachineInstanceReplicaSet": ["vmirs", "vmirss"],
        "VirtualMachinePool": ["vmpool", "vmpools"],
        "KubeVirt": ["kv", "kvs"],
        "VirtualMachineInstancePreset": ["vmipreset", "vmipresets"],
        "VirtualMachineInstancetype": ["vminstancetype", "vminstancetypes", "vmf", "vmfs"],
        "VirtualMachineClusterInstancetype": [
            "vmclusterinstancetype",
            "vmclusterinstancetypes",
            "vmcf",
            "vmcfs",
        ],
        "VirtualMachinePreference": ["vmpref", "vmprefs", "vmp", "vmps"],
        "VirtualMachineClusterPreference": ["vmcp", "vmcps"],
        "VirtualMachineSnapshot": ["vmsnapshot", "vmsnapshots"],
        "VirtualMachineSnapshotContent": ["vmsnapshotcontent", "vmsnapshotcontents"],
        "VirtualMachineRestore": ["vmrestore", "vmrestores"],
        "VirtualMachineExport": ["vmexport", "vmexports"],
        "VirtualMachineClone": ["vmclone", "vmclones"],
        "MigrationPolicy": None,
    }
    presets = crd("VirtualMachineInstancePreset")["spec"]["versions"]
    assert [(v["name"], v["storage"], v["deprecated"]) for v in presets] == [
        ("v1", False, True),
        ("v1alpha3", True, True),
    ]
    assert all("subresources" not in v and "additionalPrinterColumns" not in v for v in presets)
    assert crd("VirtualMachinePool")["metadata"]["name"] == "virtualmachinepools.pool.kubevirt.io"
    assert [v["name"] for v in crd("VirtualMachinePool")["spec"]["versions"]] == ["v1alpha1"]
    vmi_versions = crd("VirtualMachineInstance")["spec"]["versions"]
    assert [(v["name"], v["storage"], v.get("deprecated", False)) for v in vmi_versions] == [
        ("v1", True, False),
        ("v1alpha3", False, True),
    ]
    assert all("subresources" not in v for v in vmi_versions)
    for kind in ("VirtualMachine", "VirtualMachineInstanceMigration", "KubeVirt"):
        assert crd(kind)["spec"]["versions"][0]["subresources"] == {"status": {}}
    for kind in ("VirtualMachineInstanceReplicaSet", "VirtualMachinePool"):
        assert crd(kind)["spec"]["versions"][0]["subresources"] == {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.labelSelector",
            },
        }
    assert crd("KubeVirt")["metadata"]["labels"] == {"operator.kubevirt.io": ""}
    assert crd("VirtualMachine")["metadata"]["labels"] == {"kubevirt.io": ""}
    columns = crd("VirtualMachineInstance")["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [(c["name"], c.get("priority", 0)) for c in columns] == [
        ("Age", 0),
        ("Phase", 0),
        ("IP", 0),
        ("NodeName", 0),
        ("Ready", 0),
        ("Live-Migratable", 1),
        ("Paused", 1),
    ]
    vmim_columns = crd("VirtualMachineInstanceMigration")["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [c["name"] for c in vmim_columns] == ["Phase", "VMI"]


@pytest.mark.parametrize(
    ("kind", "group", "columns"),
    [
        (
            "VirtualMachineSnapshot",
            "snapshot.kubevirt.io",
            ["SourceKind", "SourceName", "Phase", "ReadyToUse", "CreationTime", "Error"],
        ),
        ("VirtualMachineSnapshotContent", "snapshot.kubevirt.io", ["ReadyToUse", "CreationTime", "Error"]),
        (
            "VirtualMachineRestore",
            "snapshot.kubevirt.io",
            ["TargetKind", "TargetName", "Complete", "RestoreTime"],
        ),
        ("VirtualMachineExport", "export.kubevirt.io", ["SourceKind", "SourceName", "Phase"]),
        (
            "VirtualMachineClone",
            "clone.kubevirt.io",
            ["Phase", "SourceVirtualMachine", "TargetVirtualMachine"],
        ),
    ],
)
def test_snapshot_export_and_clone_crds_follow_kubevirt(kind: str, group: str, columns: list[str]) -> None:
    crd = custom_resource_definition(kind)
    assert crd["spec"]["group"] == group
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"]["categories"] == ["all"]
    assert crd["metadata"]["labels"] == {"kubevirt.io": ""}
    versions = crd["spec"]["versions"]
    # v1alpha1 still served with the same schema; v1beta1 stored.
    assert [(v["name"], v["served"], v["storage"]) for v in versions] == [
        ("v1alpha1", True, False),
        ("v1beta1", True, True),
    ]
    for version in versions:
        assert version["subresources"] == {"status": {}}
        assert [c["name"] for c in version["additionalPrinterColumns"]] == columns


def test_migration_policy_crd_is_cluster_wide_with_status() -> None:
    crd = custom_resource_definition("MigrationPolicy")
    assert crd["metadata"]["name"] == "migrationpolicies.migrations.kubevirt.io"
    assert crd["spec"]["scope"] == "Cluster"
    assert crd["spec"]["names"] == {
        "kind": "MigrationPolicy",
        "plural": "migrationpolicies",
        "singular": "migrationpolicy",
    }
    [version] = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    assert "additionalPrinterColumns" not in version
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["selectors"]
    assert spec["properties"]["selectors"]["properties"]["namespaceSelector"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }


def test_crd_set_is_the_one_kubevirt_installs() -> None:
    # The operator's own CRD plus the sixteen KubeVirt v1.6 installs for its components
    # (pkg/virt-operator/resource/generate/components/crds.go); the functional tests list each of them.
    assert sorted(facts.name for facts in CRDS.values()) == sorted(
        (
            "virtualmachines.kubevirt.io",
            "virtualmachineinstances.kubevirt.io",
            "virtualmachineinstancemigrations.kubevirt.io",
            "virtualmachineinstancereplicasets.kubevirt.io",
            "virtualmachineinstancepresets.kubevirt.io",
            "kubevirts.kubevirt.io",
            "virtualmachinepools.pool.kubevirt.io",
            "virtualmachinesnapshots.snapshot.kubevirt.io",
            "virtualmachinesnapshotcontents.snapshot.kubevirt.io",
            "virtualmachinerestores.snapshot.kubevirt.io",
            "virtualmachineexports.export.kubevirt.io",
            "virtualmachineclones.clone.kubevirt.io",
            "migrationpolicies.migrations.kubevirt.io",
            "virtualmachineinstancetypes.instancetype.kubevirt.io",
            "virtualmachineclusterinstancetypes.instancetype.kubevirt.io",
            "virtualmachinepreferences.instancetype.kubevirt.io",
            "virtualmachineclusterpreferences.instancetype.kubevirt.io",
        )
    )


@pytest.mark.parametrize(
    ("kind", "scope", "categories"),
    [
        ("VirtualMachineInstancetype", "Namespaced", ["all"]),
        ("VirtualMachineClusterInstancetype", "Cluster", None),
        ("VirtualMachinePreference", "Namespaced", ["all"]),
        ("VirtualMachineClusterPreference", "Cluster", None),
    ],
)
def test_instancetype_crds_follow_kubevirt(kind: str, scope: str, categories: list[str] | None) -> None:
    crd = custom_resource_definition(kind)
    assert crd["spec"]["group"] == "instancetype.kubevirt.io"
    assert crd["spec"]["scope"] == scope
    assert crd["spec"]["names"].get("categories") == categories
    versions = crd["spec"]["versions"]
    # Only v1beta1 is served; the alpha versions stay listed so old stored objects keep a schema.
    assert [(v["name"], v["served"], v["storage"]) for v in versions] == [
        ("v1alpha1", False, False),
        ("v1alpha2", False, False),
        ("v1beta1", True, True),
    ]
    assert all("subresources" not in v and "additionalPrinterColumns" not in v for v in versions)
    assert versions[0]["deprecationWarning"].startswith("instancetype.kubevirt.io/v1alpha1 ")


def test_instancetype_schema_marks_required_sizes_and_limits() -> None:
    spec = crd_schema("VirtualMachineInstancetype")["properties"]["spec"]
    assert spec["required"] == ["cpu", "memory"]
    assert spec["properties"]["cpu"]["required"] == ["guest"]
    overcommit = spec["properties"]["memory"]["properties"]["overcommitPercent"]
    assert (overcommit["minimum"], overcommit["maximum"]) == (0, 100)
    assert spec["properties"]["gpus"]["x-kubernetes-list-type"] == "atomic"
    requirements = crd_schema("VirtualMachineClusterPreference")["properties"]["spec"]["properties"][
        "requirements"
    ]
    assert requirements["properties"]["memory"]["required"] == ["guest"]


def test_schema_details_follow_kubevirt() -> None:
    vmi = crd_schema("VirtualMachineInstance")
    assert vmi["required"] == ["spec"]
    assert vmi["properties"]["metadata"] == {"type": "object"}
    spec = vmi["properties"]["spec"]
    assert spec["required"] == ["domain"]
    assert spec["properties"]["volumes"]["maxItems"] == 256
    memory = spec["properties"]["domain"]["properties"]["memory"]["properties"]["guest"]
    assert memory["x-kubernetes-int-or-string"] is True
    assert "type" not in memory
    assert spec["properties"]["domain"]["properties"]["clock"]["x-kubernetes-preserve-unknown-fields"] is True
    template = crd_schema("VirtualMachine")["properties"]["spec"]["properties"]["template"]
    assert template["properties"]["metadata"] == {
        "type": "object",
        "nullable": True,
        "x-kubernetes-preserve-unknown-fields": True,
    }
    status = crd_schema("VirtualMachine")["properties"]["status"]["properties"]
    assert status["printableStatus"] == {"type": "string", "default": "Stopped"}
    pool = crd_schema("VirtualMachinePool")["properties"]["spec"]["properties"]
    assert pool["maxUnavailable"]["x-kubernetes-int-or-string"] is True
    with pytest.raises(UnknownKindError):
        crd_schema("Pod")


@pytest.mark.parametrize("path", VMI_INPUTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_vmi_inputs_pass_the_schema_exactly_when_kubevirt_s_does(path: Path) -> None:
    errors = list(validator("VirtualMachineInstance").iter_errors(load(path)))
    rejected = schema_rejected(validate_file(path))
    assert bool(errors) == rejected, [e.message for e in errors]


@pytest.mark.parametrize("path", sorted(VMI_CASES.glob("valid/*.defaults*.json")), ids=lambda p: p.name)
def test_defaulted_vmis_pass_the_schema(path: Path) -> None:
    assert [e.message for e in validator("VirtualMachineInstance").iter_errors(load(path))] == []


@pytest.mark.parametrize("path", VM_INPUTS, ids=lambda p: p.stem)
def test_vm_inputs_pass_the_schema_exactly_when_kubevirt_s_does(path: Path) -> None:
    errors = list(validator("VirtualMachine").iter_errors(load(path)))
    rejected = schema_rejected(validate_file(path))
    assert bool(errors) == rejected, [e.message for e in errors]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("vmim-running", "VirtualMachineInstanceMigration"),
        ("vmirs", "VirtualMachineInstanceReplicaSet"),
        ("vmpool", "VirtualMachinePool"),
        ("kubevirt", "KubeVirt"),
        ("vm-status", "VirtualMachine"),
        ("vmipreset", "VirtualMachineInstancePreset"),
    ],
)
def test_realistic_objects_with_status_pass_the_schema(name: str, kind: str) -> None:
    data = load(TESTDATA / "api" / "objects" / f"{name}.json")
    assert [e.message for e in validator(kind).iter_errors(data)] == []


def test_realistic_objects_of_the_other_kinds_pass_and_wrong_types_fail() -> None:
    migration = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstanceMigration",
        "metadata": {"name": "m"},
        "spec": {"vmiName": "vmi", "addedNodeSelector": {"zone": "a"}},
    }
    assert list(validator("VirtualMachineInstanceMigration").iter_errors(migration)) == []
    # vmiName is required by the admitter, not by the schema; a wrong type is a schema error
    assert list(validator("VirtualMachineInstanceMigration").iter_errors({**migration, "spec": {}})) == []
    assert list(
        validator("VirtualMachineInstanceMigration").iter_errors({**migration, "spec": {"vmiName": 5}})
    )
    kubevirt = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
        "spec": {
            "certificateRotateStrategy": {},
            "configuration": {
                "developerConfiguration": {"featureGates": ["HostDisk"], "useEmulation": True},
                "vmRolloutStrategy": "LiveUpdate",
            },
            "customizeComponents": {},
            "imagePullPolicy": "IfNotPresent",
            "workloadUpdateStrategy": {},
        },
    }
    assert list(validator("KubeVirt").iter_errors(kubevirt)) == []
    bad_rollout = copy.deepcopy(kubevirt)
    bad_rollout["spec"]["configuration"]["vmRolloutStrategy"] = "Sometimes"
    assert [e.message for e in validator("KubeVirt").iter_errors(bad_rollout)] == [
        "'Sometimes' is not one of ['Stage', 'LiveUpdate']"
    ]
    template = load(VMI_CASES / "valid" / "001-minimal-containerdisk.json")
    replica_set = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstanceReplicaSet",
        "metadata": {"name": "rs"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": template["spec"]},
        },
    }
    assert list(validator("VirtualMachineInstanceReplicaSet").iter_errors(replica_set)) == []
    wrong = copy.deepcopy(replica_set)
    wrong["spec"]["replicas"] = "two"
    assert list(validator("VirtualMachineInstanceReplicaSet").iter_errors(wrong))
    pool = {
        "apiVersion": "pool.kubevirt.io/v1alpha1",
        "kind": "VirtualMachinePool",
        "metadata": {"name": "p"},
        "spec": {
            "replicas": 3,
            "maxUnavailable": "50%",
            "selector": {"matchLabels": {"app": "x"}},
            "virtualMachineTemplate": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"runStrategy": "Always", "template": {"spec": template["spec"]}},
            },
        },
    }
    assert list(validator("VirtualMachinePool").iter_errors(pool)) == []


def test_snapshot_export_and_clone_schemas_carry_kubevirts_list_markers() -> None:
    snapshot_status = crd_schema("VirtualMachineSnapshot")["properties"]["status"]["properties"]
    assert snapshot_status["indications"]["x-kubernetes-list-type"] == "set"
    assert snapshot_status["conditions"]["x-kubernetes-list-type"] == "atomic"
    link = crd_schema("VirtualMachineExport")["properties"]["status"]["properties"]["links"]["properties"][
        "internal"
    ]["properties"]
    assert (link["volumes"]["x-kubernetes-list-type"], link["volumes"]["x-kubernetes-list-map-keys"]) == (
        "map",
        ["name"],
    )
    assert link["volumes"]["items"]["properties"]["formats"]["x-kubernetes-list-map-keys"] == ["format"]
    assert link["manifests"]["x-kubernetes-list-map-keys"] == ["type"]
    clone_status = crd_schema("VirtualMachineClone")["properties"]["status"]["properties"]
    assert clone_status["targetName"] == {"type": "string", "nullable": True}
    restore = crd_schema("VirtualMachineRestore")["properties"]["spec"]
    assert restore["required"] == ["target", "virtualMachineSnapshotName"]
